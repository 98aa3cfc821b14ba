// NCCL_NET_GDR_LEVEL and NCCL_P2P_LEVEL read the way NCCL reads them, on NCCL's own path scale,
// and said in words.
//
// The idea not to miss: NCCL accepts both a path name (LOC, NVL, NVB, C2C, PIX, PXB, P2C, PXN,
// PHB, SYS) and an old integer form whose numbers are NOT its internal path numbers: 0=LOC, 1=PIX,
// 2=PXB, 3=PHB, 4 and above=SYS (strtol with base 0, so "010" is 8). Anything else is ignored
// without an error and NCCL keeps its default (PXB), so a typo silently changes nothing.
// NCCL_P2P_DISABLE=1 wins over NCCL_P2P_LEVEL and means LOC.
#pragma once

#include <optional>
#include <string>

#include "doctor/context.h"
#include "sysfs/nccl_view.h"

namespace gdrproxy::doctor {

// NCCL's path types, numbered as NCCL numbers them (src/include/graph.h PATH_LOC..PATH_SYS).
enum class NcclPath : int { LOC = 0, NVL, NVB, C2C, PIX, PXB, P2C, PXN, PHB, SYS };
const char* to_string(NcclPath p);
// What a level lets through, in words ("GPU and NIC under one PCIe switch").
std::string level_words(NcclPath p);
// The sysfs model's PCI path type on NCCL's scale.
NcclPath to_nccl_path(sysfs::PathType t);

// The level NCCL derives from one value; nullopt when NCCL ignores the value.
std::optional<NcclPath> parse_nccl_level(const std::string& value);

struct NcclLevel {
  NcclPath level = NcclPath::PXB;  // what NCCL uses
  bool user_set = false;           // a setting NCCL took (not the default)
  std::string shown;               // "NCCL_NET_GDR_LEVEL=1 (environment): PIX", "PXB (default)"
  std::string ignored;             // the setting NCCL ignored, shown; "" when none
};
// NCCL_NET_GDR_LEVEL: default PXB (NCCL >= 2.26.2 uses P2C while NCCL_NET_GDR_C2C=1, its default:
// the same as PXB except on systems whose GPU reaches the CPU over C2C, Grace)
NcclLevel net_gdr_level(const Context& ctx);
// NCCL_P2P_DISABLE / NCCL_P2P_LEVEL: default PXB (SYS on AMD CPUs with at most two GPUs).
NcclLevel p2p_level(const Context& ctx);

}  // namespace gdrproxy::doctor
