// Policy matching: names resolved at load, first match wins, errno and logging per rule,
// malformed input denied, unknown calls handled per class, and load errors that name the fault.
#include <gtest/gtest.h>

#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <initializer_list>

#include <cerrno>
#include <nlohmann/json.hpp>

#include "proxy/abi/uverbs_abi.h"
#include "proxy/abi/uverbs_providers.h"
#include "proxy/decode/uverbs_decoder.h"
#include "proxy/policy/policy.h"
#include "tests/proxy/verbs_buffer.h"

namespace gdrproxy::proxy {
namespace {

using nlohmann::json;

DecodedCall write_call(uint32_t cmd, const char* name) {
  DecodedCall c;
  c.device_class = DeviceClass::kUverbs;
  c.cmd = 0xc0181b01;
  c.name = std::string("INVOKE_WRITE(") + name + ")";
  c.keys.uverbs_object = UVERBS_OBJECT_DEVICE;
  c.keys.uverbs_method = UVERBS_METHOD_INVOKE_WRITE;
  c.keys.uverbs_write_cmd = cmd;
  return c;
}

DecodedCall method_call(uint16_t obj, uint16_t method, std::string name) {
  DecodedCall c;
  c.device_class = DeviceClass::kUverbs;
  c.cmd = 0xc0181b01;
  c.name = std::move(name);
  c.keys.uverbs_object = obj;
  c.keys.uverbs_method = method;
  return c;
}

Policy make(const char* text) {
  return Policy::from_json(json::parse(text), "test");
}

TEST(Policy, BuiltinDefaultAllowsKnownCallsAndDeniesMalformed) {
  Policy p = Policy::builtin_default();
  EXPECT_EQ(p.evaluate(write_call(IB_USER_VERBS_CMD_REG_MR, "REG_MR")).action, Action::kAllow);
  DecodedCall bad = write_call(IB_USER_VERBS_CMD_REG_MR, "REG_MR");
  bad.malformed = "header length 48 disagrees";
  Verdict v = p.evaluate(bad);
  EXPECT_EQ(v.action, Action::kDeny);
  EXPECT_EQ(v.err, EINVAL);
  EXPECT_NE(v.reason.find("malformed"), std::string::npos);
}

TEST(Policy, WriteCommandByNameDeniesOnlyThatCommand) {
  Policy p = make(
      R"({"classes":{"uverbs":{"rules":[{"action":"deny","write_cmd":"REG_MR","errno":"EACCES"}]}}})");
  Verdict v = p.evaluate(write_call(IB_USER_VERBS_CMD_REG_MR, "REG_MR"));
  EXPECT_EQ(v.action, Action::kDeny);
  EXPECT_EQ(v.err, EACCES);
  EXPECT_NE(v.reason.find("rule #0"), std::string::npos);
  EXPECT_EQ(p.evaluate(write_call(IB_USER_VERBS_CMD_ALLOC_PD, "ALLOC_PD")).action, Action::kAllow);
}

TEST(Policy, TheFastPathStillExplainsEveryDenial) {
  // explain_allow = false (enforce without a trace): an allow carries no reason, a denial keeps
  // the same reason as with it, and the verdicts do not change.
  Policy p = make(
      R"({"classes":{"uverbs":{"rules":[{"action":"deny","write_cmd":"REG_MR","errno":"EACCES"}]}}})");
  const DecodedCall reg = write_call(IB_USER_VERBS_CMD_REG_MR, "REG_MR");
  const DecodedCall pd = write_call(IB_USER_VERBS_CMD_ALLOC_PD, "ALLOC_PD");
  DecodedCall bad = pd;
  bad.malformed = "header unreadable";
  for (const DecodedCall* c : std::initializer_list<const DecodedCall*>{&reg, &pd, &bad}) {
    const Verdict full = p.evaluate(*c), fast = p.evaluate(*c, false);
    EXPECT_EQ(full.action, fast.action);
    EXPECT_EQ(full.err, fast.err);
    EXPECT_EQ(full.log, fast.log);
    if (full.action == Action::kAllow) {
      EXPECT_FALSE(full.reason.empty());
      EXPECT_TRUE(fast.reason.empty());
    } else {
      EXPECT_EQ(full.reason, fast.reason);
    }
  }
}

TEST(Policy, ObjectMethodPairsAndFirstMatchWins) {
  Policy p = make(R"({"classes":{"uverbs":{"errno":"EPERM","rules":[
      {"action":"allow","object":"MR","method":"REG_DMABUF_MR"},
      {"action":"deny","object":"MR"}]}}})");
  EXPECT_EQ(
      p.evaluate(method_call(UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR, "MR.REG_DMABUF_MR"))
          .action,
      Action::kAllow);
  Verdict v = p.evaluate(method_call(UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR, "MR.QUERY_MR"));
  EXPECT_EQ(v.action, Action::kDeny);
  EXPECT_EQ(v.err, EPERM);
  EXPECT_EQ(
      p.evaluate(method_call(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, "CQ.CREATE_CQ")).action,
      Action::kAllow);
}

TEST(Policy, CallGlobMatchesDecodedNames) {
  Policy p = make(R"({"classes":{"uverbs":{"rules":[{"action":"deny","call":"QP.*"}]}}})");
  EXPECT_EQ(
      p.evaluate(method_call(UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE, "QP.CREATE_QP")).action,
      Action::kDeny);
  EXPECT_EQ(
      p.evaluate(method_call(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, "CQ.CREATE_CQ")).action,
      Action::kAllow);
}

TEST(Policy, DefaultDenyAndUnknownCallsPerClass) {
  Policy p = make(R"({"classes":{"uverbs":{"default":"deny","unknown":"deny","errno":"ENODEV",
      "rules":[{"action":"allow","write_cmd":"QUERY_DEVICE"}]}}})");
  EXPECT_EQ(p.evaluate(write_call(IB_USER_VERBS_CMD_QUERY_DEVICE, "QUERY_DEVICE")).action,
            Action::kAllow);
  Verdict v = p.evaluate(write_call(IB_USER_VERBS_CMD_ALLOC_PD, "ALLOC_PD"));
  EXPECT_EQ(v.action, Action::kDeny);
  EXPECT_EQ(v.err, ENODEV);
  Verdict u = p.evaluate(method_call(UVERBS_OBJECT_PD, 77, "PD.METHOD_0x4d"));
  EXPECT_EQ(u.action, Action::kDeny);
  EXPECT_NE(u.reason.find("unknown"), std::string::npos);
  Policy lenient = make(R"({"classes":{"uverbs":{"default":"deny","unknown":"allow"}}})");
  EXPECT_EQ(lenient.evaluate(method_call(UVERBS_OBJECT_PD, 77, "PD.METHOD_0x4d")).action,
            Action::kAllow);
}

TEST(Policy, ClassesDoNotLeakIntoEachOther) {
  Policy p = make(R"({"classes":{"nvidia":{"default":"deny"}}})");
  EXPECT_EQ(p.evaluate(write_call(IB_USER_VERBS_CMD_REG_MR, "REG_MR")).action, Action::kAllow);
  DecodedCall nv;
  nv.device_class = DeviceClass::kNvidiaFrontend;
  nv.keys.nv_escape = 0x2b;
  nv.name = "RM_ALLOC";
  EXPECT_EQ(p.evaluate(nv).action, Action::kDeny);
}

TEST(Policy, NvidiaEscapeByName) {
  Policy p = make(R"({"classes":{"nvidia":{"rules":[{"action":"deny","escape":"RM_ALLOC"}]}}})");
  DecodedCall nv;
  nv.device_class = DeviceClass::kNvidiaFrontend;
  nv.keys.nv_escape = 0x2b;
  nv.keys.nv_named = true;  // as the decoder marks an escape the session's tables name
  EXPECT_EQ(p.evaluate(nv).action, Action::kDeny);
  nv.keys.nv_escape = 0x2a;
  EXPECT_EQ(p.evaluate(nv).action, Action::kAllow);
  // One the session's tables do not name is unknown, whatever its number.
  nv.keys.nv_named = false;
  EXPECT_EQ(p.evaluate(nv).action, Action::kDeny);
}

TEST(Policy, LoadErrorsNameTheField) {
  auto expect_error = [](const char* text, const char* needle) {
    try {
      make(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_error(R"({"classes":{"uverbs":{"rules":[{"action":"deny","write_cmd":"REG_MRR"}]}}})",
               "write_cmd");
  expect_error(R"({"classes":{"uverbs":{"rules":[{"action":"maybe"}]}}})", "action");
  expect_error(R"({"classes":{"infiniband":{}}})", "unknown device class");
  expect_error(R"({"classes":{"uverbs":{"rules":[{"action":"deny","method":"REG_MR"}]}}})",
               "needs \"object\"");
  expect_error(R"({"classes":{"uverbs":{"errno":"EWHATEVER"}}})", "errno");
  // A kernel-internal code is no result for a call, by number or by name.
  expect_error(R"({"open_errno":512})", "open_errno: 512 is the kernel-internal ERESTARTSYS");
  expect_error(R"({"open_errno":"ERESTARTSYS"})", "unknown errno name \"ERESTARTSYS\"");
  expect_error(R"({"classes":{"uverbs":{"rules":[{"action":"deny","frobnicate":1}]}}})",
               "unknown rule field");
  expect_error(R"({"version":2})", "version");
  // Wrong types name the field and what was expected (never a JSON library type error).
  expect_error(R"({"classes":{"uverbs":{"log":"yes"}}})",
               "classes.uverbs.log: expected true or false, got string \"yes\"");
  expect_error(R"({"grants":"uverbs0"})", "grants: expected a list of strings");
  expect_error(R"({"classes":{"uverbs":{"rules":{}}}})", "classes.uverbs.rules: expected a list");
  expect_error(R"({"mode":"audit"})", "mode: expected \"trace\" or \"enforce\"");
  // Unknown keys are refused: a misspelt setting is never silently ignored.
  expect_error(R"({"open_erno":"EPERM"})", "open_erno: unknown field");
  expect_error(R"({"classes":{"uverbs":{"defualt":"deny"}}})", "classes.uverbs.defualt: unknown");
}

TEST(Policy, AnOperationMatchesEveryEncodingOfTheVerb) {
  auto p = make(R"({"classes":{"uverbs":{"rules":[{"action":"deny","op":"CREATE_CQ"}]}}})");
  // As INVOKE_WRITE, as a raw write() (decode_uverbs_write sets only the command), as a method.
  EXPECT_EQ(p.evaluate(write_call(IB_USER_VERBS_CMD_CREATE_CQ, "CREATE_CQ")).action, Action::kDeny);
  DecodedCall raw;
  raw.device_class = DeviceClass::kUverbs;
  raw.name = "WRITE(CREATE_CQ)";
  raw.keys.uverbs_write_cmd = IB_USER_VERBS_CMD_CREATE_CQ;
  EXPECT_EQ(p.evaluate(raw).action, Action::kDeny);
  // The default policy allows a known command sent as write() (rxe rings doorbells that way) and
  // denies an unknown one.
  const Policy d = Policy::builtin_default();
  DecodedCall post = raw;
  post.name = "WRITE(POST_SEND)";
  post.keys.uverbs_write_cmd = IB_USER_VERBS_CMD_POST_SEND;
  EXPECT_EQ(d.evaluate(post).action, Action::kAllow) << d.evaluate(post).reason;
  post.keys.uverbs_write_cmd = 0x7e;
  EXPECT_EQ(d.evaluate(post).action, Action::kDeny);
  EXPECT_EQ(
      p.evaluate(method_call(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, "CQ.CREATE_CQ")).action,
      Action::kDeny);
  EXPECT_EQ(p.evaluate(write_call(IB_USER_VERBS_CMD_ALLOC_PD, "ALLOC_PD")).action, Action::kAllow);
  EXPECT_TRUE(p.polices_uverbs_write_commands());
  EXPECT_THROW(make(R"({"classes":{"uverbs":{"rules":[{"action":"deny","op":"FROB"}]}}})"),
               std::runtime_error);
}

TEST(Policy, UverbsDenialErrnosThatMakeLibibverbsFallBackAreRefused) {
  // ENOTTY/EPROTONOSUPPORT on an ioctl make libibverbs retry the verb through write().
  for (const char* text :
       {R"({"classes":{"uverbs":{"errno":"ENOTTY"}}})",
        R"({"classes":{"uverbs":{"rules":[{"action":"deny","op":"REG_MR","errno":"ENOTTY"}]}}})",
        R"({"classes":{"uverbs":{"errno":93}}})"}) {
    try {
      make(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("retry the verb through write()"), std::string::npos)
          << e.what();
    }
  }
  EXPECT_NO_THROW(make(R"({"classes":{"nvidia":{"errno":"ENOTTY"}}})"));
}

TEST(Policy, NumbersWiderThanTheirFieldAreRefusedNotTruncated) {
  // 298 truncated to 8 bits is 42, RM_CONTROL: a rule the operator never wrote.
  EXPECT_THROW(make(R"({"classes":{"nvidia":{"rules":[{"action":"allow","escape":298}]}}})"),
               std::runtime_error);
  EXPECT_THROW(
      make(R"({"classes":{"uverbs":{"rules":[{"action":"deny","ioctl":"0x1c0181b01"}]}}})"),
      std::runtime_error);
  EXPECT_NO_THROW(make(R"({"classes":{"nvidia":{"rules":[{"action":"deny","escape":42}]}}})"));
}

TEST(Policy, GlobsWithManyStarsMatchInLinearTime) {
  // A recursive matcher takes ~10^13 steps here; the supervisor would hang on the first call.
  auto p = make(
      R"({"classes":{"uverbs":{"rules":[{"action":"deny","call":"****************************Z"}]}}})");
  DecodedCall c = method_call(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, "CQ.CREATE_CQ_XXXXXXXXX");
  EXPECT_EQ(p.evaluate(c).action, Action::kAllow);
  c.name += "Z";
  EXPECT_EQ(p.evaluate(c).action, Action::kDeny);
  auto q = make(R"({"classes":{"uverbs":{"rules":[{"action":"deny","call":"*.CREATE_*"}]}}})");
  EXPECT_EQ(
      q.evaluate(method_call(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, "CQ.CREATE_CQ")).action,
      Action::kDeny);
  EXPECT_EQ(q.evaluate(method_call(UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE, "CQ.DESTROY")).action,
            Action::kAllow);
}

TEST(Policy, ErrnoMustMakeADeniedCallFail) {
  // 0 would turn a denial into a success that never ran; the kernel's range is 1..4095.
  for (const char* bad : {"0", "-1", "4096", "100000", "1.5", "true"}) {
    const std::string text = std::string(R"({"classes":{"uverbs":{"errno":)") + bad + "}}}";
    try {
      make(text.c_str());
      ADD_FAILURE() << "accepted errno " << bad;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("classes.uverbs.errno: "), std::string::npos)
          << e.what();
    }
  }
  EXPECT_THROW(make(R"({"open_errno":0})"), std::runtime_error);
  EXPECT_EQ(make(R"({"open_errno":19})").open_errno(), 19);
  EXPECT_EQ(make(R"({"open_errno":"ENODEV"})").open_errno(), ENODEV);
  // Any name glibc knows, not only a short list.
  EXPECT_EQ(make(R"({"open_errno":"EHWPOISON"})").open_errno(), EHWPOISON);
  EXPECT_EQ(make(R"({"open_errno":"ENODATA"})").open_errno(), ENODATA);
}

TEST(Policy, AnAllowlistIsNotAPolicyAndTheErrorSaysSo) {
  const std::string file = std::string(GDRPROXY_SOURCE_DIR) + "/configs/allowlists/nvidia-580.json";
  try {
    Policy::load_file(file);
    ADD_FAILURE() << "an allowlist loaded as a policy";
  } catch (const std::runtime_error& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("policy " + file + ": "), std::string::npos) << what;  // the file
    EXPECT_NE(what.find("unknown field"), std::string::npos) << what;          // the field
    EXPECT_NE(what.find("NVIDIA allowlist"), std::string::npos) << what;       // what it is
  }
}

// A driver-namespace call as the decoder makes it from a device of `provider`.
DecodedCall provider_call(uint32_t provider, uint16_t obj, uint16_t method) {
  BufferMemory mem;
  testing::VerbsBuffer{obj, method}.map_into(mem);
  return decode_uverbs_ioctl(uverbs::kVerbsIoctl, testing::kHdrAddr, mem, DecodeDepth::kPolicy,
                             provider);
}

TEST(Policy, BuiltinDefaultAllowsWhatEachProvidersLibraryIssuesAndNothingElse) {
  Policy p = Policy::builtin_default();
  auto action = [&](uint32_t provider, uint16_t obj, uint16_t method) {
    return p.evaluate(provider_call(provider, obj, method)).action;
  };
  // Every method a provider's rdma-core library issues is allowed on that provider's devices.
  for (const auto& prov : uverbs::all_providers())
    for (const auto& m : prov.methods)
      EXPECT_EQ(action(prov.driver_id, m.object, m.method),
                m.issued_by_library ? Action::kAllow : Action::kDeny)
          << prov.name << " " << m.name;
  // EFA: its MR query (libefa's efadv_query_mr).
  EXPECT_EQ(action(RDMA_DRIVER_EFA, UVERBS_OBJECT_MR, 0x1000), Action::kAllow);
  // irdma's library has no driver-namespace method: what it issues is core verbs with driver
  // data (CQ.CREATE_CQ, INVOKE_WRITE), allowed; a driver-namespace id on its device is not.
  EXPECT_EQ(action(RDMA_DRIVER_IRDMA, UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE), Action::kAllow);
  Verdict v = p.evaluate(provider_call(RDMA_DRIVER_IRDMA, UVERBS_OBJECT_MR, 0x1000));
  EXPECT_EQ(v.action, Action::kDeny);
  EXPECT_NE(v.reason.find("not a method of the irdma provider"), std::string::npos) << v.reason;
  // The same ids are EFA's MR query and nothing of mlx5's.
  EXPECT_EQ(action(RDMA_DRIVER_MLX5, UVERBS_OBJECT_MR, 0x1000), Action::kDeny);
  // mlx5's DEVX_OTHER and bnxt_re's ALLOC_PAGE share their ids; both issued by their libraries.
  EXPECT_EQ(action(RDMA_DRIVER_MLX5, 0x1000, 0x1000), Action::kAllow);
  EXPECT_EQ(action(RDMA_DRIVER_BNXT_RE, 0x1000, 0x1000), Action::kAllow);
  // Named by the header, never issued by libbnxt_re: denied, and the line says why.
  v = p.evaluate(provider_call(RDMA_DRIVER_BNXT_RE, 0x1000, 0x1001));
  EXPECT_EQ(v.action, Action::kDeny);
  EXPECT_NE(v.reason.find("bnxt_re method rdma-core's provider never issues"), std::string::npos)
      << v.reason;
  // A device whose provider is not known: no driver-namespace call is allowed.
  v = p.evaluate(provider_call(uverbs::kProviderUnknown, 0x1000, 0x1000));
  EXPECT_EQ(v.action, Action::kDeny);
  EXPECT_NE(v.reason.find("unknown provider"), std::string::npos) << v.reason;
  EXPECT_EQ(action(uverbs::kProviderUnknown, UVERBS_OBJECT_MR, 0x1000), Action::kDeny);
  // An id no provider declares.
  EXPECT_EQ(action(RDMA_DRIVER_MLX5, 0x1000, 0x1042), Action::kDeny);
  EXPECT_EQ(action(RDMA_DRIVER_EFA, UVERBS_OBJECT_MR, 0x1001), Action::kDeny);
}

TEST(Policy, TheCallersDriverIdDoesNotChooseTheProvider) {
  // On an EFA device, a header claiming mlx5 (RDMA_DRIVER_MLX5 in its driver_id) does not make
  // 0x1000/0x1000 mlx5's DEVX_OTHER: the device's provider decides, and EFA has no such method.
  BufferMemory mem;
  testing::VerbsBuffer b{0x1000, 0x1000};
  b.driver_id = RDMA_DRIVER_MLX5;
  b.map_into(mem);
  const DecodedCall c = decode_uverbs_ioctl(uverbs::kVerbsIoctl, testing::kHdrAddr, mem,
                                            DecodeDepth::kFull, RDMA_DRIVER_EFA);
  EXPECT_EQ(c.name, "DRIVER_OBJ_0x1000.DRIVER_METHOD_0x1000");
  EXPECT_EQ(Policy::builtin_default().evaluate(c).action, Action::kDeny);
}

TEST(Policy, RulesForAProvidersCallsMatchThatProvidersDevicesOnly) {
  // Named from mlx5's table: the rule is for mlx5 devices; bnxt_re's ALLOC_PAGE has the same ids.
  Policy p = make(R"({"classes":{"uverbs":{"rules":[
      {"action":"deny","object":"MLX5_DEVX","method":"MLX5_DEVX_OTHER","errno":"EACCES"}]}}})");
  Verdict v = p.evaluate(provider_call(RDMA_DRIVER_MLX5, 0x1000, 0x1000));
  EXPECT_EQ(v.action, Action::kDeny);
  EXPECT_EQ(v.err, EACCES);
  EXPECT_EQ(p.evaluate(provider_call(RDMA_DRIVER_BNXT_RE, 0x1000, 0x1000)).action, Action::kAllow);
  // A provider method on a core object, by name: EFA's only.
  p = make(R"({"classes":{"uverbs":{"rules":[
      {"action":"deny","object":"MR","method":"EFA_MR_QUERY"}]}}})");
  EXPECT_EQ(p.evaluate(provider_call(RDMA_DRIVER_EFA, UVERBS_OBJECT_MR, 0x1000)).action,
            Action::kDeny);
  // By number with "provider": an operator may allow what the library never issues.
  p = make(R"({"classes":{"uverbs":{"rules":[
      {"action":"allow","provider":"bnxt_re","object":"0x1000","method":"0x1001"}]}}})");
  EXPECT_EQ(p.evaluate(provider_call(RDMA_DRIVER_BNXT_RE, 0x1000, 0x1001)).action, Action::kAllow);
  EXPECT_EQ(p.evaluate(provider_call(RDMA_DRIVER_MLX5, 0x1000, 0x1001)).action, Action::kAllow);
  EXPECT_EQ(p.evaluate(provider_call(RDMA_DRIVER_EFA, 0x1000, 0x1001)).action, Action::kDeny);
  // A provider the tables do not know, or one that contradicts the names, is a load error.
  EXPECT_THROW(make(R"({"classes":{"uverbs":{"rules":[{"action":"deny","provider":"mlx9"}]}}})"),
               std::runtime_error);
  EXPECT_THROW(make(R"({"classes":{"nvidia":{"rules":[{"action":"deny","provider":"efa"}]}}})"),
               std::runtime_error);
  EXPECT_THROW(make(R"({"classes":{"uverbs":{"rules":[
      {"action":"deny","provider":"mlx5","object":"MR","method":"EFA_MR_QUERY"}]}}})"),
               std::runtime_error);
}

TEST(Policy, ShippedPolicyFilesLoad) {
  for (const char* f : {"configs/policy/default.json", "configs/policy/deny-reg-mr.json"}) {
    EXPECT_NO_THROW(Policy::load_file(std::string(GDRPROXY_SOURCE_DIR) + "/" + f)) << f;
  }
  EXPECT_THROW(Policy::load_file("/nonexistent/policy.json"), std::runtime_error);
}

}  // namespace
}  // namespace gdrproxy::proxy
