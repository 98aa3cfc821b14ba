// The Engine's shared parts: NVIDIA driver detection at construction, the observer opened once
// and served on the loop, and the routing of its events to sessions.
#include "proxy/engine/engine.h"

#include <linux/seccomp.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <chrono>
#include <system_error>

#include "base/error.h"
#include "proxy/abi/nvidia_abi_choice.h"
#include "proxy/engine/session.h"

namespace gdrproxy::proxy {
namespace {

// How long a result may wait in the observer's ring before the loop drains it: short beside a
// trace reader's patience, long beside a trapped call (a few microseconds).
constexpr std::chrono::milliseconds kObserverDrain{2};

}  // namespace

Engine::Engine(DeviceCatalog catalog, const std::optional<std::string>& nvidia_abi_as)
    : live_catalog_(std::move(catalog)), start_catalog_(live_catalog_.snapshot()) {
  seccomp_notif_sizes sizes{};
  notif_size_ = sizeof(seccomp_notif);
  if (::syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) == 0 &&
      sizes.seccomp_notif > notif_size_)
    notif_size_ = sizes.seccomp_notif;
  nvidia_.version = detect_nvidia_driver_version();
  NvidiaAbiChoice choice = choose_nvidia_abi(nvidia_.version, nvidia_abi_as);
  nvidia_.known = choice.abi != nullptr;
  nvidia_.abi = choice.abi ? choice.abi : choice.naming;
  nvidia_.notice = std::move(choice.notice);
  nvidia_.loaded = nvidia_.version || ::access("/proc/driver/nvidia", F_OK) == 0;
  for (const DeviceNode& n : start_catalog_->nodes()) {
    if (n.device_class == DeviceClass::kNvidiaFrontend && n.name == "nvidiactl") {
      nvidia_.ctl_path = n.path;
      nvidia_.major = major(n.rdev);
    }
  }
}

Engine::~Engine() {
  if (!trap_copies_loader_.joinable()) return;
  if (trap_copies_->done.load(std::memory_order_acquire))
    trap_copies_loader_.join();
  else
    trap_copies_loader_.detach();  // it holds its own reference to what it loads into
}

ExitObserver* Engine::observer(std::string& why) {
  if (!observer_tried_) {
    observer_tried_ = true;
    observer_ = ExitObserver::open([this](const gdrproxy_exit_event& e) { drained_.push_back(e); },
                                   observer_why_);
    if (observer_) {
      arm_observer();
      drain_ = std::make_unique<boost::asio::steady_timer>(io_);
      arm_drain();
    }
  }
  if (!observer_) why = observer_why_;
  return observer_.get();
}

void Engine::start_trap_copies(TrapCopyChoice choice) {
  if (choice == TrapCopyChoice::kOff || trap_copies_) return;
  trap_copies_ = std::make_shared<TrapCopiesLoad>();
  const auto load = [](const std::shared_ptr<TrapCopiesLoad>& l) {
    l->copies = TrapCopies::open(l->why);
    l->ready.store(l->copies.get(), std::memory_order_release);
    l->done.store(true, std::memory_order_release);
  };
  if (choice == TrapCopyChoice::kAuto) {
    try {
      trap_copies_loader_ = std::thread(
          [load](const std::shared_ptr<TrapCopiesLoad>& l) {
            pthread_setname_np(pthread_self(), "gdrproxy-bpf");  // for ps, top, perf and gdb
            load(l);
          },
          trap_copies_);
      return;
    } catch (const std::system_error&) {
      // No thread to spare: load here, then.
    }
  }
  load(trap_copies_);
  if (choice == TrapCopyChoice::kOn && !trap_copies_->copies)
    throw Error("--trap-copy on: the kernel refuses the trap-copy program (" + trap_copies_->why +
                ")");
}

std::string Engine::trap_copies_unavailable() {
  if (trap_copies_loader_.joinable()) trap_copies_loader_.join();
  return trap_copies_ ? trap_copies_->why : std::string();
}

void Engine::arm_observer() {
  if (!ring_)
    ring_ =
        std::make_unique<boost::asio::posix::stream_descriptor>(io_, ::dup(observer_->poll_fd()));
  ring_->async_wait(boost::asio::posix::stream_descriptor::wait_read,
                    [this](const boost::system::error_code& ec) {
                      if (ec) return;
                      drain_observer();
                      arm_observer();
                    });
}

void Engine::arm_drain() {
  drain_->expires_after(kObserverDrain);
  drain_->async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
    drain_observer();
    arm_drain();
  });
}

// On the loop, which is also where sessions are destroyed: a session found here is alive.
void Engine::drain_observer() {
  if (!observer_) return;
  observer_->consume();
  if (drained_.empty()) return;
  std::map<Session*, std::vector<gdrproxy_exit_event>> batches;
  {
    std::lock_guard<std::mutex> lock(routes_mu_);
    for (const gdrproxy_exit_event& e : drained_) {
      Session* s = nullptr;
      if (e.kind == GDRPROXY_EVENT_CM_WRITE) {
        // The watch was registered for the writer's process, which may be gone by now.
        const auto it = by_tgid_.find(e.tgid);
        if (it != by_tgid_.end()) s = it->second;
      } else {
        const auto it = sessions_.find(static_cast<uint32_t>(e.cookie >> 32));
        if (it != sessions_.end()) s = it->second;
      }
      if (s) batches[s].push_back(e);
    }
  }
  drained_.clear();
  for (auto& [s, events] : batches) s->deliver(std::move(events));
}

uint32_t Engine::attach(Session* s) {
  std::lock_guard<std::mutex> lock(routes_mu_);
  // Never 0 (no session: rdma_cm writes), never one in use; 2^32 sessions before a wrap.
  do ++last_session_id_;
  while (last_session_id_ == 0 || sessions_.contains(last_session_id_));
  sessions_[last_session_id_] = s;
  return last_session_id_;
}

void Engine::forget(Session* s) {
  std::lock_guard<std::mutex> lock(routes_mu_);
  std::erase_if(sessions_, [s](const auto& kv) { return kv.second == s; });
  std::erase_if(by_tgid_, [s](const auto& kv) { return kv.second == s; });
}

}  // namespace gdrproxy::proxy
