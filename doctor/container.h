// Container checks: the namespaces the doctor (or the job's --pid processes) runs in, and whether
// pidfd_open/pidfd_getfd work here (a self-probe) and between sibling ranks (Yama).
//
// The idea not to miss: CUDA IPC between ranks of one node needs more than one GPU. NCCL's cuMem
// handles travel over abstract unix sockets, which exist per network namespace; CUDA's fd-based
// IPC (UCX 1.22 POSIX-fd cuda_ipc, PyTorch expandable segments) needs pidfd_getfd, which Docker
// and containerd's default profiles allow only with CAP_SYS_PTRACE and Yama ptrace_scope 1 refuses
// between siblings; and pid-based caches need one pid namespace (or UCX >= 1.21, whose cuda_ipc
// rkeys carry it). Ranks that differ in any of these fail only when they first exchange a handle.
#pragma once

#include "doctor/context.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {

// The initial pid namespace's inode (PROC_PID_INIT_INO).
inline constexpr unsigned long kInitPidNsInode = 0xEFFFFFFCul;

void check_container(const Context& ctx, Report& report);

}  // namespace gdrproxy::doctor
