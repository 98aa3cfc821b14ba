// The Engine: what every sandbox served by this process shares. One per process (`gdrproxy run`
// makes one for its single session; `gdrproxy agent` one for all its containers): the event loop,
// the device catalog, the NVIDIA driver's identity, the trace sequence numbers, and the BPF exit
// observer. The idea not to miss: the observer is one for all sessions (N sessions must not put N
// copies of its programs on every ioctl exit of the host), so its events are routed back to the
// session that registered them, by the session id in each registration's cookie or by the
// process whose fd is watched.
// Sessions never share mutable state; the engine holds only routing tables to them. Each session
// runs on a thread of its own: what they call here (next_seq, the routing) is thread-safe; the
// rest is the engine's loop's. The trap copies (proxy/observe/trap_copy.h) are one for all sessions
// too, and read by every session thread without a lock: a slot names its notification.
#pragma once

#include <atomic>
#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <boost/asio/steady_timer.hpp>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "proxy/abi/nvidia_abi_choice.h"
#include "proxy/devices/device_catalog.h"
#include "proxy/devices/live_catalog.h"
#include "proxy/observe/exit_observer.h"
#include "proxy/observe/trap_copy.h"

namespace gdrproxy::proxy {

class Session;

// The loaded NVIDIA driver, as far as this build can tell.
struct NvidiaDriver {
  std::optional<std::string> version;  // the kernel module's, if readable
  // The tables calls are named and judged with (nvidia_abi_choice.h): the driver's own, its
  // branch's nearest lower release, or the operator's; when none applies, those it is named
  // with (trace-only).
  const NvidiaDriverAbi* abi = nullptr;
  std::string notice;   // what was chosen and why, when not the driver's own
  bool known = false;   // `abi` judges calls (not only names them)
  bool loaded = false;  // a driver is loaded (its /proc entry exists)
  std::string ctl_path = "/dev/nvidiactl";
  unsigned major = 195;  // the frontend's character major
};

class Engine {
 public:
  // `nvidia_abi_as`: the release whose tables judge the node's NVIDIA driver, when the operator
  // names one (--nvidia-abi-as); throws gdrproxy::Error when the build has no such tables.
  explicit Engine(DeviceCatalog catalog,
                  const std::optional<std::string>& nvidia_abi_as = std::nullopt);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  boost::asio::io_context& io() { return io_; }
  // The catalog scanned at start (lives as long as the engine).
  const DeviceCatalog& catalog() const { return *start_catalog_; }
  // The newest catalog (drivers registered since start included) and the lookup of device
  // numbers a session's own catalog lacks.
  std::shared_ptr<const DeviceCatalog> current_catalog() const { return live_catalog_.snapshot(); }
  const LiveCatalog& live_catalog() const { return live_catalog_; }
  const NvidiaDriver& nvidia() const { return nvidia_; }
  // The kernel's sizes of the notification structs (SECCOMP_GET_NOTIF_SIZES): a notification is
  // received into a buffer of the larger of the kernel's and this build's size.
  size_t notif_size() const { return notif_size_; }
  // Unique across every session of this engine.
  uint64_t next_seq() { return ++seq_; }

  // The shared observer, loaded on first use; nullptr (and `why`) where the kernel or the
  // privileges refuse it. Its ring buffer is served on the engine's loop.
  ExitObserver* observer(std::string& why);
  // Takes what the observer's ring holds now (nothing without an observer) and hands each
  // session its results in one batch: one post to its thread per drain, not one per call. The
  // loop does it every kObserverDrain; `gdrproxy run` once more after its session's last call.
  void drain_observer();
  // Trap copies for every session from then on; call once, before serving. kOn loads them here
  // and throws Error with the kernel's reason where they cannot be had. kAuto loads them on a
  // thread of their own (libbpf's reading of the kernel's BTF takes tens of milliseconds, which
  // a short command would otherwise wait for): calls before they are ready are looked up as
  // without them. kOff does nothing.
  void start_trap_copies(TrapCopyChoice choice);
  // Why trap copies are not in use (empty: they are, or were never asked for); waits for a load
  // under way.
  std::string trap_copies_unavailable();
  // nullptr: the sessions look every call up themselves. Thread-safe.
  const TrapCopies* trap_copies() const {
    return trap_copies_ ? trap_copies_->ready.load(std::memory_order_acquire) : nullptr;
  }
  // Routing of observer events. A session is given an id when it is made, and puts it in the
  // cookie of each result it registers (the high half; ExitObserver::expect): results go by it to
  // their session, with no per-call table. write()s on the watched fds of process `tgid` go to
  // the session that routed `tgid`. forget() ends both for a session.
  uint32_t attach(Session* s);
  void route_tgid(uint32_t tgid, Session* s) {
    std::lock_guard<std::mutex> lock(routes_mu_);
    by_tgid_[tgid] = s;
  }
  void forget(Session* s);

 private:
  void arm_observer();
  void arm_drain();

  boost::asio::io_context io_;
  LiveCatalog live_catalog_;
  std::shared_ptr<const DeviceCatalog> start_catalog_;
  NvidiaDriver nvidia_;
  std::atomic<uint64_t> seq_{0};
  size_t notif_size_ = 0;
  std::unique_ptr<ExitObserver> observer_;
  std::string observer_why_;
  bool observer_tried_ = false;
  // Shared with the loading thread, which an engine ending before the load has finished (a short
  // `gdrproxy run`) leaves to finish on its own instead of waiting for it.
  struct TrapCopiesLoad {
    std::unique_ptr<TrapCopies> copies;
    std::string why;
    std::atomic<const TrapCopies*> ready{nullptr};  // copies, once loaded
    std::atomic<bool> done{false};
  };
  std::shared_ptr<TrapCopiesLoad> trap_copies_;
  std::thread trap_copies_loader_;
  std::unique_ptr<boost::asio::posix::stream_descriptor> ring_;
  // Results are submitted without a wake-up (one per call would cost a cross-CPU wake-up of this
  // loop on every trapped call): they are drained every kObserverDrain, or at once when the ring
  // fills past GDRPROXY_RING_WAKE_BYTES.
  std::unique_ptr<boost::asio::steady_timer> drain_;
  std::mutex routes_mu_;                   // sessions route from their threads, the loop delivers
  std::map<uint32_t, Session*> sessions_;  // by id (attach)
  uint32_t last_session_id_ = 0;
  std::map<uint32_t, Session*> by_tgid_;
  std::vector<gdrproxy_exit_event> drained_;  // the loop's: events of the drain under way
};

}  // namespace gdrproxy::proxy
