// The library probe (see probe.h).
#include "doctor/probe.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <sstream>

#include "base/file_io.h"
#include "base/unique_fd.h"

namespace gdrproxy::doctor {
namespace {

using Clock = std::chrono::steady_clock;

// Writes all of `s`, ignoring failures (the parent may have gone).
void put(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = ::write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    off += static_cast<size_t>(n);
  }
}

// One line per field, tabs and newlines of a dlerror() text flattened.
std::string flat(const char* s) {
  std::string out = s ? s : "dlopen failed";
  for (char& c : out)
    if (c == '\n' || c == '\t') c = ' ';
  return out;
}

[[noreturn]] void child(const std::vector<std::string>& libraries, int out) {
  ::prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (int null = ::open("/dev/null", O_RDWR | O_CLOEXEC); null >= 0) {
    ::dup2(null, STDOUT_FILENO);  // a constructor's chatter is not the doctor's output
    ::dup2(null, STDERR_FILENO);
  }
  for (const auto& name : libraries) {
    put(out, "TRY\t" + name + "\n");
    if (::dlopen(name.c_str(), RTLD_LAZY | RTLD_LOCAL))
      put(out, "OK\t" + name + "\n");
    else
      put(out, "NO\t" + name + "\t" + flat(::dlerror()) + "\n");
  }
  put(out, "DONE\n");
  for (;;) ::pause();  // mapped until the parent has read /proc/PID/maps and kills it
}

void parse(const std::string& text, ProbeResult& r, bool* done) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    std::vector<std::string> f;
    std::istringstream fields(line);
    for (std::string x; std::getline(fields, x, '\t');) f.push_back(x);
    if (f.empty()) continue;
    if (f[0] == "TRY" && f.size() >= 2) r.stuck = f[1];
    if (f[0] == "OK" && f.size() >= 2) r.loaded.push_back(f[1]), r.stuck.clear();
    if (f[0] == "NO" && f.size() >= 3) {
      // dlerror() usually starts with the name itself: said once.
      std::string why = f[2];
      if (why.compare(0, f[1].size() + 2, f[1] + ": ") == 0) why.erase(0, f[1].size() + 2);
      r.absent.push_back(f[1] + ": " + why);
      r.stuck.clear();
    }
    if (f[0] == "DONE") *done = true;
  }
}

void kill_and_reap(pid_t pid) {
  ::kill(pid, SIGKILL);
  // A child stuck in the kernel (D state) dies only when it leaves it: wait a little, then leave
  // it killed rather than hang the doctor.
  const auto until = Clock::now() + std::chrono::milliseconds(500);
  for (;;) {
    pid_t w = ::waitpid(pid, nullptr, WNOHANG);
    if (w == pid || (w < 0 && errno != EINTR)) return;
    if (Clock::now() >= until) return;
    ::usleep(2000);
  }
}

}  // namespace

ProbeResult run_probe(const std::vector<std::string>& libraries, std::chrono::milliseconds timeout,
                      const std::string& proc_root) {
  ProbeResult r;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.error = std::string("pipe2: ") + std::strerror(errno);
    return r;
  }
  UniqueFd rd(fds[0]), wr(fds[1]);
  const pid_t pid = ::fork();
  if (pid < 0) {
    r.error = std::string("fork: ") + std::strerror(errno);
    return r;
  }
  if (pid == 0) {
    rd.reset();
    child(libraries, wr.get());
  }
  r.pid = pid;
  wr.reset();
  std::string text;
  bool done = false, eof = false;
  const auto deadline = Clock::now() + timeout;
  while (!done) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{rd.get(), POLLIN, 0};
    const int n = ::poll(&p, 1, static_cast<int>(left));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    char buf[4096];
    const ssize_t got = ::read(rd.get(), buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) {  // the child died before it finished
      eof = true;
      break;
    }
    text.append(buf, static_cast<size_t>(got));
    if (text.find("DONE\n") != std::string::npos) done = true;
  }
  parse(text, r, &done);
  r.timed_out = !done && !eof;
  if (!done && eof)
    r.error =
        "the probe child died" + (r.stuck.empty() ? std::string() : " while loading " + r.stuck);
  if (auto maps = read_file(proc_root + "/" + std::to_string(pid) + "/maps", 16u << 20); maps.data)
    r.maps = *maps.data;
  kill_and_reap(pid);
  return r;
}

}  // namespace gdrproxy::doctor
