// The received-id page and the two probes (see received_ids.h).
#include "proxy/engine/received_ids.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <utility>

#include "base/error.h"
#include "proxy/engine/seccomp_notify.h"

namespace gdrproxy::proxy {
namespace {

constexpr size_t kPageBytes = kReceivedIdPageBytes;

std::atomic<uint64_t>* map_slot(int fd) {
  void* p = ::mmap(nullptr, kPageBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) throw_errno("cannot map a received-id page", errno);
  return static_cast<std::atomic<uint64_t>*>(p);
}

// Answers each SENT notification of `ids` [from, from + count).
unsigned answer_sent(int nfd, uint64_t from, uint64_t count) {
  unsigned answered = 0;
  for (uint64_t i = 0; i < count; ++i) {
    const uint64_t id = from + i;  // wraps like the kernel's counter
    if (notif_id_valid(nfd, id) && notif_error(nfd, id, kStrandedErrno) == 0) ++answered;
  }
  return answered;
}

}  // namespace

static_assert(std::atomic<uint64_t>::is_always_lock_free, "the page is shared between processes");

ReceivedIdPage ReceivedIdPage::create() {
  UniqueFd fd(::memfd_create("gdrproxy-received-id", MFD_CLOEXEC));
  if (!fd) throw_errno("cannot make a received-id page (memfd_create)", errno);
  if (::ftruncate(fd.get(), kPageBytes) != 0) throw_errno("cannot size a received-id page", errno);
  ReceivedIdPage p;
  p.slot_ = map_slot(fd.get());
  p.fd_ = std::move(fd);
  return p;
}

ReceivedIdPage ReceivedIdPage::adopt(UniqueFd memfd) {
  struct stat st;
  if (!memfd || ::fstat(memfd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size != static_cast<off_t>(kPageBytes))
    throw Error("the fd store's received-id page is not one");
  ReceivedIdPage p;
  p.slot_ = map_slot(memfd.get());
  p.fd_ = std::move(memfd);
  p.stored_ = p.slot_->load(std::memory_order_relaxed);
  p.recovering_ = true;
  return p;
}

ReceivedIdPage::ReceivedIdPage(ReceivedIdPage&& o) noexcept
    : fd_(std::move(o.fd_)),
      slot_(std::exchange(o.slot_, nullptr)),
      stored_(o.stored_),
      recovering_(std::exchange(o.recovering_, false)) {}

ReceivedIdPage& ReceivedIdPage::operator=(ReceivedIdPage&& o) noexcept {
  if (this != &o) {
    if (slot_) ::munmap(slot_, kPageBytes);
    fd_ = std::move(o.fd_);
    slot_ = std::exchange(o.slot_, nullptr);
    stored_ = o.stored_;
    recovering_ = std::exchange(o.recovering_, false);
  }
  return *this;
}

ReceivedIdPage::~ReceivedIdPage() {
  if (slot_) ::munmap(slot_, kPageBytes);
}

unsigned ReceivedIdPage::probe(int listener_fd) const {
  // 0 is "nothing received" (a page made before the first RECV): no id to start from.
  if (!recovering_ || stored_ == 0) return 0;
  return answer_sent(listener_fd, stored_, kProbeAbove + 1);
}

unsigned ReceivedIdPage::probe_below(int listener_fd, uint64_t first) {
  if (!std::exchange(recovering_, false)) return 0;
  // Above the stored id (already probed) when it is near, else the kProbeBelow just below.
  const uint64_t gap = first - stored_;  // modulo 2^64, as the ids
  const uint64_t count = stored_ != 0 && gap > 0 && gap <= kProbeBelow ? gap - 1 : kProbeBelow;
  return answer_sent(listener_fd, first - count, count);
}

}  // namespace gdrproxy::proxy
