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

// What a used copy says about the call: the slot as it was read, with its fields in user space's
// terms.
class TrapCopy {
 public:
  explicit TrapCopy(const gdrproxy_trap_copy& slot) : slot_(slot) {}
  // The fd named an open file at the trap (else it named none). Only asked of a copy whose
  // program read the caller's fd table to the end: take() returns no other.
  bool has_file() const { return slot_.flags & GDRPROXY_TRAP_COPY_FILE; }
  mode_t mode() const { return static_cast<mode_t>(slot_.mode); }
  dev_t rdev() const;  // makedev's encoding
  uint64_t arg() const { return slot_.arg; }
  // The argument's first bytes, to the end of its page at most (none: not copied).
  std::span<const uint8_t> bytes() const;
  const gdrproxy_trap_copy& slot() const { return slot_; }

 private:
  gdrproxy_trap_copy slot_;
};

// Whether slot `s`, copied out of the map, is the copy of notification `req` and complete enough
// to judge it by (its program read the caller's fd table to the end): the pure check, apart from
// the mapping so that it can be tested on made-up slots.
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
