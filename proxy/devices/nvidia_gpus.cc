// The supervisor as an NVIDIA driver client of its own: version handshake, CARD_INFO, a root
// client, one GET_ID_INFO_V2 per GPU. Closing the fd frees the client. Struct offsets come from
// proxy/abi/nvidia_layouts.h, numbers from proxy/abi/nvidia_abi.h.
#include "proxy/devices/nvidia_gpus.h"

#include <fcntl.h>
#include <sys/ioctl.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <vector>

#include "base/unique_fd.h"
#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/nvidia_layouts.h"

namespace gdrproxy::proxy {
namespace {

namespace L = nvlayout;

template <typename T>
void put(std::vector<uint8_t>& b, size_t off, T v) {
  std::memcpy(b.data() + off, &v, sizeof v);
}
template <typename T>
T take(const std::vector<uint8_t>& b, size_t off) {
  T v;
  std::memcpy(&v, b.data() + off, sizeof v);
  return v;
}

// One frontend escape on `fd` with `params` as its in/out block; -errno on failure.
int escape(int fd, uint8_t nr, std::vector<uint8_t>& params) {
  const unsigned long req = nv_escape_request(nr, static_cast<uint32_t>(params.size()));
  return ::ioctl(fd, req, params.data()) == 0 ? 0 : -errno;
}

std::string status_text(uint32_t status) {
  const char* n = nvidia_status_name(status);
  return n ? n : "NV_STATUS " + std::to_string(status);
}

}  // namespace

std::optional<std::vector<NvidiaGpu>> query_nvidia_gpus(const std::string& ctl_path,
                                                        std::string_view driver_version,
                                                        std::string& why) {
  const UniqueFd ctl(::open(ctl_path.c_str(), O_RDWR | O_CLOEXEC));  // closing frees the client
  if (!ctl) {
    why = "cannot open " + ctl_path + ": " + std::strerror(errno);
    return std::nullopt;
  }
  const int fd = ctl.get();

  std::vector<uint8_t> version(L::kVersionString + L::kVersionStringLen, 0);
  put<uint32_t>(version, L::kVersionCmd, 0);  // strict: our version must be the driver's
  std::memcpy(version.data() + L::kVersionString, driver_version.data(),
              std::min<size_t>(driver_version.size(), L::kVersionStringLen - 1));
  if (int rc = escape(fd, kNvEscCheckVersionStr, version); rc != 0) {
    why = ctl_path + " CHECK_VERSION_STR: " + std::strerror(-rc);
    return std::nullopt;
  }
  if (take<uint32_t>(version, L::kVersionReply) != 1) {
    why = ctl_path + " does not accept driver version " + std::string(driver_version);
    return std::nullopt;
  }

  std::vector<uint8_t> cards(size_t{kNvMaxDevices} * L::kCardSize, 0);
  if (int rc = escape(fd, kNvEscCardInfo, cards); rc != 0) {
    why = ctl_path + " CARD_INFO: " + std::strerror(-rc);
    return std::nullopt;
  }

  std::vector<uint8_t> alloc(L::kNvos21Size, 0);
  put<uint32_t>(alloc, L::kAllocHClass, kNvClassRootClient);
  if (int rc = escape(fd, kNvEscRmAlloc, alloc); rc != 0) {
    why = ctl_path + " RM_ALLOC(NV01_ROOT_CLIENT): " + std::strerror(-rc);
    return std::nullopt;
  }
  if (uint32_t st = take<uint32_t>(alloc, L::kAlloc21Status); st != 0) {
    why = ctl_path + " RM_ALLOC(NV01_ROOT_CLIENT): " + status_text(st);
    return std::nullopt;
  }
  const uint32_t client = take<uint32_t>(alloc, L::kAllocHObjectNew);

  std::vector<NvidiaGpu> gpus;
  for (uint32_t i = 0; i < kNvMaxDevices; ++i) {
    const size_t off = size_t{i} * L::kCardSize;
    if (cards[off + L::kCardValid] == 0) continue;
    NvidiaGpu g;
    g.gpu_id = take<uint32_t>(cards, off + L::kCardGpuId);
    g.minor = take<uint32_t>(cards, off + L::kCardMinor);
    std::vector<uint8_t> info(L::kIdInfoSize, 0);
    put<uint32_t>(info, L::kIdInfoGpuId, g.gpu_id);
    std::vector<uint8_t> control(L::kCtrlStatus + 4, 0);
    put<uint32_t>(control, L::kCtrlHClient, client);
    put<uint32_t>(control, L::kCtrlHObject, client);
    put<uint32_t>(control, L::kCtrlCmd, kNvCtrlGpuGetIdInfoV2);
    put<uint64_t>(control, L::kCtrlParams, reinterpret_cast<uintptr_t>(info.data()));
    put<uint32_t>(control, L::kCtrlParamsSize, L::kIdInfoSize);
    // A GPU that is not attached has no device instance (the driver answers an error status).
    if (escape(fd, kNvEscRmControl, control) == 0 && take<uint32_t>(control, L::kCtrlStatus) == 0)
      g.device_instance = take<uint32_t>(info, L::kIdInfoDeviceInstance);
    gpus.push_back(g);
  }
  return gpus;
}

const NvidiaGpu* gpu_of_device_instance(const std::vector<NvidiaGpu>& gpus, uint32_t instance) {
  for (const NvidiaGpu& g : gpus)
    if (g.device_instance == instance) return &g;
  return nullptr;
}

std::vector<ProcGpu> nvidia_gpus_in_proc(const std::string& proc_root) {
  std::vector<ProcGpu> out;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(proc_root + "/driver/nvidia/gpus", ec)) {
    std::ifstream in(e.path() / "information");
    ProcGpu g;
    g.bdf = e.path().filename().string();
    bool have_minor = false;
    for (std::string line; std::getline(in, line);) {
      auto value = [&](std::string_view key) -> std::optional<std::string> {
        if (line.rfind(key, 0) != 0) return std::nullopt;
        std::string v = line.substr(key.size());
        v.erase(0, v.find_first_not_of(" \t"));
        return v;
      };
      if (auto v = value("Device Minor:")) {
        char* end = nullptr;
        const unsigned long m = std::strtoul(v->c_str(), &end, 10);
        if (end != v->c_str()) {
          g.minor = static_cast<unsigned>(m);
          have_minor = true;
        }
      }
      if (auto v = value("GPU UUID:")) g.uuid = *v;
    }
    if (have_minor) out.push_back(g);
  }
  std::sort(out.begin(), out.end(),
            [](const ProcGpu& a, const ProcGpu& b) { return a.minor < b.minor; });
  return out;
}

}  // namespace gdrproxy::proxy
