// Names of errnos, for traces, denial lines and policy files. The idea not to miss: a traced
// result may be any value the kernel returns, including its internal restart codes (ERESTARTSYS
// is what an interrupted call returns before the kernel restarts it or turns it into EINTR), so
// every number from 1 to 4095 has a printable name, and those no user-space errno carries are
// named and explained from the kernel's own list (include/linux/errno.h), never shown as "E?".
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace gdrproxy::proxy {

// "EPERM", "ERESTARTSYS", or "E<n>" for a number in 1..4095 nothing names; never null. The
// pointer stays valid for the life of the program.
const char* errno_name(int err);

// What the code means: strerror's text, or for a kernel-internal code what the kernel did with
// it ("interrupted by a signal; restarted or turned into EINTR").
std::string errno_meaning(int err);

// A user-space errno by its name (glibc's names, strerrorname_np); nullopt for a kernel-internal
// name or an unknown one.
std::optional<int> errno_by_name(std::string_view name);

// Kernel-internal codes (512..531) never reach user space as such; a policy may not answer with
// one.
bool errno_is_kernel_internal(int err);

}  // namespace gdrproxy::proxy
