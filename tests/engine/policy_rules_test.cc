// The two rules beyond the per-class tables (proxy/policy/): the uncovered-driver rule, which says
// whether a sandbox may start in enforce mode and which denials are enforced, and the dma-buf
// provenance rule, which judges a call's dma-bufs after the policy's verdict.
#include <gtest/gtest.h>

#include "base/error.h"
#include "proxy/policy/dmabuf_provenance.h"
#include "proxy/policy/enforcement.h"

namespace gdrproxy::proxy {
namespace {

NvidiaDriverFacts unknown_driver() {
  NvidiaDriverFacts f;
  f.loaded = true;
  f.known = false;
  f.has_nodes = true;
  f.version = "610.57.04";
  f.tables = "595.45.04";
  return f;
}

TEST(Enforcement, AnUncoveredDriverRefusesEnforceModeAndSaysHowToGoOn) {
  std::string note;
  try {
    Enforcement::decide(Mode::kEnforce, unknown_driver(), false, note);
    FAIL() << "enforce mode started with a driver no tables judge";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "NVIDIA driver 610.57.04 is of a branch this build's ABI tables do not hold (they "
              "hold 535, 550, 570, 575, 580, 590, 595, newest 595.45.04): refusing to enforce a "
              "policy on calls it cannot name; name the release whose tables to judge it with "
              "(--nvidia-abi-as RELEASE; \"nvidia_abi_as\" in the agent's config and "
              "runtime.json), or pass --allow-unknown-nvidia-driver to run NVIDIA calls "
              "trace-only");
  }
  EXPECT_TRUE(note.empty());
}

TEST(Enforcement, TablesChosenForAnotherReleaseAreEnforcedWithTheirNotice) {
  NvidiaDriverFacts f = unknown_driver();
  f.known = true;
  f.version = "580.178.04";
  f.notice = "NVIDIA driver 580.178.04 is not in this build's tables: enforcing with ...";
  std::string note;
  const Enforcement e = Enforcement::decide(Mode::kEnforce, f, false, note);
  EXPECT_TRUE(e.enforced(DeviceClass::kNvidiaFrontend));
  EXPECT_EQ(note, f.notice);
}

TEST(Enforcement, AllowedAnUnknownDriversCallsAreTraceOnlyAndTheRestEnforced) {
  std::string note;
  const Enforcement e = Enforcement::decide(Mode::kEnforce, unknown_driver(), true, note);
  EXPECT_FALSE(e.nvidia_enforced());
  EXPECT_FALSE(e.enforced(DeviceClass::kNvidiaFrontend));
  EXPECT_FALSE(e.enforced(DeviceClass::kNvidiaUvm));
  EXPECT_TRUE(e.enforced(DeviceClass::kUverbs));
  EXPECT_TRUE(e.enforced(DeviceClass::kRdmaCm));
  EXPECT_STREQ(e.why_not(), "driver not in the ABI tables");
  EXPECT_EQ(note,
            "NVIDIA driver 610.57.04 is not in this build's ABI tables: NVIDIA calls are traced "
            "with 595.45.04 names and never denied (trace-only)");
  // Trace mode needs no permission, and says the same.
  note.clear();
  const Enforcement t = Enforcement::decide(Mode::kTrace, unknown_driver(), false, note);
  EXPECT_FALSE(t.enforced(DeviceClass::kUverbs));
  EXPECT_STREQ(t.why_not(), "trace mode");
  EXPECT_FALSE(note.empty());
}

TEST(Enforcement, AKnownDriverNoDriverAndNoNodesAreEnforced) {
  for (int which = 0; which < 3; ++which) {
    NvidiaDriverFacts f = unknown_driver();
    if (which == 0) f.known = true;
    if (which == 1) f.loaded = false;  // whatever answers on the nodes is not NVIDIA's
    if (which == 2) f.has_nodes = false;
    std::string note;
    const Enforcement e = Enforcement::decide(Mode::kEnforce, f, false, note);
    EXPECT_TRUE(e.enforced(DeviceClass::kNvidiaFrontend)) << which;
    EXPECT_TRUE(note.empty()) << which;
  }
}

TEST(DmabufProvenance, TheSecondDmabufIsAskedOnlyIfTheFirstPasses) {
  const std::vector<std::string> exporters{"nv_dmabuf"};
  PolicyKeys keys;
  keys.dmabuf_fd = 5;
  keys.dmabuf_fd2 = 6;
  std::vector<int> asked;
  auto check = [&](bool pass) {
    return [&, pass](int fd) {
      asked.push_back(fd);
      DmabufVerdict v;
      v.allowed = pass || fd == 5;
      v.reason = "fd " + std::to_string(fd);
      return v;
    };
  };
  auto v = dmabuf_provenance(keys, exporters, check(false));
  ASSERT_TRUE(v);
  EXPECT_FALSE(v->allowed);
  EXPECT_EQ(v->reason, "fd 6");
  EXPECT_EQ(asked, (std::vector<int>{5, 6}));
  asked.clear();
  auto fails_first = [&](int fd) {
    asked.push_back(fd);
    return DmabufVerdict{false, "", "fd " + std::to_string(fd)};
  };
  v = dmabuf_provenance(keys, exporters, fails_first);
  EXPECT_EQ(v->reason, "fd 5");
  EXPECT_EQ(asked, std::vector<int>{5});
  // No dma-buf, or no exporter to check against: nothing asked.
  asked.clear();
  EXPECT_FALSE(dmabuf_provenance(PolicyKeys{}, exporters, fails_first));
  EXPECT_FALSE(dmabuf_provenance(keys, {}, fails_first));
  EXPECT_TRUE(asked.empty());
}

TEST(DmabufProvenance, AFailedDmabufDeniesAnAllowedCallWithTheClassErrno) {
  const Policy policy = Policy::builtin_default();
  DecodedCall call;
  Verdict v;  // allowed
  apply_dmabuf_provenance(policy,
                          DmabufVerdict{false, "udmabuf",
                                        "dma-buf fd 4 was exported by "
                                        "'udmabuf', not a granted GPU"},
                          v, call, false);
  EXPECT_EQ(v.action, Action::kDeny);
  EXPECT_EQ(v.err, EPERM);
  EXPECT_TRUE(v.log);
  EXPECT_EQ(v.reason,
            "uverbs dma-buf provenance: dma-buf fd 4 was exported by 'udmabuf', not a granted GPU");
  // A passed one is named in a rendered call; a denied call stays as the policy said.
  Verdict ok;
  apply_dmabuf_provenance(policy, DmabufVerdict{true, "nv_dmabuf", "dma-buf exported by nv_dmabuf"},
                          ok, call, true);
  EXPECT_EQ(ok.action, Action::kAllow);
  ASSERT_EQ(call.args.size(), 1u);
  EXPECT_EQ(call.args[0].value, "dma-buf exported by nv_dmabuf");
  Verdict denied{Action::kDeny, EINVAL, true, "malformed"};
  apply_dmabuf_provenance(policy, DmabufVerdict{false, "", "x"}, denied, call, true);
  EXPECT_EQ(denied.err, EINVAL);
  EXPECT_EQ(denied.reason, "malformed");
}

}  // namespace
}  // namespace gdrproxy::proxy
