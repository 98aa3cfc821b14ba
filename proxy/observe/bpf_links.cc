// libbpf's print hook and link teardown shared by the BPF loaders (see bpf_links.h).
#include "proxy/observe/bpf_links.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <string_view>
#include <system_error>
#include <thread>

#include "base/process_info.h"

namespace gdrproxy::proxy {
namespace {

int silent_print(enum libbpf_print_level, const char*, va_list) {
  return 0;
}

}  // namespace

void silence_libbpf() {
  libbpf_set_print(silent_print);
}

bpf_object* load_embedded_bpf(const void* bytes, size_t size, const std::string& what,
                              std::string& why, const char* eperm_hint) {
  silence_libbpf();
  bpf_object* obj = bpf_object__open_mem(bytes, size, nullptr);
  if (!obj) {
    why = what + " open: " + std::strerror(errno);
    return nullptr;
  }
  if (const int rc = bpf_object__load(obj); rc != 0) {
    why = what + " load: " + std::strerror(-rc) + (rc == -EPERM ? eperm_hint : "");
    bpf_object__close(obj);
    return nullptr;
  }
  // Before any program runs: the pid namespace whose ids the programs report.
  const uint32_t zero = 0, pidns = own_pid_namespace_inode();
  if (!pidns) {
    why = what +
          " supervisor_pidns: /proc/self/ns/pid is unreadable, so callers cannot be told "
          "by the ids seen here";
    bpf_object__close(obj);
    return nullptr;
  }
  if (bpf_map_update_elem(bpf_object__find_map_fd_by_name(obj, "supervisor_pidns"), &zero, &pidns,
                          BPF_ANY) != 0) {
    why = what + " supervisor_pidns: " + std::strerror(errno);
    bpf_object__close(obj);
    return nullptr;
  }
  return obj;
}

bool attach_every_program(bpf_object* obj, bool lsm, std::vector<bpf_link*>& links,
                          const std::string& what, std::string& why) {
  bpf_program* prog;
  bpf_object__for_each_program(prog, obj) {
    bpf_link* link = lsm ? bpf_program__attach_lsm(prog) : bpf_program__attach(prog);
    if (!link) {
      why = what + " attach " + bpf_program__name(prog) + ": " + std::strerror(errno);
      return false;
    }
    links.push_back(link);
  }
  return true;
}

void destroy_links_side_by_side(std::vector<bpf_link*>& links) {
  std::vector<std::thread> detach;
  for (bpf_link* l : links) {
    try {
      detach.emplace_back([l] { bpf_link__destroy(l); });
    } catch (const std::system_error&) {
      bpf_link__destroy(l);  // no thread to spare: one after the other
    }
  }
  for (std::thread& t : detach) t.join();
  links.clear();
}

void with_tracefs(const std::function<void()>& fn) {
  struct stat st;
  if (::stat("/sys/kernel/tracing/events", &st) == 0 ||
      ::stat("/sys/kernel/debug/tracing/events", &st) == 0) {
    fn();
    return;
  }
  std::exception_ptr failed;
  auto in_own_mounts = [&] {
    // CLONE_NEWNS gives this thread its own fs_struct too; the process's other threads keep
    // theirs. Private propagation first, so the mount reaches no other namespace. Should either
    // step fail, fn runs anyway and its attach says why it could not.
    if (::unshare(CLONE_NEWNS) == 0 &&
        ::mount(nullptr, "/", nullptr, MS_REC | MS_PRIVATE, nullptr) == 0)
      ::mount("tracefs", "/sys/kernel/tracing", "tracefs", 0, nullptr);
    try {
      fn();
    } catch (...) {
      failed = std::current_exception();
    }
  };
  try {
    std::thread(in_own_mounts).join();
  } catch (const std::system_error&) {
    fn();  // no thread to spare: here, where the attach says why it could not
    return;
  }
  if (failed) std::rethrow_exception(failed);
}

void detach_bpf_after_exit() {
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

}  // namespace gdrproxy::proxy
