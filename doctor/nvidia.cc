// NVIDIA checks (see nvidia.h).
#include "doctor/nvidia.h"

#include <dlfcn.h>
#include <link.h>

#include <cstdio>
#include <regex>

#include "base/file_io.h"
#include "doctor/nccl_levels.h"
#include "proxy/abi/nvidia_abi_choice.h"
#include "sysfs/nccl_view.h"

namespace gdrproxy::doctor {
namespace {

std::string attr(const std::string& path) {
  auto t = read_text(path);
  return t ? trim(*t) : "";
}

// Kernel release "6.18.0-1-amd64" at least major.minor.
bool kernel_at_least(const std::string& release, int major, int minor) {
  int a = 0, b = 0;
  if (std::sscanf(release.c_str(), "%d.%d", &a, &b) != 2) return false;
  return a > major || (a == major && b >= minor);
}

int rank(sysfs::PathType t) {
  return static_cast<int>(t);
}

// GPU pairs against NCCL_P2P_LEVEL: a pair whose PCI path is farther than the level gets no P2P
// over PCI (NVLink, which sysfs does not show, counts as NVL and passes any level above NVB).
void check_p2p(const Context& ctx, const std::vector<const sysfs::NcclEndpoint*>& gpus,
               Report& report) {
  if (gpus.size() < 2) return;
  const NcclLevel level = p2p_level(ctx);
  std::vector<std::string> far;
  size_t pairs = 0;
  for (size_t i = 0; i < gpus.size(); ++i)
    for (size_t j = i + 1; j < gpus.size(); ++j) {
      ++pairs;
      const auto t = sysfs::path_type(*gpus[i], *gpus[j]);
      if (static_cast<int>(to_nccl_path(t)) > static_cast<int>(level.level))
        far.push_back(gpus[i]->bdf + "-" + gpus[j]->bdf + " " + sysfs::to_string(t));
    }
  std::string list;
  for (size_t k = 0; k < far.size() && k < 4; ++k) list += (list.empty() ? "" : ", ") + far[k];
  if (far.size() > 4) list += ", ... (" + std::to_string(far.size()) + " in all)";
  const std::string shown = "P2P level " + level.shown + " (" + level_words(level.level) + ")";
  if (far.empty())
    report.pass("nvidia.p2p_level", shown + ": every one of " + std::to_string(pairs) +
                                        " GPU pairs is within it over PCI");
  else if (level.user_set)
    report.warn("nvidia.p2p_level",
                shown + ": NCCL will not use P2P over PCI for " + list +
                    " (only NVLink, which sysfs does not show, would still carry P2P)",
                "raise NCCL_P2P_LEVEL (or unset NCCL_P2P_DISABLE) if these GPUs should talk "
                "directly");
  else
    report.pass("nvidia.p2p_level",
                shown +
                    ": pairs farther over PCI use NVLink where they have it, else host "
                    "memory: " +
                    list);
}

// Which of the build's NVIDIA tables judge this driver in enforce mode, and why
// (proxy/abi/nvidia_abi_choice.h).
void check_abi_tables(const std::string& version, Report& report) {
  const std::string shown = quote_value(version);
  const proxy::NvidiaAbiChoice c = proxy::choose_nvidia_abi(
      version.empty() ? std::nullopt : std::optional(version), std::nullopt);
  const std::string held = "this build holds branches " + proxy::nvidia_covered_branches() +
                           ", newest " + std::string(proxy::nvidia_newest_release());
  switch (c.match) {
    case proxy::NvAbiMatch::kExact:
      report.pass("nvidia.abi_tables",
                  "driver " + shown + " is in this build's ABI tables: enforced with its own");
      return;
    case proxy::NvAbiMatch::kNearestPatch:
      report.warn("nvidia.abi_tables", c.notice,
                  "enforcement runs; to judge it with its own tables, add its tag with "
                  "scripts/nvidia-abi/generate.py --add-tag TAG (scripts/nvidia-abi/README.md)");
      return;
    case proxy::NvAbiMatch::kNamed:  // not asked for here: the node's driver alone is judged
    case proxy::NvAbiMatch::kUncovered:
      report.fail("nvidia.abi_tables",
                  "driver " + shown + " is of a branch this build's ABI tables do not hold (" +
                      held + "): `gdrproxy run --mode enforce` and the agent refuse to start",
                  "name the nearest release's tables (--nvidia-abi-as RELEASE, \"nvidia_abi_as\" "
                  "in the agent's config and runtime.json), or use a build whose tables hold it");
      return;
    case proxy::NvAbiMatch::kNoVersion:
      report.warn(
          "nvidia.abi_tables",
          "the module's version is unreadable: enforce mode refuses NVIDIA calls (" + held + ")",
          "check " + shown + " and /proc/driver/nvidia/version");
      return;
  }
}

}  // namespace

NvidiaModule read_nvidia_module(const Context& ctx) {
  NvidiaModule m;
  const std::string proc = ctx.proc_root + "/driver/nvidia/version";
  if (auto text = read_text(proc)) {
    m.loaded = true;
    m.source = proc;
    std::smatch match;
    const std::string first = text->substr(0, text->find('\n'));
    if (std::regex_search(first, match, std::regex(R"((\d+\.\d+(\.\d+)?))"))) m.version = match[1];
    m.open = first.find("Open Kernel Module") != std::string::npos;
    return m;
  }
  // In a container /proc/driver/nvidia may be absent while sysfs shows the module.
  const std::string sys = ctx.sysfs_root + "/module/nvidia";
  if (is_dir(sys)) {
    m.loaded = true;
    m.source = sys;
    m.version = attr(sys + "/version");
    // A proprietary module taints the kernel 'P'; the open one (Dual MIT/GPL) does not.
    m.open = attr(sys + "/taint").find('P') == std::string::npos;
  }
  return m;
}

CudaDriver probe_libcuda(const std::string& name) {
  CudaDriver d;
  void* h = ::dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* e = ::dlerror();
    d.error = e ? e : "dlopen failed";
    return d;
  }
  d.loaded = true;
  link_map* lm = nullptr;
  if (::dlinfo(h, RTLD_DI_LINKMAP, &lm) == 0 && lm && lm->l_name) {
    d.path = real_path(lm->l_name).value_or(lm->l_name);
    const std::string base = basename_of(d.path);
    const std::string prefix = "libcuda.so.";
    if (base.rfind(prefix, 0) == 0) d.file_version = base.substr(prefix.size());
  }
  using GetVersion = int (*)(int*);
  auto get = reinterpret_cast<GetVersion>(::dlsym(h, "cuDriverGetVersion"));
  if (!get) {
    d.error = "no cuDriverGetVersion in " + d.path;
  } else if (int rc = get(&d.api_version); rc != 0) {
    d.error = "cuDriverGetVersion returned " + std::to_string(rc);
  }
  ::dlclose(h);
  return d;
}

void check_nvidia(const Context& ctx, Report& report) {
  const NvidiaModule mod = read_nvidia_module(ctx);
  nlohmann::json facts = nlohmann::json::object();
  if (!mod.loaded) {
    report.warn("nvidia.module",
                "no NVIDIA kernel module (no " + ctx.proc_root + "/driver/nvidia/version, no " +
                    ctx.sysfs_root + "/module/nvidia)",
                "load the nvidia module (or this node has no NVIDIA GPU)");
  } else {
    facts["module"] = clean(mod.version);
    facts["open"] = mod.open;
    report.pass("nvidia.module", "NVIDIA " + mod.version + ", " +
                                     (mod.open ? "open" : "proprietary") + " kernel module (" +
                                     mod.source + ")");
    check_abi_tables(mod.version, report);
  }

  const CudaDriver cuda = probe_libcuda(ctx.libcuda);
  if (!cuda.loaded) {
    report.warn("nvidia.libcuda",
                quote_value(ctx.libcuda) + " not loadable (" + cuda.error +
                    "): the CUDA driver version cannot be compared with the module",
                "install the NVIDIA user-space driver of the module's version (in a container: "
                "the NVIDIA container runtime or CDI injects it)");
  } else if (!cuda.error.empty()) {
    report.fail("nvidia.libcuda", cuda.path + ": " + cuda.error,
                "reinstall the NVIDIA user-space driver");
  } else {
    const std::string api = std::to_string(cuda.api_version / 1000) + "." +
                            std::to_string(cuda.api_version % 1000 / 10);
    facts["libcuda"] = clean(cuda.file_version);
    facts["cuda_api"] = cuda.api_version;
    const std::string found = "libcuda " +
                              (cuda.file_version.empty() ? std::string("?") : cuda.file_version) +
                              " (CUDA " + api + ") from " + cuda.path;
    if (!mod.loaded)
      report.warn("nvidia.libcuda", found + ", but no kernel module to match",
                  "load the nvidia module of the same version");
    else if (cuda.file_version.empty() || mod.version.empty())
      report.warn("nvidia.libcuda", found + ": version not comparable with module " + mod.version,
                  "check that libcuda and the module come from one driver release");
    else if (cuda.file_version != mod.version)
      report.fail("nvidia.libcuda",
                  found + " against kernel module " + mod.version +
                      ": cuInit fails (CUDA_ERROR_SYSTEM_DRIVER_MISMATCH)",
                  "use the libcuda of the module's release (a container must get the host's)");
    else
      report.pass("nvidia.libcuda", found + " matches the kernel module");
  }

  // The GPUDirect RDMA mechanisms, as NCCL finds them.
  std::string peermem;
  for (const char* p :
       {"/kernel/mm/memory_peers/nv_mem/version", "/kernel/mm/memory_peers/nv_mem_nc/version",
        "/module/nvidia_peermem/version"})
    if (peermem.empty() && read_file(ctx.sysfs_root + p).data) peermem = ctx.sysfs_root + p;
  const bool new_kernel = kernel_at_least(ctx.kernel_release, 5, 12);
  const bool dmabuf = mod.loaded && mod.open && new_kernel;
  std::string method = dmabuf ? "dma-buf" : (!peermem.empty() ? "peermem" : "none");
  facts["gdr"] = method;
  if (mod.loaded) {
    std::string found =
        "dma-buf " +
        std::string(dmabuf ? "possible (open module, kernel " + ctx.kernel_release +
                                 " >= 5.12; NCCL confirms "
                                 "with CU_DEVICE_ATTRIBUTE_DMA_BUF_SUPPORTED)"
                           : (!mod.open ? "not with the proprietary module"
                                        : "needs kernel >= 5.12, have " + ctx.kernel_release)) +
        "; nvidia-peermem " + (peermem.empty() ? "not loaded" : "loaded (" + peermem + ")");
    if (method == "none")
      report.fail("nvidia.gdr", found + ": no GPUDirect RDMA, NCCL stages through host memory",
                  "use the open kernel module (dma-buf) or modprobe nvidia-peermem");
    else
      report.pass("nvidia.gdr", "GPUDirect RDMA via " + method + ": " + found);
  }

  // Per GPU: its nearest NIC, the PCI path type NCCL derives, and whether GDR applies.
  sysfs::NcclView view;
  try {
    view = sysfs::nccl_view(ctx.sysfs_root);
  } catch (const std::exception& e) {
    report.warn("nvidia.paths", std::string("cannot read the PCI topology: ") + e.what(),
                "pass --sysfs-root of a complete sysfs");
    report.facts()["nvidia"] = facts;
    return;
  }
  const NcclLevel level = net_gdr_level(ctx);
  nlohmann::json pairs = nlohmann::json::array();
  int gpus = 0;
  std::vector<const sysfs::NcclEndpoint*> nvidia;
  for (const auto& g : view.gpus) {
    if (attr(ctx.sysfs_root + "/bus/pci/devices/" + g.bdf + "/vendor") != "0x10de") continue;
    ++gpus;
    nvidia.push_back(&g);
    const std::string id = "nvidia.gpu." + g.bdf;
    if (view.nics.empty()) {
      report.warn(id, "GPU " + g.bdf + ": no RDMA NIC in " + ctx.sysfs_root + "/class/infiniband",
                  "grant the container the GPU's NIC (or load the RDMA driver)");
      continue;
    }
    const sysfs::NcclEndpoint* best = nullptr;
    sysfs::PathType best_type = sysfs::PathType::SYS;
    for (const auto& n : view.nics) {
      const auto t = sysfs::path_type(g, n);
      pairs.push_back(
          {{"gpu", clean(g.bdf)}, {"nic", clean(n.name)}, {"path", sysfs::to_string(t)}});
      if (!best || rank(t) < rank(best_type)) best = &n, best_type = t;
    }
    const bool near = static_cast<int>(to_nccl_path(best_type)) <= static_cast<int>(level.level);
    const std::string eff = near ? method : "none";
    const std::string found = "GPU " + g.bdf + " -> " + best->name + ": " +
                              sysfs::to_string(best_type) + ", GPUDirect RDMA " +
                              (eff == "none" ? "none" : "via " + eff) + " (GDR level " +
                              level.shown + ")";
    if (!near)
      report.warn(
          id,
          found + ": NCCL will not use GPUDirect RDMA with it: " + sysfs::to_string(best_type) +
              " is farther than " + to_string(level.level) + " (" + level_words(level.level) + ")",
          "grant the GPU the NIC under its own PCIe switch (or raise "
          "NCCL_NET_GDR_LEVEL, at a bandwidth cost)");
    else if (eff == "none")
      report.fail(id, found, "use the open kernel module (dma-buf) or modprobe nvidia-peermem");
    else
      report.pass(id, found);
  }
  check_p2p(ctx, nvidia, report);
  if (gpus == 0 && mod.loaded)
    report.warn("nvidia.paths", "no NVIDIA GPU in " + ctx.sysfs_root + "/bus/pci/devices",
                "grant the container a GPU (its synthetic sysfs shows granted GPUs only)");
  facts["pairs"] = pairs;
  report.facts()["nvidia"] = facts;
}

}  // namespace gdrproxy::doctor
