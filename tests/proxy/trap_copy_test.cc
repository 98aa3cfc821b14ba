// Trap copies: a slot is taken for a notification only when it names that very notification
// (id, caller, fd, request, argument) and was not being written, and its fields read back in user
// space's terms. On made-up slots, so that every way a slot can be another call's is tried; the
// program that fills real slots is checked by the integration and security tests.
#include <linux/seccomp.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <cstring>

#include <gtest/gtest.h>

#include "proxy/observe/trap_copy.h"

namespace gdrproxy::proxy {
namespace {

struct Call {
  Call() {
    req.id = 0x1234567890abcdefULL;
    req.pid = 4242;
    req.data.nr = 16;
    req.data.args[0] = 7;
    req.data.args[1] = 0xc0181b01;
    req.data.args[2] = 0x7ffd00001000;
    slot.seq = 2;
    slot.id = req.id;
    slot.tid = req.pid;
    slot.fd = 7;
    slot.request = 0xc0181b01;
    slot.arg = 0x7ffd00001000;
    slot.flags = GDRPROXY_TRAP_COPY_FD_READ | GDRPROXY_TRAP_COPY_FILE | GDRPROXY_TRAP_COPY_DATA;
    slot.mode = S_IFCHR | 0600;
    slot.rdev = (231u << 20) | 192u;  // the kernel's encoding of 231:192
    slot.len = 24;
    for (unsigned i = 0; i < slot.len; ++i) slot.data[i] = static_cast<unsigned char>(i + 1);
  }
  seccomp_notif req{};
  gdrproxy_trap_copy slot{};
};

TEST(TrapCopy, TheSlotOfThisNotificationMatches) {
  Call c;
  EXPECT_TRUE(trap_copy_matches(c.slot, c.req));
}

TEST(TrapCopy, ASlotBeingWrittenNeverMatches) {
  Call c;
  c.slot.seq = 3;
  EXPECT_FALSE(trap_copy_matches(c.slot, c.req));
}

TEST(TrapCopy, AnotherNotificationsSlotNeverMatches) {
  // The same caller's previous call (an earlier id), or the same tid's notification on another
  // filter (another supervisor's sandbox in a nested pid namespace), with everything else equal.
  Call c;
  c.slot.id = c.req.id - 1;
  EXPECT_FALSE(trap_copy_matches(c.slot, c.req));
  c.slot.id = c.req.id + GDRPROXY_TRAP_COPY_SLOTS;
  EXPECT_FALSE(trap_copy_matches(c.slot, c.req));
}

TEST(TrapCopy, ASlotOfAnotherCallerOrCallNeverMatches) {
  {
    Call c;
    c.slot.tid = c.req.pid + 1;
    EXPECT_FALSE(trap_copy_matches(c.slot, c.req));
  }
  {
    Call c;
    c.slot.fd = 8;  // another fd: its device would be another's
    EXPECT_FALSE(trap_copy_matches(c.slot, c.req));
  }
  {
    Call c;
    c.slot.request = 0xc0181b02;
    EXPECT_FALSE(trap_copy_matches(c.slot, c.req));
  }
  {
    Call c;
    c.slot.arg += 8;  // bytes of another buffer
    EXPECT_FALSE(trap_copy_matches(c.slot, c.req));
  }
  {
    // The filter saw 64-bit arguments: high bits the ioctl ignores still tell calls apart.
    Call c;
    c.req.data.args[0] |= 1ULL << 32;
    EXPECT_FALSE(trap_copy_matches(c.slot, c.req));
  }
}

TEST(TrapCopy, FieldsReadInUserSpacesTerms) {
  Call c;
  const TrapCopy copy(c.slot);
  EXPECT_TRUE(copy.has_file());
  EXPECT_TRUE(S_ISCHR(copy.mode()));
  EXPECT_EQ(makedev(231, 192), copy.rdev());
  EXPECT_EQ(c.slot.arg, copy.arg());
  ASSERT_EQ(24u, copy.bytes().size());
  EXPECT_EQ(0, std::memcmp(copy.bytes().data(), c.slot.data, 24));
}

TEST(TrapCopy, NoBytesWithoutTheDataFlagAndNeverBeyondTheSlot) {
  Call c;
  c.slot.flags &= ~GDRPROXY_TRAP_COPY_DATA;
  EXPECT_TRUE(TrapCopy(c.slot).bytes().empty());
  Call d;
  d.slot.len = 100000;  // a length no program writes: clamped to the slot
  EXPECT_EQ(sizeof d.slot.data, TrapCopy(d.slot).bytes().size());
}

TEST(TrapCopy, ItsBytesAreTrustedOnlyWhileTheSlotHoldsStill) {
  // The bytes are read in place: a program writing the slot again (the caller trapped anew, or
  // another thread of the same slot) between take() and the end of the decoding must void them.
  Call c;
  const TrapCopy copy(c.slot);
  EXPECT_TRUE(copy.unchanged());
  EXPECT_EQ(static_cast<const void*>(c.slot.data), copy.bytes().data());  // in place, not copied
  c.slot.seq = 3;                                                         // being written
  EXPECT_FALSE(copy.unchanged());
  c.slot.seq = 4;  // written: another copy
  EXPECT_FALSE(copy.unchanged());
  c.slot.seq = 2;
  EXPECT_TRUE(copy.unchanged());
}

TEST(TrapCopy, ASlotWhoseFdTableWasNotReadToTheEndIsNotUsed) {
  // "No file" must mean the fd was closed, never that the program's read of the table failed.
  Call c;
  c.slot.flags &= ~GDRPROXY_TRAP_COPY_FD_READ;
  EXPECT_FALSE(trap_copy_matches(c.slot, c.req));
}

TEST(TrapCopy, AClosedFdIsNoFile) {
  Call c;
  c.slot.flags = GDRPROXY_TRAP_COPY_FD_READ;
  EXPECT_FALSE(TrapCopy(c.slot).has_file());
}

}  // namespace
}  // namespace gdrproxy::proxy
