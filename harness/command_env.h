// The environment CMD gets from `run`: clean but for the caller's PATH HOME USER LOGNAME TERM
// LANG LC_* TZ, NCCL_* UCX_* NIXL_* and the launcher's SLURM_* OMPI_* PMIX_* PMI_*, then the
// plan's NCCL_IB_HCA and NCCL_SOCKET_IFNAME (which replace a caller's), NCCL_TOPO_FILE only with
// INCLUDE_NCCL_TOPO=1 and an existing file, DEBUG_ALL's NCCL debug variables (a caller's own value
// wins) and GDR_HARNESS_NODE. The idea not to miss: nothing else of the harness's environment
// reaches CMD (LD_PRELOAD, GDRPROXY, the harness's own settings), and each replacement or absence
// is said in one line.
#pragma once

#include <string>
#include <vector>

#include "harness/identity.h"
#include "harness/plan.h"

namespace gdrproxy::harness {

// NAME=VALUE entries; its lines go to log().
std::vector<std::string> command_environment(const Environment& env, const std::string& node,
                                             const Plan& plan);

}  // namespace gdrproxy::harness
