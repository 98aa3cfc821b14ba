// Trap copies: a trapped ioctl's fd device and argument bytes, copied by a BPF program in the
// caller's own context while it waits for its answer (trap_copy.bpf.c), read here through a
// shared mapping with no syscall. With a copy the supervisor judges the call without its statx of
// /proc/<tid>/fd/<n> and its process_vm_readv: the two syscalls that were most of its cost above a
// bare CONTINUE round trip (docs/PERFORMANCE.md).
//
// The idea not to miss: a copy is used only for the notification it names (id, caller, fd,
// request, argument, all equal), and only if it was not being rewritten while read (the slot's
// seqlock). Everything else is a miss, and the supervisor then looks the call up itself exactly
// as without copies: a copy can only save work, never change what is judged.
#pragma once

#include <linux/seccomp.h>
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "proxy/observe/bpf_array_mapping.h"
#include "proxy/observe/trap_copy_slot.h"

struct bpf_object;
struct bpf_link;

namespace gdrproxy::proxy {

// What a used copy says about the call: the slot's fields as they were read, in user space's
// terms, and its argument bytes where they lie, in the map. Those bytes are not copied out (a
// call reads a few dozen of the 512): whoever reads them asks unchanged() afterwards, the
// seqlock's closing check, and trusts nothing read from them if it says no.
class TrapCopy {
 public:
  // From the slot's fields `head` (everything before its data), read while the slot's sequence
  // was `seq`; its bytes are `slot`'s.
  TrapCopy(const gdrproxy_trap_copy& head, const volatile gdrproxy_trap_copy& slot, uint64_t seq);
  // A slot outside any map (tests): its own fields and bytes.
  explicit TrapCopy(const gdrproxy_trap_copy& slot) : TrapCopy(slot, slot, slot.seq) {}
  // The fd named an open file at the trap (else it named none). Only asked of a copy whose
  // program read the caller's fd table to the end: take() returns no other.
  bool has_file() const { return flags_ & GDRPROXY_TRAP_COPY_FILE; }
  mode_t mode() const { return static_cast<mode_t>(mode_); }
  dev_t rdev() const;  // makedev's encoding
  uint64_t arg() const { return arg_; }
  // The argument's first bytes, to the end of its page at most (none: not copied).
  std::span<const uint8_t> bytes() const { return {data_, len_}; }
  // Nothing was written to the slot since it was taken: what was read from bytes() is the copy
  // the program made, not a mix with a later one.
  bool unchanged() const;

 private:
  uint32_t flags_, mode_, rdev_;
  uint64_t arg_;
  const uint8_t* data_;
  size_t len_;
  const volatile uint64_t* seq_;
  uint64_t seen_;
};

// Whether slot `s`, its fields copied out of the map, is the copy of notification `req` and
// complete enough to judge it by (its program read the caller's fd table to the end): the pure
// check, apart from the mapping so that it can be tested on made-up slots.
bool trap_copy_matches(const gdrproxy_trap_copy& s, const seccomp_notif& req);

// Where trap copies are used: kOn refuses to start without them, kAuto uses them where the
// kernel allows (tracepoint programs, CO-RE over the kernel's seccomp structures).
enum class TrapCopyChoice { kOff, kAuto, kOn };

class TrapCopies {
 public:
  // Loads and attaches the program and maps its slots; nullptr (and `why`) where the kernel or
  // the privileges do not allow it.
  static std::unique_ptr<TrapCopies> open(std::string& why);
  ~TrapCopies();
  TrapCopies(const TrapCopies&) = delete;
  TrapCopies& operator=(const TrapCopies&) = delete;

  // The copy of notification `req`, if its caller's context made one. Thread-safe, no syscall.
  std::optional<TrapCopy> take(const seccomp_notif& req) const;

 private:
  TrapCopies() = default;
  bpf_object* obj_ = nullptr;
  std::vector<bpf_link*> links_;  // owned: destroyed (detached) with this
  BpfArrayMapping mapping_;
  const volatile gdrproxy_trap_copy* slots_ = nullptr;  // mapping_'s, read-only
};

}  // namespace gdrproxy::proxy
