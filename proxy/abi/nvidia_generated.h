// The NVIDIA driver's RM tables as generated from its open source at each release tag
// (scripts/nvidia-abi/generate.py writes proxy/abi/generated/): every control each RM class
// exports with its parameter size and RMCTRL flags, the allocatable classes with their
// allocation parameter sizes and RS flags, the frontend escapes and the UVM ioctls with the
// parameter structs their handlers check, the layouts (member offsets and sizes) of those
// structs, and the names of the FINN interfaces and SDK-defined commands no class exports.
// The one idea: these tables name and describe calls; they decide nothing. nvidia_access.h
// reads from them who the driver lets make a call, and the policy decides from that. A release
// is its parent plus a patch, the way the driver's own branch history grows.
#pragma once

#include <cstddef>
#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace gdrproxy::proxy {

// Names are held in the rows, not pointed to: a table of pointers is relocated by the loader
// at every start of the binary (some 12,000 pointers, 250 KB of pages written), and the binary
// starts once or twice per container (the runtime shim). These are the longest names a row
// holds; generate.py refuses a release whose names do not fit.
inline constexpr size_t kNvGenName = 96;         // a control's, class's, record's or field's name
inline constexpr size_t kNvGenRmClassName = 64;  // the NVOC class(es), "A|B" when several

struct NvGenControl {
  uint32_t cmd;           // methodId of the class's exported method table
  char name[kNvGenName];  // the SDK header's NV*_CTRL_CMD_* name (else the handler's name)
  char nvoc_class[kNvGenRmClassName];  // the RM class(es) exporting it, "A|B" when several do
  int32_t param_size;     // sizeof its parameter struct on x86-64, 0 none, -1 not derivable
  uint32_t flags;         // RMCTRL_FLAGS_* bits, decoded by NvGenTables::control_flags()
  uint32_t access_right;  // the RS access right it needs, 0 none
};

enum class NvGenParams : uint8_t { kNone = 0, kOptional = 1, kRequired = 2 };

struct NvGenClass {
  uint32_t id;                         // hClass of RM_ALLOC
  char name[kNvGenName];               // e.g. "NV01_DEVICE_0"
  char nvoc_class[kNvGenRmClassName];  // the RM class that implements it, e.g. "Device"
  int32_t param_size;                  // sizeof its allocation parameters, 0 none, -1 not derivable
  uint8_t params;                      // NvGenParams
  uint32_t rs_flags;                   // RS_FLAGS_* bits, decoded by NvGenTables::class_flags()
};

struct NvGenEscape {
  uint8_t nr;
  char name[kNvGenName];    // NV_ESC_ without the prefix
  uint16_t param_size;      // a size the driver's handler checks, 0 = none derivable
  uint16_t alt_param_size;  // a second accepted size (RM_ALLOC: NVOS21 beside NVOS64), 0 none
  uint16_t elem_size;       // >0: the parameter is an array of such elements; param_size is then 0
  int16_t status_offset;    // offset of the NV_STATUS the driver writes back, -1 none
  int16_t alt_status_offset;    // the same in the alt_param_size struct, -1 none
  char record[kNvGenName];      // the parameter struct's name (find_record), "" none
  char alt_record[kNvGenName];  // the alt_param_size struct's name, "" none
};

struct NvGenUvmIoctl {
  uint32_t cmd;
  char name[kNvGenName];
  int32_t param_size;     // sizeof UVM_*_PARAMS, 0 none, -1 not derivable
  int32_t status_offset;  // offset of its rmStatus, -1 none
};

// A struct's size on x86-64 (the escapes' and UVM's parameter structs and a few more).
struct NvGenRecord {
  uint32_t key;  // nvidia_fnv1a32(name)
  char name[kNvGenName];
  uint32_t size;
};

// One member of a record: nested struct and union members are flattened into a dotted path
// ("params.status"); an array is one field (element 0's offset, the whole array's size).
struct NvGenField {
  uint32_t key;  // nvidia_fnv1a32(record + "." + field)
  char record[kNvGenName];
  char field[kNvGenName];
  uint32_t offset;
  uint32_t size;
};

// A FINN interface of the SDK (g_finn_rm_api.h): a control's upper 24 bits, e.g. 0x208005
// "NV20_SUBDEVICE_0_THERMAL"; the legacy ones (category bit 0x80) name GSS-forwarded commands.
struct NvGenInterface {
  uint32_t id;
  char name[kNvGenName];
};

// A control number an SDK header names that no class's exported method table has (the driver
// answers it elsewhere: forwarded to the GPU's firmware, or not at all).
struct NvGenCommandName {
  uint32_t cmd;
  char name[kNvGenName];
};

// A command the driver converts to a newer control before dispatching it
// (rmapi_deprecated_control.c): the caller's call is judged as that control.
struct NvGenDeprecated {
  uint32_t cmd;
  char name[kNvGenName];
  uint32_t target;  // the control it is converted to (the _V2 or _V3 of the same name)
};

struct NvGenFlag {
  uint32_t bit;
  char name[kNvGenName];  // without the RMCTRL_FLAGS_ / RS_FLAGS_ prefix
};

// One release's merged tables. Built on first lookup and never changed after, so lookups from
// the notification loop need no lock beyond the first.
class NvGenTables {
 public:
  std::string_view version;     // the driver release
  std::string_view parent;      // the release it patches, empty for the root
  std::string_view source_tag;  // the tag it was generated from (differs for an untagged one)

  const NvGenControl* find_control(uint32_t cmd) const;
  const NvGenClass* find_class(uint32_t id) const;
  const NvGenEscape* find_escape(uint8_t nr) const;
  const NvGenUvmIoctl* find_uvm(uint32_t cmd) const;
  const NvGenDeprecated* find_deprecated(uint32_t cmd) const;
  std::span<const NvGenDeprecated* const> deprecated() const;
  const NvGenControl* find_control(std::string_view name) const;
  const NvGenClass* find_class(std::string_view name) const;
  const NvGenRecord* find_record(std::string_view name) const;
  // find_field("NVOS54_PARAMETERS", "cmd"), find_field("...with_fd", "params.status").
  const NvGenField* find_field(std::string_view record, std::string_view field) const;
  const NvGenInterface* find_interface(uint32_t id) const;
  const NvGenCommandName* find_command_name(uint32_t cmd) const;

  std::span<const NvGenControl* const> controls() const;
  std::span<const NvGenClass* const> classes() const;
  std::span<const NvGenEscape* const> escapes() const;
  std::span<const NvGenUvmIoctl* const> uvm_ioctls() const;
  std::span<const NvGenRecord* const> records() const;             // sorted by key
  std::span<const NvGenField* const> fields() const;               // sorted by key
  std::span<const NvGenInterface* const> interfaces() const;       // sorted by id
  std::span<const NvGenCommandName* const> command_names() const;  // sorted by cmd

  // The release's own definitions of the flag bits, and "A|B|0x..." renderings of a value.
  std::span<const NvGenFlag* const> control_flag_bits() const;
  std::span<const NvGenFlag* const> class_flag_bits() const;
  std::string control_flags(uint32_t flags) const;
  std::string class_flags(uint32_t flags) const;
  // Whether `flags` has the bit this release calls `name` (e.g. "PRIVILEGED"); false when the
  // release defines no such bit (RMCTRL_FLAGS_KERNEL_PRIVILEGED is 0 in some).
  bool control_has(uint32_t flags, std::string_view name) const;
  bool class_has(uint32_t flags, std::string_view name) const;
  // The RM_GSS_LEGACY_MASK bits of this release: a command with `gss_legacy_mask()` set, on any
  // GPU object of a GSP-driven GPU, is forwarded as is to the GPU's firmware; with all of
  // `gss_privileged_mask()` set only for an administrator. 0 where the release has none.
  uint32_t gss_legacy_mask() const;
  uint32_t gss_privileged_mask() const;

  explicit NvGenTables(size_t index);
  ~NvGenTables();

 private:
  struct Merged;
  const Merged& merged() const;
  size_t index_;
  mutable std::once_flag once_;
  mutable const Merged* merged_ = nullptr;  // built on first use, owned
};

// FNV-1a, 32 bits (offset basis 2166136261, prime 16777619), over the bytes: the key of the
// records and fields.
uint32_t nvidia_fnv1a32(std::string_view s);

// The generated tables of exactly this release, or nullptr when none were generated for it.
const NvGenTables* nvidia_generated_for_version(std::string_view version);
// Every escape row of any release (each as it was added by some release's patch, so one escape
// number may appear with each size it had), without merging any release: the seccomp filter's
// union.
std::vector<const NvGenEscape*> nvidia_generated_escape_rows();
// The newest release the generated tables cover.
const NvGenTables& nvidia_generated_newest();
// Every covered release, oldest first.
std::span<const NvGenTables* const> nvidia_generated_releases();

// The RM class a control number belongs to by its upper 16 bits (NV2080_CTRL_CMD_* -> the
// class numbered 0x2080), from the tables' classes; nullptr if none has that number.
const NvGenClass* nvidia_generated_class_of_control(const NvGenTables& t, uint32_t cmd);

}  // namespace gdrproxy::proxy
