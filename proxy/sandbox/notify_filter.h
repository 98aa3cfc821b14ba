// The seccomp filters `gdrproxy run` installs in its sandbox, built from the rule lists of
// notify_rules.h. Two filters: a refusal filter (plain errno answers, evaluated by the kernel
// before any notification since ERRNO outranks USER_NOTIF), and the notify filter that hands the
// supervisor the calls it polices, loaded with SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV where the
// kernel has it.
#pragma once

#include "proxy/sandbox/notify_rules.h"

namespace gdrproxy::proxy {

// Installs both filters on the calling thread (sets no_new_privs) and returns the listener fd.
// Throws gdrproxy::Error on failure.
int install_notify_filter(const FilterOptions& options);

}  // namespace gdrproxy::proxy
