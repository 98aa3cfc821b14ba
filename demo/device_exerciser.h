// Issues a representative sequence of real device ioctls, built byte-exact from the uapi structs,
// against a device path, and prints what each returned. Used by `gdrproxy demo` (its hidden
// `device-calls` step) and the test tool (`gdrproxy-testkit exercise`) to drive the engine with
// real syscalls where no RDMA NIC or GPU exists: pointed at a stand-in char device the kernel
// answers ENOTTY, and the trace still shows every call decoded.
#pragma once

#include <ostream>
#include <string>

namespace gdrproxy::demo {

// uverbs: QUERY_DEVICE, GET_CONTEXT, ALLOC_PD, REG_MR, REG_DMABUF_MR(fd=-1), CREATE_COMP_CHANNEL,
// CREATE_CQ, CREATE_QP, MODIFY_QP(RTS), DEREG_MR, and one malformed header. Returns 0 when the
// device could be opened.
int exercise_uverbs(const std::string& path, std::ostream& out);

// NVIDIA frontend and UVM: CHECK_VERSION_STR, RM_ALLOC(NV01_ROOT_CLIENT), RM_CONTROL, RM_FREE on
// `ctl`; UVM_INITIALIZE on `uvm` (if not empty).
int exercise_nvidia(const std::string& ctl, const std::string& uvm, std::ostream& out);

}  // namespace gdrproxy::demo
