// Image checks (--rootfs): the NIXL plugins of an image and the libraries their DT_NEEDED
// resolve to, by ld.so's rules modelled inside the image (ld_resolve.h).
//
// The idea not to miss: a plugin that names a RUNPATH/RPATH says which prefix it was built
// against. When a tracked library (libucp, libuct, libucs, libucm, libfabric) resolves outside
// that prefix (another copy found through ld.so.conf or the default directories), NIXL runs
// against a library it was not built with: the known libfabric-under-another-prefix segfault.
// UCX's libraries must also all come from one directory.
#pragma once

#include "doctor/context.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {

void check_image(const Context& ctx, Report& report);

}  // namespace gdrproxy::doctor
