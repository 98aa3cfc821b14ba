// Minimal NVIDIA tables used until the full per-version tables are built in (escape names only).
#include <fstream>
#include <regex>
#include <sstream>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/decode/format.h"
#include "proxy/decode/nvidia_decoder.h"

namespace gdrproxy::proxy {
namespace {
constexpr NvEscape kEscapes[] = {
    {0x27, "RM_ALLOC_MEMORY", 0},  {0x29, "RM_FREE", 0},        {0x2a, "RM_CONTROL", 32},
    {0x2b, "RM_ALLOC", 48},        {0x4e, "RM_MAP_MEMORY", 56}, {0x4f, "RM_UNMAP_MEMORY", 0},
    {200, "CARD_INFO", 0},         {201, "REGISTER_FD", 0},     {210, "CHECK_VERSION_STR", 0},
    {212, "ATTACH_GPUS_TO_FD", 0}, {214, "SYS_PARAMS", 0},      {217, "EXPORT_TO_DMABUF_FD", 0},
};
constexpr NvUvmIoctl kUvm[] = {{0x30000001, "UVM_INITIALIZE"}, {0x30000002, "UVM_DEINITIALIZE"}};
const NvidiaDriverAbi kAbi{"580.159.04", kEscapes, {}, {}, kUvm};
}  // namespace

const NvEscape* NvidiaDriverAbi::find_escape(uint8_t nr) const {
  for (const auto& e : escapes)
    if (e.nr == nr) return &e;
  return nullptr;
}
const NvClass* NvidiaDriverAbi::find_class(uint32_t id) const {
  for (const auto& c : classes)
    if (c.id == id) return &c;
  return nullptr;
}
const NvControl* NvidiaDriverAbi::find_control(uint32_t cmd) const {
  for (const auto& c : controls)
    if (c.cmd == cmd) return &c;
  return nullptr;
}
const NvUvmIoctl* NvidiaDriverAbi::find_uvm(uint32_t cmd) const {
  for (const auto& u : uvm_ioctls)
    if (u.cmd == cmd) return &u;
  return nullptr;
}
const NvEscape* NvidiaDriverAbi::find_escape(std::string_view n) const {
  for (const auto& e : escapes)
    if (n == e.name) return &e;
  return nullptr;
}
const NvClass* NvidiaDriverAbi::find_class(std::string_view n) const {
  for (const auto& c : classes)
    if (n == c.name) return &c;
  return nullptr;
}
const NvControl* NvidiaDriverAbi::find_control(std::string_view n) const {
  for (const auto& c : controls)
    if (n == c.name) return &c;
  return nullptr;
}
const NvUvmIoctl* NvidiaDriverAbi::find_uvm(std::string_view n) const {
  for (const auto& u : uvm_ioctls)
    if (n == u.name) return &u;
  return nullptr;
}
const NvidiaDriverAbi* nvidia_abi_for_version(std::string_view v) {
  return v == kAbi.version ? &kAbi : nullptr;
}
const NvidiaDriverAbi& nvidia_newest_abi() {
  return kAbi;
}
std::optional<std::string> detect_nvidia_driver_version(const std::string& proc_root) {
  std::ifstream in(proc_root + "/driver/nvidia/version");
  std::string line;
  if (!std::getline(in, line)) return std::nullopt;
  std::smatch m;
  if (std::regex_search(line, m, std::regex(R"(\s(\d+\.\d+(\.\d+)?)\s)"))) return m[1].str();
  return std::nullopt;
}

DecodedCall decode_nvidia_frontend_ioctl(uint32_t cmd, uint64_t, const MemoryReader&,
                                         const NvidiaDriverAbi& abi) {
  DecodedCall c;
  c.device_class = DeviceClass::kNvidiaFrontend;
  c.cmd = cmd;
  c.keys.nv_escape = cmd & 0xff;
  const auto* e = abi.find_escape(cmd & 0xff);
  c.name = e ? e->name : "ESC_" + hex(cmd & 0xff);
  return c;
}
DecodedCall decode_nvidia_uvm_ioctl(uint32_t cmd, uint64_t, const MemoryReader&,
                                    const NvidiaDriverAbi& abi) {
  DecodedCall c;
  c.device_class = DeviceClass::kNvidiaUvm;
  c.cmd = cmd;
  c.keys.uvm_cmd = cmd;
  const auto* u = abi.find_uvm(cmd);
  c.name = u ? u->name : "UVM_" + hex(cmd);
  return c;
}
void decode_nvidia_result(const DecodedCall&, std::span<const uint8_t>, std::span<const uint8_t>,
                          std::vector<DecodedField>&) {}

}  // namespace gdrproxy::proxy
