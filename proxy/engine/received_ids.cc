// The received-id page and the two probes (see received_ids.h).
#include "proxy/engine/received_ids.h"

#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
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

ReceivedIdPage ReceivedIdPage::adopt(UniqueFd memfd, bool handle_again) {
  struct stat st;
  if (!memfd || ::fstat(memfd.get(), &st) != 0 || !S_ISREG(st.st_mode) ||
      st.st_size != static_cast<off_t>(kPageBytes))
    throw Error("the fd store's received-id page is not one");
  ReceivedIdPage p;
  p.slot_ = map_slot(memfd.get());
  p.fd_ = std::move(memfd);
  p.stored_ = p.slot_->load(std::memory_order_relaxed);
  p.recovering_ = true;
  p.handle_again_ = handle_again;
  return p;
}

ReceivedIdPage::ReceivedIdPage(ReceivedIdPage&& o) noexcept
    : fd_(std::move(o.fd_)),
      slot_(std::exchange(o.slot_, nullptr)),
      stored_(o.stored_),
      recovering_(std::exchange(o.recovering_, false)),
      handle_again_(std::exchange(o.handle_again_, false)) {}

ReceivedIdPage& ReceivedIdPage::operator=(ReceivedIdPage&& o) noexcept {
  if (this != &o) {
    if (slot_) ::munmap(slot_, kPageBytes);
    fd_ = std::move(o.fd_);
    slot_ = std::exchange(o.slot_, nullptr);
    stored_ = o.stored_;
    recovering_ = std::exchange(o.recovering_, false);
    handle_again_ = std::exchange(o.handle_again_, false);
  }
  return *this;
}

ReceivedIdPage::~ReceivedIdPage() {
  if (slot_) ::munmap(slot_, kPageBytes);
}

std::optional<std::vector<uint64_t>> ReceivedIdPage::take_stranded(int listener_fd,
                                                                   size_t notif_size) {
  if (!recovering_ || !handle_again_ || stored_ == 0 || notif_size < sizeof(seccomp_notif) ||
      notif_size > kRetakenOffset)
    return std::nullopt;
  auto* retaken =
      reinterpret_cast<std::atomic<uint64_t>*>(reinterpret_cast<char*>(slot_) + kRetakenOffset);
  const auto* n = reinterpret_cast<const seccomp_notif*>(slot_);
  // A pid of 0: only the id was stored (received()), or the page was zeroed for a RECV that had
  // not returned.
  if (n->id != stored_ || n->pid == 0 || retaken->load(std::memory_order_relaxed) == stored_ ||
      !notif_id_valid(listener_fd, stored_))
    return std::nullopt;
  std::vector<uint64_t> copy((notif_size + 7) / 8, 0);
  std::memcpy(copy.data(), slot_, notif_size);
  retaken->store(stored_, std::memory_order_relaxed);
  return copy;
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
