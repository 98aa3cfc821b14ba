// A container's device calls in the agent soak (tests/bench/agent_soak.sh): ROUNDS rounds of an
// open of the granted node, a well-formed uverbs ioctl on it and an open of a node the container
// is not granted, each call's outcome counted by errno and the longest wait of any call measured.
// The idea not to miss: the verdict is the client's own exit status, so a container whose
// listener was lost (ENOSYS), or which gained a grant (the ungranted open succeeded), fails
// wherever it ran; EINTR is allowed on every call, since a call the killed agent had received is
// answered EINTR by the next one (it did not run). A call never answered leaves the client
// blocked: the script's bounded wait reports that container as hung.
// Usage: soak_client ROUNDS GRANTED DENIED
// Output: "<call> <OK|errno name> <count>" per call and outcome, "max-wait-us <n>", "verdict
// <ok|lost-listener|gained-grant|unexpected>"; exit 0 only for ok.
#include <fcntl.h>
#include <rdma/ib_user_verbs.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "demo/verbs_request.h"

namespace {

long long now_us() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1'000'000LL + t.tv_nsec / 1000;
}

std::string outcome(long rc, int err) {
  if (rc >= 0) return "OK";
  const char* n = strerrorname_np(err);
  return n ? n : "E?";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 4 || std::atol(argv[1]) < 1) {
    std::fprintf(stderr, "usage: soak_client ROUNDS GRANTED DENIED\n");
    return 2;
  }
  const long rounds = std::atol(argv[1]);
  const char* granted = argv[2];
  const char* denied = argv[3];
  static ib_uverbs_alloc_pd in{};
  static ib_uverbs_alloc_pd_resp out{};
  gdrproxy::demo::VerbsRequest r(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
  r.ptr(UVERBS_ATTR_CORE_IN, &in, sizeof in)
      .ptr(UVERBS_ATTR_CORE_OUT, &out, sizeof out)
      .inline_u64(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_ALLOC_PD, 4);
  std::vector<uint8_t> req = r.bytes();
  std::map<std::string, long> counts;
  long long max_wait = 0;
  bool lost = false, gained = false, unexpected = false;
  // One call: its outcome counted and judged; `ok` is the outcome it should have.
  const auto judge = [&](const char* call, long rc, int err, long long t0, const char* ok) {
    max_wait = std::max(max_wait, now_us() - t0);
    const std::string o = outcome(rc, err);
    ++counts[std::string(call) + " " + o];
    if (o == ok || o == "EINTR") return;
    if (o == "ENOSYS") {
      lost = true;  // no listener: the kernel fails the trapped call
    } else if (std::strcmp(ok, "EACCES") == 0 && rc >= 0) {
      gained = true;
    } else if (std::strcmp(call, "ioctl-granted") != 0 || (o != "ENOTTY" && o != "EINVAL")) {
      unexpected = true;  // (the stand-in node is no uverbs device: its driver says ENOTTY)
    }
  };
  for (long i = 0; i < rounds; ++i) {
    long long t0 = now_us();
    const int fd = ::open(granted, O_RDWR | O_CLOEXEC);
    judge("open-granted", fd, errno, t0, "OK");
    if (fd >= 0) {
      t0 = now_us();
      const int rc = ::ioctl(fd, RDMA_VERBS_IOCTL, req.data());
      judge("ioctl-granted", rc, errno, t0, "ENOTTY");
      ::close(fd);
    }
    t0 = now_us();
    const int d = ::open(denied, O_RDWR | O_CLOEXEC);
    judge("open-denied", d, errno, t0, "EACCES");
    if (d >= 0) ::close(d);
  }
  for (const auto& [k, n] : counts) std::printf("%s %ld\n", k.c_str(), n);
  std::printf("max-wait-us %lld\n", max_wait);
  const char* verdict = lost         ? "lost-listener"
                        : gained     ? "gained-grant"
                        : unexpected ? "unexpected"
                                     : "ok";
  std::printf("verdict %s\n", verdict);
  return std::strcmp(verdict, "ok") == 0 ? 0 : 1;
}
