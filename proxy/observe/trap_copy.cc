// Reading the trap copies (see trap_copy.h): the slot a caller's tid names, taken only when its
// seqlock and the notification it names agree.
#include "proxy/observe/trap_copy.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstddef>
#include <cstring>

#include "base/hot_path.h"
#include "base/kernel_dev.h"
#include "base/process_info.h"
#include "proxy/abi/uverbs_abi.h"
#include "proxy/observe/bpf_links.h"
#include "proxy/observe/trap_copy_bpf.h"

static_assert(GDRPROXY_TRAP_COPY_VERBS_IOCTL == gdrproxy::proxy::uverbs::kVerbsIoctl);

namespace gdrproxy::proxy {

GDRPROXY_HOT bool trap_copy_matches(const gdrproxy_trap_copy& s, const seccomp_notif& req) {
  // FD_READ: without it "no file" could mean a failed read, and a call on an fd that names none
  // is let be.
  return (s.seq & 1) == 0 && (s.flags & GDRPROXY_TRAP_COPY_FD_READ) && s.id == req.id &&
         s.tid == req.pid && s.fd == req.data.args[0] && s.request == req.data.args[1] &&
         s.arg == req.data.args[2];
}

GDRPROXY_HOT TrapCopy::TrapCopy(const gdrproxy_trap_copy& head,
                                const volatile gdrproxy_trap_copy& slot, uint64_t seq)
    : flags_(head.flags),
      mode_(head.mode),
      rdev_(head.rdev),
      arg_(head.arg),
      // The map is shared memory the program writes: the bytes are read in place, and the
      // closing check (unchanged()) says whether they held still.
      data_(const_cast<const uint8_t*>(slot.data)),
      len_((head.flags & GDRPROXY_TRAP_COPY_DATA) ? std::min<size_t>(head.len, sizeof slot.data)
                                                  : 0),
      seq_(&slot.seq),
      seen_(seq) {}

dev_t TrapCopy::rdev() const {
  return dev_from_kernel(rdev_);
}

bool TrapCopy::unchanged() const {
  // The seqlock's closing check: the reads of the bytes are ordered before this load.
  std::atomic_thread_fence(std::memory_order_acquire);
  return *seq_ == seen_;
}

std::unique_ptr<TrapCopies> TrapCopies::open(std::string& why) {
  std::unique_ptr<TrapCopies> t(new TrapCopies());
  bool attached = false;
  with_tracefs([&] {
    t->obj_ = load_embedded_bpf(kTrapCopyBpf, kTrapCopyBpfSize, "bpf", why);
    if (!t->obj_) return;
    if (!t->mapping_.map(bpf_object__find_map_fd_by_name(t->obj_, "copies"),
                         sizeof(gdrproxy_trap_copy) * GDRPROXY_TRAP_COPY_SLOTS, false, "the copies",
                         why))
      return;
    t->slots_ = static_cast<const volatile gdrproxy_trap_copy*>(t->mapping_.data());
    attached = attach_every_program(t->obj_, false, t->links_, "bpf", why);
  });
  if (!attached) return nullptr;
  return t;
}

TrapCopies::~TrapCopies() {
  destroy_links_side_by_side(links_);
  if (obj_) bpf_object__close(obj_);
}

GDRPROXY_HOT std::optional<TrapCopy> TrapCopies::take(const seccomp_notif& req) const {
  const volatile gdrproxy_trap_copy& slot =
      slots_[req.pid & (GDRPROXY_TRAP_COPY_SLOTS - 1)];  // the caller's
  // The seqlock's read side: the same even sequence before and after the fields are copied, or
  // no copy; the bytes are checked the same way once read (TrapCopy::unchanged()). The program's
  // updates are full barriers; these fences order this side's loads.
  const uint64_t before = slot.seq;
  std::atomic_thread_fence(std::memory_order_acquire);
  if ((before & 1) || slot.id != req.id) return std::nullopt;  // cheap exits first
  gdrproxy_trap_copy head;  // its fields only: the bytes stay in the map
  std::memcpy(&head, const_cast<const gdrproxy_trap_copy*>(&slot),
              offsetof(gdrproxy_trap_copy, data));
  std::atomic_thread_fence(std::memory_order_acquire);
  if (slot.seq != before) return std::nullopt;
  if (!trap_copy_matches(head, req)) return std::nullopt;
  return TrapCopy(head, slot, before);
}

}  // namespace gdrproxy::proxy
