// The call handler's decisions, driven without a kernel: each test hands it a notification and
// fakes standing for the kernel's answers (call_handler_fakes.h), with the real catalog, grants,
// decoders and policy, and checks the decision: the answer to the kernel, the line said before
// it, the trace record, and what the handler had to ask (a call allowed on enforce's fast path
// reads nothing it need not and never asks whether its caller still waits). Each claim of
// docs/SECURITY.md that the handler decides is attacked here; the same claims are attacked end to
// end on this kernel by the tests named beside them there.
#include "proxy/engine/call_handler.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <rdma/ib_user_ioctl_cmds.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>

#include <cstring>
#include <memory>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/uverbs_abi.h"
#include "proxy/observe/trap_copy_slot.h"
#include "proxy/policy/dmabuf_provenance.h"
#include "tests/engine/call_handler_fakes.h"
#include "tests/proxy/verbs_buffer.h"

namespace gdrproxy::proxy {
namespace {

using fakes::FakeHost;
using fakes::FakeKernel;
using testing::kHdrAddr;
using testing::VerbsBuffer;
using Answer = CallDecision::Answer;

// NVOS21_PARAMETERS, RM_ALLOC's (as tests/proxy/nvidia_test_structs.h has it, whose bytes_of
// collides with verbs_buffer.h's), and _IOC(_IOC_READ|_IOC_WRITE, 'F', nr, size).
struct Nvos21 {
  uint32_t hRoot, hObjectParent, hObjectNew, hClass;
  uint64_t pAllocParms;
  uint32_t paramsSize, status;
};
static_assert(sizeof(Nvos21) == 32);
uint32_t nv_iowr(uint8_t nr, uint32_t size) {
  return (3u << 30) | ((size & 0x3fff) << 16) | (0x46u << 8) | nr;
}

constexpr pid_t kCaller = 4242;
constexpr int kFd = 5;
constexpr uint64_t kNvArg = 0x7f0000000000, kNvInner = 0x7f0000100000;

// True when every byte of `s` is printable ASCII: a line of gdrproxy's own.
bool one_printable_line(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c > 0x7e) return false;
  return true;
}

class CallHandlerTest : public ::testing::Test {
 protected:
  // Granted: uverbs0, rdma_cm, nvidiactl, nvidia0, nvidia-uvm. Not: uverbs1, nvidia1.
  void SetUp() override {
    grants = Grants::from_specs(
        host.catalog(),
        std::vector<std::string>{"uverbs0", "rdma_cm", "nvidiactl", "nvidia0", "nvidia-uvm"});
  }
  CallHandler& make(const std::function<void(CallHandlerSetup&)>& adjust = {}) {
    CallHandlerSetup s{policy, grants};
    s.nvidia_abi = nvidia_abi_for_version("580.159.04");
    s.nvidia_version_known = true;
    // The fake /dev's GPU nodes are links to character devices of major 1 (zero and full).
    s.nvidia_major = major(host.node("nvidia0").rdev);
    s.dmabuf_exporters = dmabuf_exporters(policy);
    s.next_seq = [this] { return ++seq; };
    if (adjust) adjust(s);
    handler = std::make_unique<CallHandler>(std::move(s), k.inputs());
    return *handler;
  }
  static seccomp_notif notif(int nr, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t id = 1) {
    seccomp_notif n{};
    n.id = id;
    n.pid = kCaller;
    n.data.nr = nr;
    n.data.args[0] = a0;
    n.data.args[1] = a1;
    n.data.args[2] = a2;
    return n;
  }
  // A uverbs ioctl on fd kFd whose header and attributes lie at kHdrAddr.
  CallDecision verbs(const VerbsBuffer& b, uint64_t id = 1) {
    k.memory.map(kHdrAddr, b.bytes());
    const seccomp_notif req = notif(SYS_ioctl, kFd, uverbs::kVerbsIoctl, kHdrAddr, id);
    return handler->ioctl({req, 0});
  }
  // RM_ALLOC(NV01_DEVICE_0) naming device instance `instance`, on fd kFd.
  CallDecision allocate_device(uint32_t instance, uint64_t id = 1) {
    Nvos21 p{};
    p.hClass = 0x80;  // NV01_DEVICE_0
    p.pAllocParms = kNvInner;
    k.memory.map(kNvArg, testing::bytes_of(p));
    std::vector<uint8_t> dev(56, 0);
    std::memcpy(dev.data(), &instance, 4);  // deviceId
    k.memory.map(kNvInner, dev);
    const seccomp_notif req = notif(SYS_ioctl, kFd, nv_iowr(0x2b, sizeof p), kNvArg, id);
    return handler->ioctl({req, 0});
  }
  static VerbsBuffer destroy_pd() {
    VerbsBuffer b{UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY};
    b.attr(UVERBS_ATTR_DESTROY_PD_HANDLE, 0, 3);
    return b;
  }
  // A core object no table names.
  static VerbsBuffer unknown_call() { return VerbsBuffer{0x0ff0, 1}; }
  static VerbsBuffer reg_dmabuf_mr(int32_t fd) {
    VerbsBuffer b{UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR};
    b.attr(UVERBS_ATTR_REG_DMABUF_MR_HANDLE, 0, 0)
        .attr(UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, 0, 5)
        .attr(UVERBS_ATTR_REG_DMABUF_MR_OFFSET, 8, 0)
        .attr(UVERBS_ATTR_REG_DMABUF_MR_LENGTH, 8, 2 << 20)
        .attr(UVERBS_ATTR_REG_DMABUF_MR_IOVA, 8, 0x10000000)
        .attr(UVERBS_ATTR_REG_DMABUF_MR_FD, 4, static_cast<uint32_t>(fd))
        .attr(UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, 4, IB_UVERBS_ACCESS_LOCAL_WRITE)
        .attr(UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, 4, 0x40000)
        .attr(UVERBS_ATTR_REG_DMABUF_MR_RESP_RKEY, 4, 0x40004);
    return b;
  }

  FakeHost host;
  FakeKernel k{host};
  Policy policy = Policy::builtin_default();
  Grants grants;
  uint64_t seq = 0;
  std::unique_ptr<CallHandler> handler;
};

// --- ungranted device fd refused at every ioctl ---

TEST_F(CallHandlerTest, AnFdOfAnUngrantedDeviceIsRefusedUnreadInEveryMode) {
  for (Mode mode : {Mode::kEnforce, Mode::kTrace}) {
    make([&](CallHandlerSetup& s) { s.enforcement = Enforcement(mode, true); });
    k.files.fd_of(kFd, "uverbs1");
    const int reads = k.memory.remote_reads;
    CallDecision d = verbs(destroy_pd());
    EXPECT_EQ(d.answer, Answer::kError);
    EXPECT_EQ(d.err, EACCES);  // the policy's open errno
    EXPECT_EQ(d.line, "denied IOCTL_0xc0181b01 on " + host.node("uverbs1").path +
                          " by pid 4242 (ns pid 3242): device uverbs1 is not granted -> EACCES");
    ASSERT_TRUE(d.record);
    EXPECT_EQ(d.record->decision, "deny");
    EXPECT_EQ(d.record->device, "uverbs1");
    EXPECT_EQ(d.record->err, EACCES);
    EXPECT_EQ(k.memory.remote_reads, reads) << "its argument was read";
  }
}

TEST_F(CallHandlerTest, AnFdOfNoDeviceOfOursContinuesUnread) {
  make();
  k.files.regular_file(kFd);
  CallDecision d = verbs(destroy_pd());
  EXPECT_EQ(d.answer, Answer::kContinue);
  EXPECT_TRUE(d.line.empty());
  EXPECT_FALSE(d.record);
  EXPECT_EQ(k.memory.remote_reads, 0);
  // Closed meanwhile: the kernel fails the call itself.
  d = verbs(destroy_pd(), 2);
  EXPECT_EQ(k.memory.remote_reads, 0);
  EXPECT_EQ(d.answer, Answer::kContinue);
}

// --- a guarded driver that registers after start: its nodes refused at ioctl ---

TEST_F(CallHandlerTest, ANodeOfADriverRegisteredSinceIsRefused) {
  make();
  // As the live catalog makes it: never brokered, whatever its name.
  DeviceNode late{"/dev/nvidia-uvm", "nvidia-uvm", DeviceClass::kNvidiaUvm, makedev(511, 0), false};
  late.uncatalogued = true;
  k.files.registered_since.push_back(late);
  k.files.fd(kFd, late.rdev);
  CallDecision d = verbs(destroy_pd());
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EACCES);
  EXPECT_NE(d.line.find("char device 511:0 (nvidia-uvm) belongs to a guarded driver but was not "
                        "catalogued when this sandbox started"),
            std::string::npos)
      << d.line;
}

// --- unknown calls denied in enforce mode; what is allowed runs without a check ---

TEST_F(CallHandlerTest, AnAllowedCallContinuesWithoutAskingWhetherItsCallerStillWaits) {
  make();
  k.files.fd_of(kFd, "uverbs0");
  CallDecision d = verbs(destroy_pd());
  EXPECT_EQ(d.answer, Answer::kContinue);
  EXPECT_TRUE(d.line.empty());
  EXPECT_FALSE(d.record);
  EXPECT_EQ(k.callers.validity_checks, 0);
  EXPECT_EQ(k.callers.identities_read, 0);
  EXPECT_EQ(k.memory.tids, std::vector<pid_t>{kCaller});
}

TEST_F(CallHandlerTest, UnknownCallsAreDeniedInEnforceModeWithOneLine) {
  make();
  k.files.fd_of(kFd, "uverbs0");
  CallDecision d = verbs(unknown_call());
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EPERM);
  EXPECT_EQ(d.line.rfind("denied uverbs0 ", 0), 0u) << d.line;
  EXPECT_NE(d.line.find("by pid 4242 (ns pid 3242): "), std::string::npos) << d.line;
  EXPECT_NE(d.line.find("-> EPERM"), std::string::npos) << d.line;
  EXPECT_EQ(k.callers.validity_checks, 1);  // a refusal rests on what was read
  ASSERT_TRUE(d.record);
  EXPECT_EQ(d.record->decision, "deny");
  // The same refusal again: answered the same, its line not repeated.
  d = verbs(unknown_call(), 2);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_TRUE(d.line.empty());
  EXPECT_EQ(handler->denials().total(), 2u);
  EXPECT_EQ(handler->denials().repeats(), 1u);
}

TEST_F(CallHandlerTest, TraceModeLetsWhatItWouldDenyRunAndSaysSo) {
  make([](CallHandlerSetup& s) {
    s.enforcement = Enforcement(Mode::kTrace, true);
    s.tracing = true;
  });
  k.files.fd_of(kFd, "uverbs0");
  CallDecision d = verbs(unknown_call());
  EXPECT_EQ(d.answer, Answer::kContinue);
  EXPECT_EQ(d.line.rfind("trace mode, would deny uverbs0 ", 0), 0u) << d.line;
  ASSERT_TRUE(d.record);
  EXPECT_EQ(d.record->decision, "allow (would deny: trace mode)");
  EXPECT_EQ(d.record->seq, 1u);
}

// --- unknown NVIDIA driver refuses enforcement (trace-only) ---

TEST_F(CallHandlerTest, AnUnknownNvidiaDriversCallsAreTraceOnlyAndOtherClassesStayEnforced) {
  make([](CallHandlerSetup& s) { s.enforcement = Enforcement(Mode::kEnforce, false); });
  // An escape no table names, on the granted nvidiactl.
  k.files.fd_of(kFd, "nvidiactl");
  k.memory.map(kNvArg, std::vector<uint8_t>(16, 0));
  const seccomp_notif req = notif(SYS_ioctl, kFd, nv_iowr(0xee, 16), kNvArg);
  CallDecision d = handler->ioctl({req, 0});
  EXPECT_EQ(d.answer, Answer::kContinue);
  EXPECT_EQ(d.line.rfind("driver not in the ABI tables, would deny nvidiactl ", 0), 0u) << d.line;
  // uverbs is policed as ever.
  k.files.fd_of(kFd, "uverbs0");
  d = verbs(unknown_call(), 2);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EPERM);
}

// --- dma-buf provenance (GPUDirect) ---

TEST_F(CallHandlerTest, ADmabufOfAnotherExporterIsRefusedAndAGpusIsAllowed) {
  make();
  k.files.fd_of(kFd, "uverbs0");
  host.dmabuf_fd(kCaller, 40, "nv_dmabuf");
  host.dmabuf_fd(kCaller, 41, "udmabuf");
  host.dmabuf_fd(kCaller, 42, "");  // an eventfd
  CallDecision d = verbs(reg_dmabuf_mr(40));
  EXPECT_EQ(d.answer, Answer::kContinue);
  d = verbs(reg_dmabuf_mr(41), 2);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EPERM);  // the uverbs class's errno
  EXPECT_NE(d.line.find("uverbs dma-buf provenance: dma-buf fd 41 was exported by 'udmabuf', not "
                        "a granted GPU"),
            std::string::npos)
      << d.line;
  d = verbs(reg_dmabuf_mr(42), 3);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_NE(d.line.find("fd 42 is not a dma-buf"), std::string::npos) << d.line;
  // NCCL's capability probe names fd -1 and always passes.
  d = verbs(reg_dmabuf_mr(-1), 4);
  EXPECT_EQ(d.answer, Answer::kContinue);
  EXPECT_EQ(k.files.dmabufs_asked, (std::vector<int>{40, 41, 42, -1}));
}

TEST_F(CallHandlerTest, AnAllowedDmabufIsNamedInATracedCallsRecord) {
  make([](CallHandlerSetup& s) { s.tracing = true; });
  k.files.fd_of(kFd, "uverbs0");
  host.dmabuf_fd(kCaller, 40, "nv_dmabuf");
  CallDecision d = verbs(reg_dmabuf_mr(40));
  EXPECT_EQ(d.answer, Answer::kContinue);
  ASSERT_TRUE(d.record);
  bool named = false;
  for (const DecodedField& f : d.record->call.args)
    named = named || (f.name == "dmabuf" && f.value == "dma-buf exported by nv_dmabuf");
  EXPECT_TRUE(named);
}

TEST_F(CallHandlerTest, WithoutExportersNoDmabufIsChecked) {
  make([](CallHandlerSetup& s) { s.dmabuf_exporters.clear(); });
  k.files.fd_of(kFd, "uverbs0");
  host.dmabuf_fd(kCaller, 41, "udmabuf");
  EXPECT_EQ(verbs(reg_dmabuf_mr(41)).answer, Answer::kContinue);
  EXPECT_TRUE(k.files.dmabufs_asked.empty());
}

// --- an ungranted GPU cannot be named through nvidiactl ---

TEST_F(CallHandlerTest, ADeviceObjectIsJudgedByTheGpuItsInstanceIs) {
  make([](CallHandlerSetup& s) { s.all_gpus_granted = false; });
  k.files.fd_of(kFd, "nvidiactl");
  k.gpus.answer = std::vector<NvidiaGpu>{{1, minor(host.node("nvidia0").rdev), 0},
                                         {2, minor(host.node("nvidia1").rdev), 1}};
  EXPECT_EQ(allocate_device(0).answer, Answer::kContinue);
  CallDecision d = allocate_device(1, 2);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EACCES);  // the policy's open errno, in every mode
  EXPECT_NE(d.line.find(": NV01_DEVICE_0 device instance 1 is GPU nvidia1, which is not granted "
                        "-> EACCES"),
            std::string::npos)
      << d.line;
  d = allocate_device(7, 3);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_NE(d.line.find("NV01_DEVICE_0 device instance 7 is no attached GPU"), std::string::npos)
      << d.line;
  // A driver that does not answer: refused.
  k.gpus.answer.reset();
  d = allocate_device(0, 4);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_NE(d.line.find("cannot ask the driver which GPU it is (the driver refused CARD_INFO)"),
            std::string::npos)
      << d.line;
  EXPECT_EQ(k.gpus.asked, 4);
}

TEST_F(CallHandlerTest, ADeviceObjectOfADriverOfUnknownVersionIsRefused) {
  make([](CallHandlerSetup& s) {
    s.all_gpus_granted = false;
    s.nvidia_version_known = false;
  });
  k.files.fd_of(kFd, "nvidiactl");
  CallDecision d = allocate_device(0);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_NE(d.line.find("the NVIDIA driver version is unknown, so its GPU cannot be told"),
            std::string::npos);
  EXPECT_EQ(k.gpus.asked, 0);
}

TEST_F(CallHandlerTest, WithEveryGpuGrantedNoDeviceObjectIsAskedAbout) {
  make();
  k.files.fd_of(kFd, "nvidiactl");
  EXPECT_EQ(allocate_device(1).answer, Answer::kContinue);
  EXPECT_EQ(k.gpus.asked, 0);
}

// --- reads from a caller that died: nothing rests on them ---

TEST_F(CallHandlerTest, NothingIsSaidOrRecordedOfACallerThatIsGone) {
  make([](CallHandlerSetup& s) { s.tracing = true; });
  k.files.fd_of(kFd, "uverbs0");
  k.callers.gone.insert(1);
  CallDecision d = verbs(unknown_call());
  EXPECT_EQ(d.answer, Answer::kNone);
  EXPECT_TRUE(d.line.empty());
  EXPECT_FALSE(d.record);
  EXPECT_EQ(handler->denials().total(), 0u);
  // An allowed traced call too: its record would name whoever has the tid now.
  EXPECT_EQ(verbs(destroy_pd()).answer, Answer::kNone);
  // The GPU check's refusal as well.
  make([](CallHandlerSetup& s) { s.all_gpus_granted = false; });
  k.files.fd_of(kFd, "nvidiactl");
  k.gpus.answer = std::vector<NvidiaGpu>{};
  d = allocate_device(1);
  EXPECT_EQ(d.answer, Answer::kNone);
  EXPECT_TRUE(d.line.empty());
}

// --- a trap copy is used only for the call it names, and judges as a lookup does ---

class CallHandlerCopyTest : public CallHandlerTest {
 protected:
  std::optional<TrapCopy> copy_of(const std::string& node, const std::vector<uint8_t>& bytes) {
    slot = {};
    slot.seq = 2;
    slot.flags = GDRPROXY_TRAP_COPY_FD_READ | GDRPROXY_TRAP_COPY_FILE | GDRPROXY_TRAP_COPY_DATA;
    slot.mode = S_IFCHR | 0600;
    const dev_t rdev = host.node(node).rdev;
    slot.rdev = (major(rdev) << 20) | minor(rdev);
    slot.arg = kHdrAddr;
    slot.len = static_cast<uint32_t>(bytes.size());
    std::memcpy(slot.data, bytes.data(), bytes.size());
    return TrapCopy(slot);
  }
  CallDecision with_copy(std::optional<TrapCopy> copy, uint64_t id = 1) {
    const seccomp_notif req = notif(SYS_ioctl, kFd, uverbs::kVerbsIoctl, kHdrAddr, id);
    IoctlNotification n{req, 0, true, std::move(copy)};
    return handler->ioctl(std::move(n));
  }
  gdrproxy_trap_copy slot{};
};

TEST_F(CallHandlerCopyTest, ACallIsJudgedFromItsCopyWithoutLookingItUp) {
  make([](CallHandlerSetup& s) {
    s.tracing = true;
    s.observed = true;
  });
  // The fd names another device now: the copy, taken at the trap, is what is judged.
  k.files.fd_of(kFd, "uverbs1");
  CallDecision d = with_copy(copy_of("uverbs0", destroy_pd().bytes()));
  EXPECT_EQ(d.answer, Answer::kContinue);
  EXPECT_EQ(k.files.lookups, 0);
  EXPECT_EQ(k.memory.remote_reads, 0);
  // Its bytes and device came from the caller's own context during this notification, and the
  // observer names the caller at its exit: nothing to re-validate, no /proc read.
  EXPECT_EQ(k.callers.validity_checks, 0);
  EXPECT_EQ(k.callers.identities_read, 0);
  ASSERT_TRUE(d.record);
  EXPECT_EQ(d.record->who.host_tid, static_cast<uint32_t>(kCaller));
  EXPECT_EQ(d.record->who.host_tgid, 0u);  // from the exit event
  EXPECT_EQ(handler->counts().trap_copies_used, 1u);
  // A copy of an ungranted device is refused like the lookup.
  d = with_copy(copy_of("uverbs1", destroy_pd().bytes()), 2);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EACCES);
}

TEST_F(CallHandlerCopyTest, ACopyRewrittenWhileReadIsDroppedAndTheCallLookedUp) {
  make();
  k.files.fd_of(kFd, "uverbs0");
  k.memory.map(kHdrAddr, unknown_call().bytes());  // what the caller's memory holds
  // The copy says an allowed call, but its slot was rewritten while read (the seqlock moved).
  std::optional<TrapCopy> torn = copy_of("uverbs0", destroy_pd().bytes());
  torn.emplace(slot, slot, slot.seq + 2);
  CallDecision d = with_copy(torn);
  EXPECT_EQ(d.answer, Answer::kError) << "judged from the torn copy";
  EXPECT_EQ(k.files.lookups, 1);
  EXPECT_GT(k.memory.remote_reads, 0);
  EXPECT_EQ(handler->counts().trap_copies_used, 0u);
  EXPECT_EQ(handler->counts().trap_copies_missed, 1u);
  EXPECT_EQ(handler->counts().trap_copies_torn, 1u);
}

TEST_F(CallHandlerCopyTest, BytesBeyondTheCopyAreReadAndTheCallerThenChecked) {
  make([](CallHandlerSetup& s) {
    s.tracing = true;
    s.observed = true;
  });
  k.files.fd_of(kFd, "uverbs0");
  const std::vector<uint8_t> all = destroy_pd().bytes();
  k.memory.map(kHdrAddr, all);
  // Only the header was copied: the attributes are read from the process.
  CallDecision d = with_copy(copy_of("uverbs0", {all.begin(), all.begin() + 24}));
  EXPECT_EQ(d.answer, Answer::kContinue);
  EXPECT_GT(k.memory.remote_reads, 0);
  EXPECT_EQ(k.callers.validity_checks, 1);
}

TEST_F(CallHandlerCopyTest, ACopyOfAnFdThatNamedNoFileContinues) {
  make();
  std::optional<TrapCopy> c = copy_of("uverbs0", destroy_pd().bytes());
  slot.flags = GDRPROXY_TRAP_COPY_FD_READ;  // the fd named no open file at the trap
  c.emplace(slot);
  EXPECT_EQ(with_copy(c).answer, Answer::kContinue);
  EXPECT_EQ(k.files.lookups, 0);
}

// --- requests allowed whatever their parameters (the in-kernel ALLOW's set) ---

TEST_F(CallHandlerTest, ARequestAllowedWhateverItsParametersRunsUnreadOnGrantedNodesOnly) {
  constexpr uint32_t kUvmRequest = 0x21;
  make([](CallHandlerSetup& s) { s.unread_uvm = {kUvmRequest}; });
  k.files.fd_of(kFd, "nvidia-uvm");
  const seccomp_notif req = notif(SYS_ioctl, kFd, kUvmRequest, 0x1000);
  CallDecision d = handler->ioctl({req, 0});
  EXPECT_EQ(d.answer, Answer::kContinue);
  EXPECT_EQ(k.memory.tids.size(), 0u) << "its parameters were read";
  EXPECT_EQ(handler->counts().allowed_unread, 1u);
  // The same request on an fd of an ungranted device is refused first.
  k.files.fd_of(kFd, "nvidia1");
  d = handler->ioctl({notif(SYS_ioctl, kFd, kUvmRequest, 0x1000, 2), 0});
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(handler->counts().allowed_unread, 1u);
}

// --- driver-namespace ids judged under the device's provider, not the caller's header ---

TEST_F(CallHandlerTest, ADriverNamespaceCallIsJudgedUnderTheNodesProviderNotTheCallers) {
  make();
  k.files.fd_of(kFd, "uverbs0");  // its provider is unknown (no sysfs): no provider's methods
  VerbsBuffer b{0x1000, 1};       // a driver-namespace object
  b.driver_id = 1;                // the caller claims mlx5 (RDMA_DRIVER_MLX5)
  CallDecision d = verbs(b);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_NE(d.line.find("DRIVER_OBJ_0x1000"), std::string::npos) << d.line;
}

// --- opens: the broker's decision carried out ---

TEST_F(CallHandlerTest, AnOpenOfNoDeviceContinuesUnrecorded) {
  make([](CallHandlerSetup& s) { s.tracing = true; });
  CallDecision d = handler->open(notif(SYS_openat, AT_FDCWD, 0x1000, O_RDONLY));
  EXPECT_EQ(d.answer, Answer::kContinue);
  EXPECT_FALSE(d.record);
  // Arguments it cannot read: not an open it knows; the kernel answers the caller.
  k.opens.readable = false;
  d = handler->open(notif(SYS_openat2, AT_FDCWD, 0x1000, 0x2000, 2));
  EXPECT_EQ(d.answer, Answer::kContinue);
  EXPECT_EQ(k.callers.validity_checks, 1);
}

TEST_F(CallHandlerTest, AnUngrantedNodeIsRefusedAtOpenInOneEscapedLine) {
  make();
  k.opens.next.kind = OpenDecision::Kind::kDeny;
  k.opens.next.path = "/dev/infiniband/uverbs1\n\x1b[2Jforged";
  k.opens.next.node = &host.node("uverbs1");
  k.opens.next.err = EACCES;
  k.opens.next.reason = "device uverbs1 is not granted";
  CallDecision d = handler->open(notif(SYS_openat, AT_FDCWD, 0x1000, O_RDWR));
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EACCES);
  EXPECT_TRUE(one_printable_line(d.line)) << d.line;
  EXPECT_EQ(d.line.rfind("denied open of \"/dev/infiniband/uverbs1\\n\\x1b[2Jforged\" (" +
                             host.node("uverbs1").path +
                             ") by pid 4242 (ns pid 3242): device "
                             "uverbs1 is not granted -> EACCES",
                         0),
            0u)
      << d.line;
  ASSERT_TRUE(d.record);
  EXPECT_EQ(d.record->decision, "deny");
  EXPECT_EQ(d.record->syscall, "openat");
}

TEST_F(CallHandlerTest, APathTheBrokerCannotDecideIsRefused) {
  make();
  k.opens.next.kind = OpenDecision::Kind::kUndecidable;
  k.opens.next.path = "/proc/1/root/dev/x";
  k.opens.next.err = EACCES;
  k.opens.next.reason =
      "path cannot be resolved as the caller would (Too many levels of symbolic "
      "links), failed closed";
  CallDecision d = handler->open(notif(SYS_openat2, AT_FDCWD, 0x1000, 0x2000));
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.line.rfind("denied open of \"/proc/1/root/dev/x\" by pid 4242", 0), 0u) << d.line;
  EXPECT_EQ(d.record->syscall, "openat2");
}

TEST_F(CallHandlerTest, AGrantedNvidiaNodeIsOpenedOnTheHostAndInstalled) {
  make();
  k.opens.flags = O_RDWR | O_CLOEXEC;
  k.opens.next.kind = OpenDecision::Kind::kBroker;
  k.opens.next.path = "/dev/nvidia0";
  k.opens.next.node = &host.node("nvidia0");
  k.opens.next.host_fd = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int host_fd = k.opens.next.host_fd.get();
  CallDecision d = handler->open(notif(SYS_openat, AT_FDCWD, 0x1000, O_RDWR | O_CLOEXEC));
  EXPECT_EQ(d.answer, Answer::kFd);
  EXPECT_EQ(d.fd.get(), host_fd);
  EXPECT_TRUE(d.cloexec);
  EXPECT_TRUE(d.note_failed_fd);
  EXPECT_EQ(d.record->decision, "broker");
  // A host open that failed is the caller's error.
  k.opens.next.kind = OpenDecision::Kind::kBroker;
  k.opens.next.node = &host.node("nvidia0");
  k.opens.next.err = ENXIO;
  d = handler->open(notif(SYS_openat, AT_FDCWD, 0x1000, O_RDWR, 2));
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, ENXIO);
}

TEST_F(CallHandlerTest, AGrantedVerbsNodeIsOpenedByTheCallerAndItsWritesWatched) {
  make([](CallHandlerSetup& s) { s.tracing = true; });
  for (const char* name : {"uverbs0", "rdma_cm", "nvidia-uvm"}) {
    k.opens.next.kind = OpenDecision::Kind::kCallerOpens;
    k.opens.next.node = &host.node(name);
    CallDecision d = handler->open(notif(SYS_openat, AT_FDCWD, 0x1000, O_RDWR));
    EXPECT_EQ(d.answer, Answer::kContinue) << name;
    EXPECT_EQ(d.watch_writes, std::string(name) != "nvidia-uvm") << name;
    ASSERT_TRUE(d.record);
    EXPECT_EQ(d.record->decision, "allow");
  }
}

TEST_F(CallHandlerTest, AnOpenOfACallerThatIsGoneClosesTheHostFdAndSaysNothing) {
  make();
  k.opens.next.kind = OpenDecision::Kind::kBroker;
  k.opens.next.node = &host.node("nvidia0");
  k.opens.next.host_fd = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
  const int host_fd = k.opens.next.host_fd.get();
  k.callers.gone.insert(1);
  CallDecision d = handler->open(notif(SYS_openat, AT_FDCWD, 0x1000, O_RDWR));
  EXPECT_EQ(d.answer, Answer::kNone);
  EXPECT_FALSE(d.record);
  EXPECT_LT(::fcntl(host_fd, F_GETFD), 0) << "the host fd was left open";
}

// --- brokered pidfd_getfd reaches only processes of the same sandbox ---

class CallHandlerPidfdTest : public CallHandlerTest {
 protected:
  CallDecision getfd(uint64_t flags = 0, uint64_t id = 1) {
    return handler->pidfd_getfd(notif(SYS_pidfd_getfd, 7, 9, flags, id));
  }
  void brokering(bool on = true) {
    make([on](CallHandlerSetup& s) { s.broker_pidfd_getfd = on; });
    handler->set_pid_namespace(k.pidfds.pidns);
  }
};

TEST_F(CallHandlerPidfdTest, WithinTheSandboxTheFdIsTakenWithTheCallersCredentials) {
  brokering();
  CallDecision d = getfd();
  EXPECT_EQ(d.answer, Answer::kFd);
  EXPECT_TRUE(d.fd);
  EXPECT_TRUE(d.cloexec);  // as pidfd_getfd gives it
  EXPECT_FALSE(d.note_failed_fd);
  EXPECT_EQ(k.pidfds.taken_fd, 9);
  EXPECT_EQ(d.record->decision, "broker");
  EXPECT_TRUE(d.line.empty());
  // What the caller could not take itself (the kernel's ptrace check as the caller) it gets
  // refused with the kernel's errno.
  k.pidfds.take_err = EPERM;
  d = getfd(0, 2);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EPERM);
  EXPECT_NE(d.line.find("fd 9 of pid 2345: the kernel refused"), std::string::npos) << d.line;
}

TEST_F(CallHandlerPidfdTest, WithoutBrokeringItIsRefused) {
  brokering(false);
  CallDecision d = getfd();
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EPERM);
  EXPECT_EQ(d.line,
            "denied pidfd_getfd by pid 4242 (ns pid 3242): pidfd_getfd is not brokered for this "
            "sandbox -> EPERM");
  EXPECT_EQ(k.pidfds.takes, 0);
}

TEST_F(CallHandlerPidfdTest, AProcessOutsideTheSandboxIsRefused) {
  brokering();
  k.pidfds.pidns = 4026532999;  // another sandbox's
  CallDecision d = getfd();
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EPERM);
  EXPECT_NE(d.line.find("pid 2345 is outside this sandbox -> EPERM"), std::string::npos) << d.line;
  // A group peer's is reached; the supervisor's own never, whatever the group says.
  handler->set_peer_namespaces([](ino_t) { return true; });
  EXPECT_EQ(getfd(0, 2).answer, Answer::kFd);
  k.pidfds.pidns = k.pidfds.own;
  d = getfd(0, 3);
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_NE(d.line.find("is outside this sandbox and its group"), std::string::npos) << d.line;
  EXPECT_EQ(k.pidfds.takes, 1);
}

TEST_F(CallHandlerPidfdTest, ARuntimesExecHelperIsRefused) {
  brokering();
  k.pidfds.helper = "its program /usr/bin/runc is on no mount of its mount namespace";
  CallDecision d = getfd();
  EXPECT_EQ(d.answer, Answer::kError);
  EXPECT_EQ(d.err, EPERM);
  EXPECT_NE(d.line.find("pid 2345: its program /usr/bin/runc"), std::string::npos) << d.line;
  EXPECT_EQ(k.pidfds.takes, 0);
}

TEST_F(CallHandlerPidfdTest, WhatCannotBeTakenOrNamedIsRefusedWithItsErrno) {
  brokering();
  EXPECT_EQ(getfd(1).err, EINVAL);  // flags
  k.pidfds.status = PidfdTargets::Target::Status::kCallerGone;
  EXPECT_EQ(getfd(0, 2).err, ESRCH);
  k.pidfds.status = PidfdTargets::Target::Status::kUnreadable;
  EXPECT_EQ(getfd(0, 3).err, EBADF);
  k.pidfds.status = PidfdTargets::Target::Status::kRead;
  k.pidfds.pid = -1;  // not a pidfd, or its process is gone
  EXPECT_EQ(getfd(0, 4).err, ESRCH);
  k.pidfds.pid = 0;  // a process of no namespace we see
  EXPECT_EQ(getfd(0, 5).err, EBADF);
  k.pidfds.pid = 2345;
  k.pidfds.alive = false;  // died (its pid may be reused) after it was read
  EXPECT_EQ(getfd(0, 6).err, EBADF);
  EXPECT_EQ(k.pidfds.takes, 0);
}

TEST_F(CallHandlerPidfdTest, ASandboxWithoutAPidNamespaceOfItsOwnBrokersNothing) {
  make([](CallHandlerSetup& s) { s.broker_pidfd_getfd = true; });
  CallDecision d = getfd();
  EXPECT_EQ(d.err, EPERM);
  EXPECT_NE(d.line.find("no pid namespace of its own"), std::string::npos) << d.line;
  // Its pid namespace is the supervisor's own: the same (and the line is not repeated).
  handler->set_pid_namespace(k.pidfds.own);
  d = getfd(0, 2);
  EXPECT_EQ(d.err, EPERM);
  EXPECT_TRUE(d.line.empty());
  EXPECT_EQ(k.pidfds.takes, 0);
}

TEST_F(CallHandlerPidfdTest, ACallerGoneBeforeTheTakeGetsNothingTaken) {
  brokering();
  k.callers.gone.insert(1);
  CallDecision d = getfd();
  EXPECT_EQ(d.answer, Answer::kNone);
  EXPECT_FALSE(d.record);
  EXPECT_EQ(k.pidfds.takes, 0);
}

}  // namespace
}  // namespace gdrproxy::proxy
