// Materializes the generated NVIDIA release tables (proxy/abi/generated/, written by
// scripts/nvidia-abi/generate.py): a release is its parent plus a patch, so its tables are the
// root's with every patch down the chain applied in order. Each release is merged on its first
// lookup, alone (its ancestors are walked, not kept), and read-only after.
#include "proxy/abi/nvidia_generated.h"

#include <algorithm>
#include <cstdint>
#include <memory>

#include "base/hex.h"

namespace gdrproxy::proxy {
namespace {

template <typename T>
struct PatchOf {
  std::span<const T> add;            // sorted by key; replaces same-keyed entries of the parent
  std::span<const uint32_t> remove;  // sorted keys that disappear
};

struct NvGenRelease {
  const char* version;
  const char* parent;
  const char* source_tag;
  PatchOf<NvGenControl> controls;
  PatchOf<NvGenClass> classes;
  PatchOf<NvGenEscape> escapes;
  PatchOf<NvGenUvmIoctl> uvm;
  PatchOf<NvGenFlag> rmctrl_flags;
  PatchOf<NvGenFlag> rs_flags;
  PatchOf<NvGenDeprecated> deprecated;
  PatchOf<NvGenFlag> gss;
  PatchOf<NvGenRecord> records;
  PatchOf<NvGenField> fields;
  PatchOf<NvGenInterface> interfaces;
  PatchOf<NvGenCommandName> command_names;
};

#include "proxy/abi/generated/nvidia_releases.inc"

uint32_t key_of(const NvGenControl& e) {
  return e.cmd;
}
uint32_t key_of(const NvGenClass& e) {
  return e.id;
}
uint32_t key_of(const NvGenEscape& e) {
  return e.nr;
}
uint32_t key_of(const NvGenUvmIoctl& e) {
  return e.cmd;
}
uint32_t key_of(const NvGenDeprecated& e) {
  return e.cmd;
}
uint32_t key_of(const NvGenFlag& e) {
  return e.bit;
}
uint32_t key_of(const NvGenRecord& e) {
  return e.key;
}
uint32_t key_of(const NvGenField& e) {
  return e.key;
}
uint32_t key_of(const NvGenInterface& e) {
  return e.id;
}
uint32_t key_of(const NvGenCommandName& e) {
  return e.cmd;
}

constexpr uint32_t kFnvBasis = 2166136261u;
constexpr uint32_t kFnvPrime = 16777619u;

uint32_t fnv_continue(uint32_t h, std::string_view s) {
  for (const char c : s) h = (h ^ static_cast<uint8_t>(c)) * kFnvPrime;
  return h;
}

// parent + patch, both sorted by key.
template <typename T>
std::vector<const T*> apply_patch(const std::vector<const T*>& parent, const PatchOf<T>& p) {
  std::vector<const T*> out;
  out.reserve(parent.size() + p.add.size());
  auto a = p.add.begin();
  const auto removed = [&](uint32_t k) {
    return std::binary_search(p.remove.begin(), p.remove.end(), k);
  };
  for (const T* e : parent) {
    const uint32_t k = key_of(*e);
    while (a != p.add.end() && key_of(*a) < k) out.push_back(&*a++);
    if (a != p.add.end() && key_of(*a) == k) {
      out.push_back(&*a++);
    } else if (!removed(k)) {
      out.push_back(e);
    }
  }
  while (a != p.add.end()) out.push_back(&*a++);
  return out;
}

template <typename T>
const T* find_key(std::span<const T* const> t, uint32_t k) {
  auto it = std::lower_bound(t.begin(), t.end(), k,
                             [](const T* e, uint32_t key) { return key_of(*e) < key; });
  return it != t.end() && key_of(**it) == k ? *it : nullptr;
}

template <typename T>
const T* find_name(std::span<const T* const> t, std::string_view name) {
  for (const T* e : t)
    if (name == e->name) return e;
  return nullptr;
}

std::string render_flags(std::span<const NvGenFlag* const> bits, uint32_t flags) {
  std::string s;
  uint32_t rest = flags;
  for (const NvGenFlag* f : bits) {
    if (!(flags & f->bit)) continue;
    if (!s.empty()) s += '|';
    s += f->name;
    rest &= ~f->bit;
  }
  if (rest) {
    if (!s.empty()) s += '|';
    s += hex(rest);
  }
  return s.empty() ? "none" : s;
}

// The bit(s) a release calls `name`, 0 when it defines none.
uint32_t bit_named(std::span<const NvGenFlag* const> bits, std::string_view name) {
  for (const NvGenFlag* f : bits)
    if (name == f->name) return f->bit;
  return 0;
}

size_t index_of(std::string_view version) {
  for (size_t i = 0; i < std::size(kGeneratedReleases); ++i)
    if (version == kGeneratedReleases[i].version) return i;
  return SIZE_MAX;
}

struct Registry {
  std::vector<std::unique_ptr<NvGenTables>> owned;
  std::vector<const NvGenTables*> all;
};

const Registry& registry() {
  static const Registry reg = [] {
    Registry r;
    for (size_t i = 0; i < std::size(kGeneratedReleases); ++i) {
      r.owned.push_back(std::make_unique<NvGenTables>(i));
      r.all.push_back(r.owned.back().get());
    }
    return r;
  }();
  return reg;
}

}  // namespace

struct NvGenTables::Merged {
  std::vector<const NvGenControl*> controls;
  std::vector<const NvGenClass*> classes;
  std::vector<const NvGenEscape*> escapes;
  std::vector<const NvGenUvmIoctl*> uvm;
  std::vector<const NvGenFlag*> rmctrl_flags;
  std::vector<const NvGenFlag*> rs_flags;
  std::vector<const NvGenDeprecated*> deprecated;
  std::vector<const NvGenFlag*> gss;
  std::vector<const NvGenRecord*> records;
  std::vector<const NvGenField*> fields;
  std::vector<const NvGenInterface*> interfaces;
  std::vector<const NvGenCommandName*> command_names;
};

NvGenTables::NvGenTables(size_t index) : index_(index) {
  const NvGenRelease& r = kGeneratedReleases[index];
  version = r.version;
  parent = r.parent;
  source_tag = r.source_tag;
}

NvGenTables::~NvGenTables() {
  delete merged_;
}

const NvGenTables::Merged& NvGenTables::merged() const {
  std::call_once(once_, [this] {
    // The chain from this release up to its root, then applied root first.
    std::vector<size_t> chain;
    for (size_t i = index_; i != SIZE_MAX; i = index_of(kGeneratedReleases[i].parent)) {
      chain.push_back(i);
      if (kGeneratedReleases[i].parent[0] == '\0') break;
    }
    auto* m = new Merged;  // owned by this object (deleted with it, at exit)
    for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
      const NvGenRelease& r = kGeneratedReleases[*it];
      m->controls = apply_patch(m->controls, r.controls);
      m->classes = apply_patch(m->classes, r.classes);
      m->escapes = apply_patch(m->escapes, r.escapes);
      m->uvm = apply_patch(m->uvm, r.uvm);
      m->rmctrl_flags = apply_patch(m->rmctrl_flags, r.rmctrl_flags);
      m->rs_flags = apply_patch(m->rs_flags, r.rs_flags);
      m->deprecated = apply_patch(m->deprecated, r.deprecated);
      m->gss = apply_patch(m->gss, r.gss);
      m->records = apply_patch(m->records, r.records);
      m->fields = apply_patch(m->fields, r.fields);
      m->interfaces = apply_patch(m->interfaces, r.interfaces);
      m->command_names = apply_patch(m->command_names, r.command_names);
    }
    merged_ = m;
  });
  return *merged_;
}

const NvGenControl* NvGenTables::find_control(uint32_t cmd) const {
  return find_key<NvGenControl>(merged().controls, cmd);
}
const NvGenClass* NvGenTables::find_class(uint32_t id) const {
  return find_key<NvGenClass>(merged().classes, id);
}
const NvGenEscape* NvGenTables::find_escape(uint8_t nr) const {
  return find_key<NvGenEscape>(merged().escapes, nr);
}
const NvGenUvmIoctl* NvGenTables::find_uvm(uint32_t cmd) const {
  return find_key<NvGenUvmIoctl>(merged().uvm, cmd);
}
const NvGenDeprecated* NvGenTables::find_deprecated(uint32_t cmd) const {
  return find_key<NvGenDeprecated>(merged().deprecated, cmd);
}
const NvGenControl* NvGenTables::find_control(std::string_view name) const {
  return find_name<NvGenControl>(merged().controls, name);
}
const NvGenClass* NvGenTables::find_class(std::string_view name) const {
  return find_name<NvGenClass>(merged().classes, name);
}
const NvGenRecord* NvGenTables::find_record(std::string_view name) const {
  const NvGenRecord* r = find_key<NvGenRecord>(merged().records, nvidia_fnv1a32(name));
  return r && name == r->name ? r : nullptr;
}
const NvGenField* NvGenTables::find_field(std::string_view record, std::string_view field) const {
  const uint32_t k = fnv_continue(fnv_continue(nvidia_fnv1a32(record), "."), field);
  const NvGenField* f = find_key<NvGenField>(merged().fields, k);
  return f && record == f->record && field == f->field ? f : nullptr;
}
const NvGenInterface* NvGenTables::find_interface(uint32_t id) const {
  return find_key<NvGenInterface>(merged().interfaces, id);
}
const NvGenCommandName* NvGenTables::find_command_name(uint32_t cmd) const {
  return find_key<NvGenCommandName>(merged().command_names, cmd);
}
std::span<const NvGenDeprecated* const> NvGenTables::deprecated() const {
  return merged().deprecated;
}
std::span<const NvGenControl* const> NvGenTables::controls() const {
  return merged().controls;
}
std::span<const NvGenClass* const> NvGenTables::classes() const {
  return merged().classes;
}
std::span<const NvGenEscape* const> NvGenTables::escapes() const {
  return merged().escapes;
}
std::span<const NvGenUvmIoctl* const> NvGenTables::uvm_ioctls() const {
  return merged().uvm;
}
std::span<const NvGenInterface* const> NvGenTables::interfaces() const {
  return merged().interfaces;
}
std::span<const NvGenCommandName* const> NvGenTables::command_names() const {
  return merged().command_names;
}
std::span<const NvGenRecord* const> NvGenTables::records() const {
  return merged().records;
}
std::span<const NvGenField* const> NvGenTables::fields() const {
  return merged().fields;
}
std::span<const NvGenFlag* const> NvGenTables::control_flag_bits() const {
  return merged().rmctrl_flags;
}
std::span<const NvGenFlag* const> NvGenTables::class_flag_bits() const {
  return merged().rs_flags;
}
std::string NvGenTables::control_flags(uint32_t flags) const {
  return render_flags(merged().rmctrl_flags, flags);
}
std::string NvGenTables::class_flags(uint32_t flags) const {
  return render_flags(merged().rs_flags, flags);
}
bool NvGenTables::control_has(uint32_t flags, std::string_view name) const {
  return (flags & bit_named(merged().rmctrl_flags, name)) != 0;
}
bool NvGenTables::class_has(uint32_t flags, std::string_view name) const {
  return (flags & bit_named(merged().rs_flags, name)) != 0;
}

uint32_t NvGenTables::gss_legacy_mask() const {
  return bit_named(merged().gss, "GSS_LEGACY");
}
uint32_t NvGenTables::gss_privileged_mask() const {
  return bit_named(merged().gss, "GSS_LEGACY_PRIVILEGED");
}

uint32_t nvidia_fnv1a32(std::string_view s) {
  return fnv_continue(kFnvBasis, s);
}

const NvGenTables* nvidia_generated_for_version(std::string_view version) {
  const size_t i = index_of(version);
  return i == SIZE_MAX ? nullptr : registry().all[i];
}

std::vector<const NvGenEscape*> nvidia_generated_escape_rows() {
  std::vector<const NvGenEscape*> out;
  for (const NvGenRelease& r : kGeneratedReleases)
    for (const NvGenEscape& e : r.escapes.add) out.push_back(&e);
  return out;
}

const NvGenTables& nvidia_generated_newest() {
  // Releases are listed oldest first by the generator.
  return *registry().all.back();
}

std::span<const NvGenTables* const> nvidia_generated_releases() {
  return registry().all;
}

const NvGenClass* nvidia_generated_class_of_control(const NvGenTables& t, uint32_t cmd) {
  return t.find_class(cmd >> 16);
}

}  // namespace gdrproxy::proxy
