// Fakes of the kernel's answers to the call handler (proxy/engine/call_inputs.h), for its unit
// tests. Each stands for one kernel input the handler cannot get without a trapped process: the
// caller's memory (process_vm_readv), what its fds are (statx of /proc/<tid>/fd/<n>), who it is
// (/proc), whether its notification still waits (SECCOMP_IOCTL_NOTIF_ID_VALID), which GPU a
// device instance is (the NVIDIA driver), what an open's path names (the open broker's walk of
// the caller's root) and what a pidfd names. They record what the handler asked, so a test can
// check that a call was judged without reading the caller or asking whether it still waits.
// The device catalog, the grants, the decoders, the policy and the dma-buf check are the real
// ones: the catalog is scanned from a made-up /dev whose nodes are symlinks to harmless character
// devices (null, zero, ...) standing for the RDMA and NVIDIA nodes, and the dma-buf check reads a
// made-up /proc.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "proxy/devices/device_catalog.h"
#include "proxy/engine/call_inputs.h"
#include "proxy/gpudirect/dmabuf_check.h"
#include "proxy/mem/memory_reader.h"

namespace gdrproxy::proxy::fakes {

namespace fs = std::filesystem;

// A made-up host: /dev of symlinks (each name to a distinct character device every Linux /dev
// has, containers' included, so the real catalog scan finds them and each has a device number of
// its own) and /proc for dma-buf fds.
class FakeHost {
 public:
  FakeHost() {
    char t[] = "/tmp/gdrproxy-handler-XXXXXX";
    root_ = ::mkdtemp(t);
    fs::create_directories(root_ / "dev/infiniband");
    fs::create_directories(root_ / "proc");
    fs::create_directories(root_ / "sys");
    link("dev/infiniband/uverbs0", "/dev/null");
    link("dev/infiniband/uverbs1", "/dev/urandom");
    link("dev/infiniband/rdma_cm", "/dev/random");
    link("dev/nvidiactl", "/dev/ptmx");
    link("dev/nvidia0", "/dev/zero");
    link("dev/nvidia1", "/dev/full");
    link("dev/nvidia-uvm", "/dev/tty");
    catalog_ = DeviceCatalog::scan((root_ / "dev").string(), (root_ / "proc").string(),
                                   (root_ / "sys").string());
  }
  ~FakeHost() { fs::remove_all(root_); }
  FakeHost(const FakeHost&) = delete;
  FakeHost& operator=(const FakeHost&) = delete;

  const DeviceCatalog& catalog() const { return catalog_; }
  const DeviceNode& node(const std::string& name) const {
    const DeviceNode* n = catalog_.find_by_name(name);
    if (!n) throw std::runtime_error("no node " + name + " in the fake /dev");
    return *n;
  }
  // The fake /proc's fd `fd` of `tid` as a dma-buf of `exporter` (empty: another kind of file).
  void dmabuf_fd(pid_t tid, int fd, const std::string& exporter) {
    const fs::path p = root_ / "proc" / std::to_string(tid);
    fs::create_directories(p / "fd");
    fs::create_directories(p / "fdinfo");
    fs::remove(p / "fd" / std::to_string(fd));
    fs::create_symlink(exporter.empty() ? "anon_inode:[eventfd]" : "/dmabuf:",
                       p / "fd" / std::to_string(fd));
    std::ofstream(p / "fdinfo" / std::to_string(fd)) << "pos:\t0\nexp_name:\t" << exporter << "\n";
  }
  std::string proc_root() const { return (root_ / "proc").string(); }

 private:
  void link(const char* rel, const char* to) { fs::create_symlink(to, root_ / rel); }
  fs::path root_;
  DeviceCatalog catalog_;
};

// The caller's memory: byte ranges at chosen addresses; reads inside the primed bytes (a trap
// copy's) are served from them. Counts the reads that went to "the process".
class FakeMemory final : public CallerMemory {
 public:
  void map(uint64_t addr, std::vector<uint8_t> bytes) { mem_.map(addr, std::move(bytes)); }
  const MemoryReader& begin(pid_t tid, uint64_t*, uint64_t primed_at,
                            std::span<const uint8_t> primed) override {
    reader_.owner = this;
    reader_.primed_at = primed_at;
    reader_.primed = primed;
    tids.push_back(tid);
    remote_ = false;
    return reader_;
  }
  bool read_remotely() const override { return remote_; }
  int remote_reads = 0;
  std::vector<pid_t> tids;  // whose memory each call began reading

 private:
  struct Reader final : MemoryReader {
    FakeMemory* owner = nullptr;
    uint64_t primed_at = 0;
    std::span<const uint8_t> primed;
    bool read(uint64_t addr, std::span<uint8_t> out) const override {
      if (addr >= primed_at && addr + out.size() <= primed_at + primed.size()) {
        std::copy_n(primed.begin() + (addr - primed_at), out.size(), out.begin());
        return true;
      }
      owner->remote_ = true;
      ++owner->remote_reads;
      return owner->mem_.read(addr, out);
    }
  };
  BufferMemory mem_;
  Reader reader_;
  bool remote_ = false;
};

// The caller's fds: each a device number, or a file that is no character device. Device numbers
// are looked up in the real catalog; `registered_since` holds the never-granted entries of
// drivers that registered after the catalog was made (proxy/devices/live_catalog.h).
class FakeFiles final : public CallerFiles {
 public:
  explicit FakeFiles(const FakeHost& host) : host_(host) {}
  void fd(int n, dev_t rdev) { fds_[n] = rdev; }
  void fd_of(int n, const std::string& node) { fds_[n] = host_.node(node).rdev; }
  void regular_file(int n) { fds_[n] = std::nullopt; }
  std::vector<DeviceNode> registered_since;

  const DeviceNode* device(dev_t rdev) const override {
    if (const DeviceNode* n = host_.catalog().find(rdev)) return n;
    for (const DeviceNode& n : registered_since)
      if (n.rdev == rdev) return &n;
    return nullptr;
  }
  bool inspect_fd(pid_t, int fd, const DeviceNode*& node) override {
    ++lookups;
    node = nullptr;
    const auto it = fds_.find(fd);
    if (it == fds_.end()) return false;
    if (it->second) node = device(*it->second);
    return true;
  }
  DmabufVerdict dmabuf(pid_t tid, int fd, const std::vector<std::string>& exporters) override {
    dmabufs_asked.push_back(fd);
    return check_dmabuf_fd(tid, fd, exporters, host_.proc_root());
  }
  int lookups = 0;
  std::vector<int> dmabufs_asked;

 private:
  const FakeHost& host_;
  std::map<int, std::optional<dev_t>> fds_;
};

// Who callers are, and which notifications no longer wait (their caller died, or was killed
// and its tid reused).
class FakeCallers final : public Callers {
 public:
  const ProcessIdentity& identity(pid_t tid) override {
    ++identities_read;
    ProcessIdentity& who = who_[tid];
    who.host_tid = who.host_tgid = static_cast<uint32_t>(tid);
    who.ns_tid = who.ns_tgid = static_cast<uint32_t>(tid - 1000);
    if (who.comm.empty()) who.comm = "client";
    return who;
  }
  bool still_waiting(uint64_t id) override {
    ++validity_checks;
    return !gone.contains(id);
  }
  std::set<uint64_t> gone;
  int identities_read = 0, validity_checks = 0;

 private:
  std::map<pid_t, ProcessIdentity> who_;
};

// The NVIDIA driver's answer: its GPUs (minor and device instance), or why it does not answer.
class FakeGpus final : public GpuInstances {
 public:
  std::optional<std::vector<NvidiaGpu>> gpus(std::string& why) override {
    ++asked;
    if (!answer) why = "the driver refused CARD_INFO";
    return answer;
  }
  std::optional<std::vector<NvidiaGpu>> answer;
  int asked = 0;
};

// What an open's path names: the open broker's decision, as it would have made it.
class FakeOpens final : public OpenPaths {
 public:
  bool decide(const seccomp_notif&, OpenCall& call, OpenDecision& d) override {
    if (!readable) return false;
    call.flags = flags;
    d = std::move(next);
    next = OpenDecision{};
    return true;
  }
  bool readable = true;  // the open's arguments can be read
  uint64_t flags = 0;    // its flags
  OpenDecision next;     // what the broker decided
};

// What a caller's pidfd names, and the fd a prober with its credentials takes.
class FakePidfds final : public PidfdTargets {
 public:
  ino_t own_pid_namespace() override { return own; }
  Target target(pid_t, int) override {
    Target t;
    t.status = status;
    t.pid = pid;
    t.pidns = pidns;
    t.helper = helper;
    t.alive = alive;
    return t;
  }
  TakenFd take(pid_t, int, int target_fd) override {
    ++takes;
    TakenFd t;
    if (take_err) {
      t.err = take_err;
      t.why = "the kernel refused (" + std::to_string(take_err) + ")";
      return t;
    }
    t.fd = UniqueFd(::open("/dev/null", O_RDONLY | O_CLOEXEC));
    taken_fd = target_fd;
    return t;
  }
  ino_t own = 4026531836;  // the supervisor's pid namespace
  Target::Status status = Target::Status::kRead;
  pid_t pid = 2345;
  ino_t pidns = 4026532000;
  std::optional<std::string> helper;
  bool alive = true;
  int take_err = 0;
  int takes = 0, taken_fd = -1;
};

// All of them, as the handler takes them.
struct FakeKernel {
  explicit FakeKernel(const FakeHost& host) : files(host) {}
  CallInputs inputs() { return {memory, files, callers, gpus, opens, pidfds}; }
  FakeMemory memory;
  FakeFiles files;
  FakeCallers callers;
  FakeGpus gpus;
  FakeOpens opens;
  FakePidfds pidfds;
};

}  // namespace gdrproxy::proxy::fakes
