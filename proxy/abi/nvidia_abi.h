// NVIDIA driver ABI as data: frontend escape numbers, RM_ALLOC classes, RM_CONTROL commands and
// UVM ioctl numbers, each with its name, sizes and the field layouts the decoder reads, per driver
// release. Every release is built from the tables generated from that release's own source
// (nvidia_generated.h); nothing is written by hand per branch. Decoder, policy and tracer all read
// one release's tables, the session's; nothing else in the project spells an NVIDIA number.
#pragma once

#include <linux/ioctl.h>

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "proxy/abi/nvidia_layouts.h"

namespace gdrproxy::proxy {

class NvGenTables;  // nvidia_generated.h

struct NvEscape {
  uint8_t nr;           // IOC_NR of the ioctl on /dev/nvidiactl or /dev/nvidiaN
  const char* name;     // e.g. "RM_ALLOC", "CARD_INFO"
  uint16_t param_size;  // sizeof the parameter struct on x86-64 (0 = variable/unchecked)
  // A second size the driver accepts (RM_ALLOC takes NVOS21 or NVOS64), 0 = none.
  uint16_t alt_param_size = 0;
  // >0: the parameter is an array of elements of this size (CARD_INFO, ATTACH_GPUS_TO_FD);
  // param_size is then 0 and IOC_SIZE must be a non-zero multiple of elem_size.
  uint16_t elem_size = 0;
  // Offset of the NV_STATUS the driver writes back, -1 = none (for RM_ALLOC: of param_size).
  int16_t status_offset = -1;
  int16_t alt_status_offset = -1;  // the same in the alt_param_size struct
  // The fields the decoder shows of its parameters, at this release's offsets (nvidia_layouts.h);
  // empty when none are declared.
  std::span<const NvField> fields = {};
};

struct NvClass {
  uint32_t id;       // hClass of RM_ALLOC
  const char* name;  // e.g. "NV01_ROOT_CLIENT", "AMPERE_CHANNEL_GPFIFO_A"
};

struct NvControl {
  uint32_t cmd;      // NVOS54 cmd of RM_CONTROL
  const char* name;  // e.g. "NV0000_CTRL_CMD_SYSTEM_GET_BUILD_VERSION"
};

struct NvUvmIoctl {
  uint32_t cmd;                          // raw request number on /dev/nvidia-uvm (not _IOC-encoded)
  const char* name;                      // e.g. "UVM_INITIALIZE"
  uint16_t param_size = 0;               // sizeof UVM_*_PARAMS on x86-64 (0 = takes no parameters)
  int16_t status_offset = -1;            // offset of rmStatus, -1 = none
  std::span<const NvField> fields = {};  // as NvEscape::fields
};

// One driver release's tables.
struct NvidiaDriverAbi {
  std::string_view version;  // "580.159.04"
  std::span<const NvEscape> escapes;
  std::span<const NvClass> classes;
  std::span<const NvControl> controls;
  std::span<const NvUvmIoctl> uvm_ioctls;
  // The release's generated tables: who may make each RM call (nvidia_access.h), parameter
  // sizes, flags, and the names of controls answered outside the method tables.
  const NvGenTables* generated = nullptr;
  // The release's layout of EXPORT_TO_DMABUF_FD's parameters (it differs between branches).
  NvDmabufLayout dmabuf{};

  const NvEscape* find_escape(uint8_t nr) const;
  const NvClass* find_class(uint32_t id) const;
  const NvControl* find_control(uint32_t cmd) const;
  const NvUvmIoctl* find_uvm(uint32_t cmd) const;
  // Reverse lookups by name, for policy files that name calls instead of numbering them.
  const NvEscape* find_escape(std::string_view name) const;
  const NvClass* find_class(std::string_view name) const;
  const NvControl* find_control(std::string_view name) const;
  const NvUvmIoctl* find_uvm(std::string_view name) const;
};

// The tables for an exact driver version, or nullptr when this build does not know it. Which
// tables a node's driver is judged with is nvidia_abi_choice.h's question, not this lookup's.
const NvidiaDriverAbi* nvidia_abi_for_version(std::string_view version);
// The loaded kernel module's version from <proc_root>/driver/nvidia/version, if any.
std::optional<std::string> detect_nvidia_driver_version(const std::string& proc_root = "/proc");

// Every driver version this build knows, oldest first. Building all of them costs; the
// seccomp filter's union of escapes is nvidia_escapes_of_every_release() instead.
std::span<const NvidiaDriverAbi* const> nvidia_known_abis();
// Every (number, sizes) an escape has in some release, each once, sorted by number.
std::vector<NvEscape> nvidia_escapes_of_every_release();
// "580.159.04" -> {580, 159, 4}, for ordering releases (non-numeric parts count as 0).
std::vector<unsigned long> nvidia_version_key(std::string_view version);
// The version string out of the text of /proc/driver/nvidia/version ("NVRM version: NVIDIA
// UNIX Open Kernel Module for x86_64  580.159.04  Release Build ..."), if it has one.
std::optional<std::string> parse_nvidia_version_text(std::string_view text);

// Name of an NV_STATUS value (e.g. "NV_OK", "NV_ERR_INVALID_ARGUMENT"), nullptr if unknown.
const char* nvidia_status_name(uint32_t status);

// NVIDIA frontend ioctls use type 'F'; the driver dispatches on IOC_NR alone.
inline constexpr uint8_t kNvIoctlType = 0x46;
// The request NVIDIA's user-space libraries send for escape `nr` with a `size`-byte parameter
// block: _IOWR('F', nr, size).
inline constexpr uint32_t nv_escape_request(uint8_t nr, uint32_t size) {
  return _IOC(_IOC_READ | _IOC_WRITE, kNvIoctlType, nr, size);
}
// Escapes whose parameters are not a flat struct, so that decoders treat them by hand
// (nv_escape.h and nv-ioctl-numbers.h; the same in every known release).
inline constexpr uint8_t kNvEscRmControl = 0x2a;
inline constexpr uint8_t kNvEscRmAlloc = 0x2b;
inline constexpr uint8_t kNvEscCardInfo = 200;
inline constexpr uint8_t kNvEscCheckVersionStr = 210;
// The escape that tunnels another escape whose parameters exceed what IOC_SIZE can carry.
inline constexpr uint8_t kNvEscIoctlXferCmd = 211;
inline constexpr uint8_t kNvEscAttachGpusToFd = 212;
inline constexpr uint8_t kNvEscExportToDmabufFd = 217;
inline constexpr uint8_t kNvEscWaitOpenComplete = 218;
// RM classes and controls the supervisor itself acts on (nvos.h, cl0080.h, ctrl0000gpu.h; the
// same in every known release): a device object names its GPU by device instance, which only
// the driver can map to a GPU (and its /dev/nvidiaN minor).
inline constexpr uint32_t kNvClassRootClient = 0x41;      // NV01_ROOT_CLIENT
inline constexpr uint32_t kNvClassDevice = 0x80;          // NV01_DEVICE_0
inline constexpr uint32_t kNvCtrlGpuGetIdInfoV2 = 0x205;  // NV0000_CTRL_CMD_GPU_GET_ID_INFO_V2
// Device instances the driver accepts (NV_MAX_DEVICES), and CARD_INFO entries to ask for.
inline constexpr uint32_t kNvMaxDevices = 32;
// Largest parameter block the driver copies in through IOCTL_XFER_CMD.
inline constexpr uint32_t kNvAbsoluteMaxIoctlSize = 16384;

}  // namespace gdrproxy::proxy
