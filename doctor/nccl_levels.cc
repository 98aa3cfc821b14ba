// NCCL's GDR and P2P levels (see nccl_levels.h). Facts from NVIDIA/nccl src/graph/paths.cc
// (ncclGetLevel, levelsOldToNew, ncclTopoCheckGdr, ncclTopoCheckP2p) and src/graph/topo.cc
// (topoPathTypeStr).
#include "doctor/nccl_levels.h"

#include <cstdlib>
#include <iterator>

#include "doctor/nccl_env.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {
namespace {

constexpr const char* kNames[] = {"LOC", "NVL", "NVB", "C2C", "PIX",
                                  "PXB", "P2C", "PXN", "PHB", "SYS"};
// NCCL's "old style numbering": index = the integer, clamped to the last entry.
constexpr NcclPath kOldToNew[] = {NcclPath::LOC, NcclPath::PIX, NcclPath::PXB,
                                  NcclPath::PHB, NcclPath::SYS, NcclPath::SYS};

NcclLevel read_level(const Context& ctx, const char* var) {
  NcclLevel l;
  l.shown = "PXB (default)";
  const auto settings = nccl_settings(ctx);
  auto it = settings.find(var);
  if (it == settings.end()) return l;
  const std::string setting =
      std::string(var) + "=" + quote_value(it->second.value) + " (" + it->second.origin + ")";
  if (auto p = parse_nccl_level(it->second.value)) {
    l.level = *p;
    l.user_set = true;
    l.shown = setting + ": " + to_string(*p);
  } else {
    l.ignored = setting;
    l.shown = "PXB (default; " + setting + " is not a level NCCL reads)";
  }
  return l;
}

}  // namespace

const char* to_string(NcclPath p) {
  const int i = static_cast<int>(p);
  return i >= 0 && i <= static_cast<int>(NcclPath::SYS) ? kNames[i] : "?";
}

std::string level_words(NcclPath p) {
  switch (p) {
    case NcclPath::LOC:
      return "only within one device (off between devices)";
    case NcclPath::NVL:
      return "only over a direct NVLink";
    case NcclPath::NVB:
      return "over NVLink, also through one intermediate GPU";
    case NcclPath::C2C:
      return "up to a C2C link to the CPU (Grace)";
    case NcclPath::PIX:
      return "only under one PCIe switch";
    case NcclPath::PXB:
      return "across several PCIe switches, never through the CPU";
    case NcclPath::P2C:
      return "up to PCIe to a C2C-attached CPU";
    case NcclPath::PXN:
      return "also through a proxy GPU's NIC (PXN)";
    case NcclPath::PHB:
      return "also through the CPU's PCIe host bridge";
    case NcclPath::SYS:
      return "also across CPU sockets (the SMP interconnect)";
  }
  return "?";
}

NcclPath to_nccl_path(sysfs::PathType t) {
  switch (t) {
    case sysfs::PathType::PIX:
      return NcclPath::PIX;
    case sysfs::PathType::PXB:
      return NcclPath::PXB;
    case sysfs::PathType::PHB:
      return NcclPath::PHB;
    case sysfs::PathType::SYS:
      return NcclPath::SYS;
  }
  return NcclPath::SYS;
}

std::optional<NcclPath> parse_nccl_level(const std::string& value) {
  for (int i = 0; i <= static_cast<int>(NcclPath::SYS); ++i)
    if (value == kNames[i]) return static_cast<NcclPath>(i);
  if (value.empty() || value[0] < '0' || value[0] > '9') return std::nullopt;
  long old = std::strtol(value.c_str(), nullptr, 0);
  const long max = static_cast<long>(std::size(kOldToNew)) - 1;
  if (old > max || old < 0) old = max;
  return kOldToNew[old];
}

NcclLevel net_gdr_level(const Context& ctx) {
  return read_level(ctx, "NCCL_NET_GDR_LEVEL");
}

NcclLevel p2p_level(const Context& ctx) {
  const auto settings = nccl_settings(ctx);
  if (auto it = settings.find("NCCL_P2P_DISABLE"); it != settings.end()) {
    // NCCL: strtol(value, NULL, 0) == 1 disables P2P whatever NCCL_P2P_LEVEL says.
    if (std::strtol(it->second.value.c_str(), nullptr, 0) == 1) {
      NcclLevel l;
      l.level = NcclPath::LOC;
      l.user_set = true;
      l.shown =
          "NCCL_P2P_DISABLE=" + quote_value(it->second.value) + " (" + it->second.origin + "): LOC";
      return l;
    }
  }
  return read_level(ctx, "NCCL_P2P_LEVEL");
}

}  // namespace gdrproxy::doctor
