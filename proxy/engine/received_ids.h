// Answering the calls a killed supervisor had received. A notification a receiver has taken
// (SECCOMP_IOCTL_NOTIF_RECV) but not answered is in the kernel's SENT state: no later RECV returns
// it, and while any copy of the listener stays open (the fd store's holder keeps one) the kernel
// never fails it, so its caller would wait for ever after a kill -9. The idea not to miss: each
// listener has a page of its own (a memfd, MAP_SHARED, kept by the holder with the listener) into
// which its receiver RECVs: the kernel itself writes the notification, id first, into the page
// before RECV returns, so there is no moment at which a call is received and its id not in the
// page (a kill ends the thread only once the ioctl is complete); the next supervisor reads that
// id back and answers whatever is still SENT around it with kStrandedErrno. Kernel facts this
// relies on: a filter's ids go up by 1 per notification (from a random start),
// SECCOMP_IOCTL_NOTIF_ID_VALID is true only for a SENT one, and one receiver holds at most one at a
// time. So the stranded id is the stored one (or, for a receiver that could not RECV into the page
// and stored the id after RECV, one above it and below whatever the new receiver first receives).
// Both probes run on the listener's own receiver thread, the first before its first RECV and the
// second before it handles its first call: no id the new supervisor is handling is ever in a probed
// range.
// Since the kernel writes the whole notification into the page, the stranded call is known, not
// only its id: the next supervisor handles it again (take_stranded) as if it had just received
// it, rather than failing it. That is safe because nothing the supervisor does for a call acts
// before its answer (the answer with an fd is one ioctl, SECCOMP_ADDFD_FLAG_SEND), so a call
// still SENT has had nothing done for it. Once only: the page records the id taken (a second
// slot, past the notification), so a call whose handling kills its supervisor is failed by the
// next one, not handled again for ever.
#pragma once

#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <vector>

#include "base/unique_fd.h"

namespace gdrproxy::proxy {

// The answer a stranded call gets. EINTR: the call did not run (an error answer never runs it),
// and EINTR says exactly that the call was interrupted before it did anything; a caller written
// for signals (the CUDA driver's ioctl loop is one) calls again, and the next supervisor judges
// the retry. A caller that does not retry sees a failed call, never a call that ran unjudged.
inline constexpr int kStrandedErrno = EINTR;
// How many ids above the stored one are probed before the first RECV. Between the stored id and
// the stranded one are only notifications their callers abandoned (a signal) while the previous
// one was handled: normally none.
inline constexpr uint64_t kProbeAbove = 64;
// How many ids below the first one received are probed at most.
inline constexpr uint64_t kProbeBelow = 4096;

// The page: room for the kernel's struct seccomp_notif, whose first member is the id, and, from
// kRetakenOffset, the id of a stranded call a successor took to handle again.
inline constexpr size_t kReceivedIdPageBytes = 4096;
inline constexpr size_t kRetakenOffset = 2048;

class ReceivedIdPage {
 public:
  ReceivedIdPage() = default;
  // A new page (nothing received yet). Throws gdrproxy::Error when no memfd can be made.
  static ReceivedIdPage create();
  // The page a previous supervisor kept in the fd store: its stored id is probed (recovering()).
  // `handle_again`: its stranded call may be taken to be handled again (take_stranded); false
  // where that supervisor may still be inside its handling (a killed process that cannot finish
  // exiting: the same handling would block again). Throws gdrproxy::Error when `memfd` is no
  // such page.
  static ReceivedIdPage adopt(UniqueFd memfd, bool handle_again = false);
  ReceivedIdPage(ReceivedIdPage&& o) noexcept;
  ReceivedIdPage& operator=(ReceivedIdPage&& o) noexcept;
  ReceivedIdPage(const ReceivedIdPage&) = delete;
  ReceivedIdPage& operator=(const ReceivedIdPage&) = delete;
  ~ReceivedIdPage();

  explicit operator bool() const { return slot_ != nullptr; }
  int fd() const { return fd_.get(); }
  // Where the receiver RECVs (the kernel's notification of `notif_size` bytes, zeroed first as
  // RECV requires): the page itself, so the id is in it when RECV returns; nullptr when the
  // kernel's struct does not fit (the receiver then calls received() after RECV).
  void* recv_buffer(size_t notif_size) const {
    return notif_size <= kRetakenOffset ? static_cast<void*>(slot_) : nullptr;
  }
  // The receiver's store, right after each RECV into a buffer of its own.
  void received(uint64_t id) { slot_->store(id, std::memory_order_relaxed); }
  // Taken over from a previous supervisor: probe() and probe_below() are to be run.
  bool recovering() const { return recovering_; }

  // Before the receiver's first RECV (and before probe()), if adopted with `handle_again`: the
  // stored call
  // as the kernel wrote it (`notif_size` bytes) when it is still SENT, the page holds all of it
  // (a receiver that RECVed into the page) and no supervisor took it before; the page then
  // records it as taken. nullopt otherwise: probe() answers it.
  std::optional<std::vector<uint64_t>> take_stranded(int listener_fd, size_t notif_size);
  // Before the receiver's first RECV: answers every SENT notification among the stored id and
  // the kProbeAbove above it. Returns how many were answered.
  unsigned probe(int listener_fd) const;
  // Before the first received notification `first` is handled: answers every SENT one below it,
  // down to just above the stored id (at most kProbeBelow). Ends the recovery. Returns how many.
  unsigned probe_below(int listener_fd, uint64_t first);

 private:
  UniqueFd fd_;
  std::atomic<uint64_t>* slot_ = nullptr;
  uint64_t stored_ = 0;  // what the page said when it was adopted (0: nothing received)
  bool recovering_ = false;
  bool handle_again_ = false;
};

}  // namespace gdrproxy::proxy
