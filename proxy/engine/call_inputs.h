// What the call handler (call_handler.h) may ask about a trapped call, one narrow interface per
// kind of question: the caller's memory, its fds, who it is and whether it still waits, which GPU
// an NVIDIA device instance is, what an open's path names, and what a pidfd names. The idea not to
// miss: these are the handler's only ways to the kernel. The supervisor answers them from the
// kernel (kernel_inputs.h); a unit test answers them with fakes that stand for the kernel's
// answers (tests/engine/), so every decision the handler makes can be driven without a kernel.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "proxy/broker/fd_broker.h"
#include "proxy/broker/open_broker.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/devices/nvidia_gpus.h"
#include "proxy/gpudirect/dmabuf_check.h"
#include "proxy/mem/memory_reader.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {

// The caller's memory, for one call at a time.
class CallerMemory {
 public:
  virtual ~CallerMemory() = default;
  // A reader of thread `tid`'s memory for the call being handled (it replaces the previous
  // call's): reads inside `primed` (bytes of its memory at `primed_at` that its trap copy holds)
  // are served from them; the time spent reading is added to *ns when given.
  virtual const MemoryReader& begin(pid_t tid, uint64_t* ns, uint64_t primed_at,
                                    std::span<const uint8_t> primed) = 0;
  // Whether a read of the current call went to the process (not all from the primed bytes).
  virtual bool read_remotely() const = 0;
};

// Which device a number or a caller's fd is.
class CallerFiles {
 public:
  virtual ~CallerFiles() = default;
  // The device with number `rdev`: the session's catalog's, else a never-granted entry when it
  // belongs to a guarded driver that registered since; nullptr: not a device of ours.
  virtual const DeviceNode* device(dev_t rdev) const = 0;
  // Whether fd `fd` of thread `tid` is open now; `node` is the device it is, or nullptr.
  virtual bool inspect_fd(pid_t tid, int fd, const DeviceNode*& node) = 0;
  // What fd `fd` of thread `tid` is as a dma-buf, and whether its exporter is one of
  // `exporters` (proxy/gpudirect/dmabuf_check.h).
  virtual DmabufVerdict dmabuf(pid_t tid, int fd, const std::vector<std::string>& exporters) = 0;
};

// Who a caller is, and whether it still waits in the call that trapped.
class Callers {
 public:
  virtual ~Callers() = default;
  // Thread `tid` as /proc shows it now (its ids in both pid namespaces, its comm).
  virtual const ProcessIdentity& identity(pid_t tid) = 0;
  // Notification `id` still waits for its answer (SECCOMP_IOCTL_NOTIF_ID_VALID): its caller is
  // the thread that trapped, so what was read of that thread was its own.
  virtual bool still_waiting(uint64_t id) = 0;
};

// Which GPU an NVIDIA device instance is, asked of the driver (proxy/devices/nvidia_gpus.h).
class GpuInstances {
 public:
  virtual ~GpuInstances() = default;
  // Every GPU with its minor and device instance now; nullopt and `why` when the driver does not
  // answer.
  virtual std::optional<std::vector<NvidiaGpu>> gpus(std::string& why) = 0;
};

// What an open's path names for its caller (the open broker, proxy/broker/open_broker.h).
class OpenPaths {
 public:
  virtual ~OpenPaths() = default;
  // Reads the open `req`'s arguments into `call` (false: they cannot be read) and decides what
  // its path names into `d`.
  virtual bool decide(const seccomp_notif& req, OpenCall& call, OpenDecision& d) = 0;
};

// What a caller's pidfd names, and the take of a target's fd with the caller's credentials
// (proxy/broker/fd_broker.h).
class PidfdTargets {
 public:
  virtual ~PidfdTargets() = default;
  struct Target {
    // kCallerGone: the caller cannot be reached (no pidfd of it); kUnreadable: its fd cannot be
    // taken from it; kRead: the fields below say what the fd names.
    enum class Status { kCallerGone, kUnreadable, kRead } status = Status::kCallerGone;
    UniqueFd pidfd;   // the caller's fd, taken from it
    pid_t pid = -1;   // the process it names: -1 not a pidfd or gone, 0 not in our namespace
    ino_t pidns = 0;  // that process's pid namespace
    std::optional<std::string> helper;  // why it is a runtime's exec helper (runtime_helper_reason)
    bool alive = false;  // the pidfd still signals as alive after the above were read
  };
  // The pid namespace of the supervisor itself.
  virtual ino_t own_pid_namespace() = 0;
  // Caller `tid`'s fd `pidfd_nr`, taken from it, and what it names.
  virtual Target target(pid_t tid, int pidfd_nr) = 0;
  // fd `target_fd` of the process behind `target_pidfd`, taken with caller `tid`'s credentials.
  virtual TakenFd take(pid_t tid, int target_pidfd, int target_fd) = 0;
};

// Every input of the handler, by reference.
struct CallInputs {
  CallerMemory& memory;
  CallerFiles& files;
  Callers& callers;
  GpuInstances& gpus;
  OpenPaths& opens;
  PidfdTargets& pidfds;
};

}  // namespace gdrproxy::proxy
