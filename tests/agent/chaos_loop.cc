// A container's device traffic for the agent's chaos test: THREADS threads each loop, as fast as
// they can, over trapped calls (an open of the granted node for writing, a well-formed uverbs
// ioctl on that fd, an open of an ungranted node for writing), counting every call's outcome by
// errno, until STOPFILE exists; then each does FINAL more rounds and stops. The idea not to miss:
// a thread whose call is never answered never finishes, so the process never prints or exits (the
// test then reads that thread's wchan); and each thread's last round is printed apart, since it
// ran after the agent's last restart and shows whether the container is still served.
// Usage: chaos_loop THREADS STOPFILE FINAL GRANTED DENIED
// Output, once every thread finished: "<call> <OK|errno name> <count>" per call and outcome (all
// threads), "rounds <n>", then per thread "final <t> open=<..> ioctl=<..> denied=<..>".
#include <fcntl.h>
#include <rdma/ib_user_verbs.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "demo/verbs_request.h"

namespace {

constexpr long kMaxRounds = 5'000'000;  // a bound even if STOPFILE never comes

const char* outcome(long rc) {
  if (rc >= 0) return "OK";
  const char* n = strerrorname_np(errno);
  return n ? n : "E?";
}

struct Tally {
  std::map<std::string, long> counts;  // "<call> <outcome>"
  const char* last_open = "-";         // static strings: "OK", an errno name, "-"
  const char* last_ioctl = "-";
  const char* last_denied = "-";
  long rounds = 0;
};

void loop(const char* stopfile, long final_rounds, const char* granted, const char* denied,
          Tally& t) {
  static ib_uverbs_alloc_pd in{};
  thread_local ib_uverbs_alloc_pd_resp out{};
  gdrproxy::demo::VerbsRequest r(UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE);
  r.ptr(UVERBS_ATTR_CORE_IN, &in, sizeof in)
      .ptr(UVERBS_ATTR_CORE_OUT, &out, sizeof out)
      .inline_u64(UVERBS_ATTR_WRITE_CMD, IB_USER_VERBS_CMD_ALLOC_PD, 4);
  std::vector<uint8_t> req = r.bytes();
  long left = -1;  // rounds left once STOPFILE is seen
  while (left != 0 && t.rounds < kMaxRounds) {
    if (left < 0 && ::access(stopfile, F_OK) == 0) left = final_rounds;
    const int fd = ::open(granted, O_RDWR | O_CLOEXEC);
    t.last_open = outcome(fd);
    ++t.counts[std::string("open-granted ") + t.last_open];
    t.last_ioctl = "-";
    if (fd >= 0) {
      t.last_ioctl = outcome(::ioctl(fd, RDMA_VERBS_IOCTL, req.data()));
      ++t.counts[std::string("ioctl-granted ") + t.last_ioctl];
      ::close(fd);
    }
    const int d = ::open(denied, O_RDWR | O_CLOEXEC);
    t.last_denied = outcome(d);
    ++t.counts[std::string("open-denied ") + t.last_denied];
    if (d >= 0) ::close(d);
    ++t.rounds;
    if (left > 0) --left;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 6) {
    std::fprintf(stderr, "usage: chaos_loop THREADS STOPFILE FINAL GRANTED DENIED\n");
    return 2;
  }
  const int threads = std::atoi(argv[1]);
  const long final_rounds = std::atol(argv[3]);
  if (threads < 1 || threads > 64 || final_rounds < 1) return 2;
  std::vector<Tally> tallies(static_cast<size_t>(threads));
  std::vector<std::thread> running;
  for (Tally& t : tallies)
    running.emplace_back(loop, argv[2], final_rounds, argv[4], argv[5], std::ref(t));
  for (std::thread& th : running) th.join();
  std::map<std::string, long> all;
  long rounds = 0;
  for (const Tally& t : tallies) {
    for (const auto& [k, n] : t.counts) all[k] += n;
    rounds += t.rounds;
  }
  for (const auto& [k, n] : all) std::printf("%s %ld\n", k.c_str(), n);
  std::printf("rounds %ld\n", rounds);
  for (size_t i = 0; i < tallies.size(); ++i)
    std::printf("final %zu open=%s ioctl=%s denied=%s\n", i, tallies[i].last_open,
                tallies[i].last_ioctl, tallies[i].last_denied);
  return 0;
}
