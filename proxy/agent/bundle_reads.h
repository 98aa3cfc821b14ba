// Reading containers' bundles off the agent's loop. The idea not to miss: a bundle's config.json
// lives on whatever filesystem the runtime put it on, and a read of a hung one never returns (the
// kernel waits for the filesystem, not for us), so the read runs on a thread of its own and the
// loop only waits for its answer, until a deadline. A read past its deadline refuses that
// handover; its thread stays blocked in the kernel, and after a few such threads further reads
// are refused at once rather than pile up more.
#pragma once

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <string>

#include "proxy/agent/pod_identity.h"
#include "proxy/sandbox/profile_untrapped.h"

namespace gdrproxy::proxy {

class BundleReads {
 public:
  struct Result {
    bool ok = false;
    std::string why;  // !ok: one line naming the bundle and what did not hold
    ProfileUntrapped untrapped;
    PodIdentity pod;  // the Kubernetes pod and container its annotations name (pod_identity.h)
  };
  using Done = std::function<void(Result)>;

  BundleReads(boost::asio::io_context& io, std::chrono::milliseconds deadline, size_t max_stuck);
  ~BundleReads();  // answers that come later are dropped
  BundleReads(const BundleReads&) = delete;
  BundleReads& operator=(const BundleReads&) = delete;

  // bundle_hands_listener_to(bundle, socket, metadata) on a thread of its own; `done` runs once,
  // on the loop, with its result, or with a refusal when it has not returned by the deadline or
  // too many reads are stuck already.
  void check(const std::string& bundle, const std::string& socket, const std::string& metadata,
             Done done);
  // Reads past their deadline whose thread has not returned.
  size_t stuck() const;

 private:
  struct Shared;
  boost::asio::io_context& io_;
  const std::chrono::milliseconds deadline_;
  const size_t max_stuck_;
  std::shared_ptr<Shared> shared_;
};

}  // namespace gdrproxy::proxy
