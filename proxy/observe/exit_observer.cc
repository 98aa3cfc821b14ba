#include "proxy/observe/exit_observer.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "proxy/engine/process_info.h"
#include "proxy/observe/bpf_links.h"
#include "proxy/observe/syscall_exit_bpf.h"

namespace gdrproxy::proxy {
namespace {

// libbpf finds tracepoint ids through tracefs. Where the host has not mounted it, it is mounted
// for the attach only and detached right after: the host's mount table is left as it was.
class TracefsForAttach {
 public:
  TracefsForAttach() {
    struct stat st;
    if (::stat("/sys/kernel/tracing/events", &st) == 0) return;
    if (::stat("/sys/kernel/debug/tracing/events", &st) == 0) return;
    mounted_ = ::mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, nullptr) == 0;
  }
  ~TracefsForAttach() {
    if (mounted_) ::umount2("/sys/kernel/tracing", MNT_DETACH);
  }

 private:
  bool mounted_ = false;
};

}  // namespace

std::unique_ptr<ExitObserver> ExitObserver::open(Callback cb, std::string& why) {
  silence_libbpf();
  TracefsForAttach tracefs;
  std::unique_ptr<ExitObserver> o(new ExitObserver());
  o->cb_ = std::move(cb);
  o->obj_ = bpf_object__open_mem(kSyscallExitBpf, kSyscallExitBpfSize, nullptr);
  if (!o->obj_) {
    why = std::string("bpf open: ") + std::strerror(errno);
    return nullptr;
  }
  if (int rc = bpf_object__load(o->obj_); rc != 0) {
    why = std::string("bpf load: ") + std::strerror(-rc);
    return nullptr;
  }
  // Before any program runs: which pid namespace's ids the programs report (see the program).
  const uint32_t zero = 0, pidns = own_pid_namespace_inode();
  if (!pidns) {
    why = "/proc/self/ns/pid is unreadable, so callers cannot be told by the ids seen here";
    return nullptr;
  }
  if (bpf_map_update_elem(bpf_object__find_map_fd_by_name(o->obj_, "supervisor_pidns"), &zero,
                          &pidns, BPF_ANY) != 0) {
    why = std::string("bpf supervisor_pidns: ") + std::strerror(errno);
    return nullptr;
  }
  bpf_program* prog;
  bpf_object__for_each_program(prog, o->obj_) {
    bpf_link* link = bpf_program__attach(prog);
    if (!link) {
      why = std::string("bpf attach ") + bpf_program__name(prog) + ": " + std::strerror(errno);
      return nullptr;
    }
    o->links_.push_back(link);
  }
  o->pending_fd_ = bpf_object__find_map_fd_by_name(o->obj_, "pending");
  o->cm_fds_fd_ = bpf_object__find_map_fd_by_name(o->obj_, "cm_fds");
  o->lost_fd_ = bpf_object__find_map_fd_by_name(o->obj_, "lost");
  int events_fd = bpf_object__find_map_fd_by_name(o->obj_, "events");
  auto on_event = [](void* ctx, void* data, size_t size) -> int {
    if (size >= sizeof(gdrproxy_exit_event))
      static_cast<ExitObserver*>(ctx)->cb_(*static_cast<const gdrproxy_exit_event*>(data));
    return 0;
  };
  o->rb_ = ring_buffer__new(events_fd, on_event, o.get(), nullptr);
  if (!o->rb_) {
    why = std::string("bpf ring buffer: ") + std::strerror(errno);
    return nullptr;
  }
  return o;
}

ExitObserver::~ExitObserver() {
  if (rb_) ring_buffer__free(rb_);
  // Links are not owned by the object: each is destroyed, which detaches its program.
  destroy_links_side_by_side(links_);
  if (obj_) bpf_object__close(obj_);
}

std::vector<uint32_t> ExitObserver::link_ids() const {
  std::vector<uint32_t> ids;
  for (bpf_link* l : links_) {
    bpf_link_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(bpf_link__fd(l), &info, &len) == 0) ids.push_back(info.id);
  }
  return ids;
}

void ExitObserver::detach_after_exit() {
  // This process's BPF objects and perf events, by what /proc says each fd is.
  std::vector<unsigned> keep;
  if (DIR* d = ::opendir("/proc/self/fd")) {
    while (dirent* e = ::readdir(d)) {
      char link[64];
      const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, link, sizeof link - 1);
      if (n <= 0) continue;
      link[n] = '\0';
      const std::string_view target(link, static_cast<size_t>(n));
      if (target.starts_with("anon_inode:") &&
          (target.find("bpf") != std::string_view::npos ||
           target.find("perf_event") != std::string_view::npos))
        keep.push_back(static_cast<unsigned>(std::atoi(e->d_name)));
    }
    ::closedir(d);
  }
  int p[2];
  if (keep.empty() || ::pipe2(p, O_CLOEXEC) != 0) return;
  keep.push_back(static_cast<unsigned>(p[0]));
  std::sort(keep.begin(), keep.end());
  const pid_t pid = ::fork();
  if (pid == 0) {
    // Only async-signal-safe calls from here: this process has other threads.
    unsigned next = 0;
    for (unsigned fd : keep) {
      if (fd > next) ::close_range(next, fd - 1, 0);
      next = fd + 1;
    }
    ::close_range(next, ~0U, 0);
    char c;
    while (::read(p[0], &c, 1) < 0 && errno == EINTR) {
    }
    ::_exit(0);
  }
  ::close(p[0]);
  // p[1] stays open until this process exits: its end of file tells the child to go.
}

void ExitObserver::unwatch_cm_fd(uint32_t tgid, uint32_t fd) {
  gdrproxy_cm_fd key{tgid, fd};
  bpf_map_delete_elem(cm_fds_fd_, &key);
}

bool ExitObserver::expect(uint32_t tid, uint64_t seq, const ResultRegion& r0,
                          const ResultRegion& r1, bool watch_rdma_cm) {
  gdrproxy_pending p{
      seq,     r0.addr,
      r1.addr, r0.len,
      r1.len,  watch_rdma_cm ? gp_u32{GDRPROXY_EVENT_CM_OPEN} : gp_u32{GDRPROXY_EVENT_RESULT},
      0,       0};
  return bpf_map_update_elem(pending_fd_, &tid, &p, BPF_ANY) == 0;
}

void ExitObserver::forget(uint32_t tid) {
  bpf_map_delete_elem(pending_fd_, &tid);
}

int ExitObserver::poll_fd() const {
  return ring_buffer__epoll_fd(rb_);
}

void ExitObserver::consume() {
  ring_buffer__consume(rb_);
}

uint64_t ExitObserver::lost() const {
  uint32_t zero = 0;
  uint64_t n = 0;
  if (lost_fd_ >= 0) bpf_map_lookup_elem(lost_fd_, &zero, &n);
  return n;
}

}  // namespace gdrproxy::proxy
