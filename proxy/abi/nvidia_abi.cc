// Turns each release's generated tables (nvidia_generated.h) into the NvidiaDriverAbi the decoder
// reads: escapes, classes, controls and UVM ioctls with their sizes and status offsets, and the
// declared layouts (nvidia_layouts.h) at that release's offsets. Answers the number and name
// lookups and reads the loaded driver's version. A release is built on its first lookup and
// never changes after: lookups from the notification loop need no lock.
#include <algorithm>
#include <cctype>
#include <deque>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/nvidia_generated.h"

namespace gdrproxy::proxy {
namespace {

// Binary search in a table sorted by `key`.
template <typename T, typename K, typename KeyFn>
const T* find_sorted(std::span<const T> table, K key, KeyFn key_of) {
  auto it = std::lower_bound(table.begin(), table.end(), key,
                             [&](const T& e, K k) { return key_of(e) < k; });
  return (it != table.end() && key_of(*it) == key) ? &*it : nullptr;
}

template <typename T>
const T* find_named(std::span<const T> table, std::string_view name) {
  for (const T& e : table) {
    if (name == e.name) return &e;
  }
  return nullptr;
}

const auto kEscapeKey = [](const NvEscape& e) { return e.nr; };
const auto kClassKey = [](const NvClass& e) { return e.id; };
const auto kControlKey = [](const NvControl& e) { return e.cmd; };
const auto kUvmKey = [](const NvUvmIoctl& e) { return e.cmd; };

// A field's offset in a release's struct: the member itself, else the first member nested in it
// (an NvProcessorUuid is its uuid[16]); -1 when the release's struct has no such member.
int32_t member_offset(const NvGenTables& t, std::string_view record, std::string_view path) {
  if (const NvGenField* f = t.find_field(record, path)) return static_cast<int32_t>(f->offset);
  int32_t best = -1;
  for (const NvGenField* f : t.fields()) {
    const std::string_view p = f->field;
    if (record == f->record && p.size() > path.size() && p.substr(0, path.size()) == path &&
        p[path.size()] == '.' && (best < 0 || static_cast<int32_t>(f->offset) < best))
      best = static_cast<int32_t>(f->offset);
  }
  return best;
}

// One materialized release: owns the tables its NvidiaDriverAbi spans point into.
struct OwnedAbi {
  std::vector<NvEscape> escapes;
  std::vector<NvClass> classes;
  std::vector<NvControl> controls;
  std::vector<NvUvmIoctl> uvm_ioctls;
  std::deque<std::vector<NvField>> fields;  // what the escapes' and UVM's `fields` point into
  NvidiaDriverAbi abi;
};

// The declared fields at the release's offsets, kept in `o`.
std::span<const NvField> resolve(OwnedAbi& o, const NvGenTables& t, std::string_view record,
                                 std::span<const NvFieldSpec> specs) {
  if (specs.empty()) return {};
  std::vector<NvField>& out = o.fields.emplace_back();
  for (const NvFieldSpec& s : specs) {
    const int32_t off = member_offset(t, record, s.path());
    // A member this release's struct lacks is not shown (nvidia_layouts_test names any).
    if (off >= 0) out.push_back({s.name, static_cast<uint16_t>(off), s.kind, s.dir});
  }
  return out;
}

NvDmabufLayout dmabuf_layout(const NvGenTables& t) {
  constexpr std::string_view kRec = "nv_ioctl_export_to_dma_buf_fd_t";
  NvDmabufLayout l;
  const auto at = [&](std::string_view m) {
    return static_cast<int16_t>(member_offset(t, kRec, m));
  };
  l.fd = at("fd");
  l.h_client = at("hClient");
  l.total_objects = at("totalObjects");
  l.num_objects = at("numObjects");
  l.index = at("index");
  l.total_size = at("totalSize");
  l.mapping_type = at("mappingType");
  l.allow_mmap = at("bAllowMmap");
  l.handles = at("handles");
  l.offsets = at("offsets");
  l.sizes = at("sizes");
  l.status = at("status");
  if (const NvGenRecord* r = t.find_record(kRec)) l.size = static_cast<uint16_t>(r->size);
  if (const NvGenField* h = t.find_field(kRec, "handles")) l.max_handles = h->size / 4;
  return l;
}

std::unique_ptr<OwnedAbi> materialize(const NvGenTables& t) {
  auto o = std::make_unique<OwnedAbi>();
  for (const NvGenEscape* g : t.escapes()) {
    // An escape whose handler checks no struct in this release shows no fields.
    const auto fields = g->record[0] != '\0' ? resolve(*o, t, g->record, nv_escape_fields(g->name))
                                             : std::span<const NvField>();
    o->escapes.push_back({g->nr, g->name, g->param_size, g->alt_param_size, g->elem_size,
                          g->status_offset, g->alt_status_offset, fields});
  }
  for (const NvGenClass* g : t.classes()) o->classes.push_back({g->id, g->name});
  // The controls the release answers by number: those its classes export, and the deprecated
  // commands it converts to them (RM_CONTROL of either is dispatched; nvidia_access.h).
  for (const NvGenControl* g : t.controls()) o->controls.push_back({g->cmd, g->name});
  for (const NvGenDeprecated* d : t.deprecated())
    if (!t.find_control(d->cmd)) o->controls.push_back({d->cmd, d->name});
  std::sort(o->controls.begin(), o->controls.end(),
            [](const NvControl& a, const NvControl& b) { return a.cmd < b.cmd; });
  for (const NvGenUvmIoctl* g : t.uvm_ioctls()) {
    // A size the headers could not give: named, never decoded.
    const uint16_t size = g->param_size > 0 ? static_cast<uint16_t>(g->param_size) : 0;
    o->uvm_ioctls.push_back(
        {g->cmd, g->name, size, static_cast<int16_t>(g->status_offset),
         resolve(*o, t, std::string(g->name) + "_PARAMS", nv_uvm_fields(g->name))});
  }
  o->abi.version = t.version;
  o->abi.escapes = o->escapes;
  o->abi.classes = o->classes;
  o->abi.controls = o->controls;
  o->abi.uvm_ioctls = o->uvm_ioctls;
  o->abi.generated = &t;
  o->abi.dmabuf = dmabuf_layout(t);
  return o;
}

// Every release, materialized on its first lookup (a session needs one; only tests and the
// fuzzer walk them all).
struct Registry {
  explicit Registry(size_t n) : owned(n), once(n) {}
  std::vector<std::unique_ptr<OwnedAbi>> owned;  // by index of nvidia_generated_releases()
  std::vector<std::once_flag> once;
  std::vector<const NvidiaDriverAbi*> all;
  std::once_flag all_once;
};

Registry& registry() {
  static Registry reg(nvidia_generated_releases().size());
  return reg;
}

const NvidiaDriverAbi* abi_at(size_t i) {
  Registry& r = registry();
  std::call_once(r.once[i], [&] { r.owned[i] = materialize(*nvidia_generated_releases()[i]); });
  return &r.owned[i]->abi;
}

}  // namespace

std::vector<unsigned long> nvidia_version_key(std::string_view v) {
  std::vector<unsigned long> key;
  std::string part;
  std::istringstream in{std::string(v)};
  while (std::getline(in, part, '.')) {
    key.push_back(std::strtoul(part.c_str(), nullptr, 10));
  }
  return key;
}

namespace {

bool looks_like_version(std::string_view tok) {
  if (tok.empty() || !std::isdigit(static_cast<unsigned char>(tok.front()))) return false;
  bool dot = false;
  for (char c : tok) {
    if (c == '.') {
      dot = true;
    } else if (!std::isdigit(static_cast<unsigned char>(c))) {
      return false;
    }
  }
  return dot && tok.back() != '.';
}

}  // namespace

const NvEscape* NvidiaDriverAbi::find_escape(uint8_t nr) const {
  return find_sorted(escapes, nr, kEscapeKey);
}
const NvClass* NvidiaDriverAbi::find_class(uint32_t id) const {
  return find_sorted(classes, id, kClassKey);
}
const NvControl* NvidiaDriverAbi::find_control(uint32_t cmd) const {
  return find_sorted(controls, cmd, kControlKey);
}
const NvUvmIoctl* NvidiaDriverAbi::find_uvm(uint32_t cmd) const {
  return find_sorted(uvm_ioctls, cmd, kUvmKey);
}
const NvEscape* NvidiaDriverAbi::find_escape(std::string_view name) const {
  return find_named(escapes, name);
}
const NvClass* NvidiaDriverAbi::find_class(std::string_view name) const {
  return find_named(classes, name);
}
const NvControl* NvidiaDriverAbi::find_control(std::string_view name) const {
  return find_named(controls, name);
}
const NvUvmIoctl* NvidiaDriverAbi::find_uvm(std::string_view name) const {
  return find_named(uvm_ioctls, name);
}

std::span<const NvidiaDriverAbi* const> nvidia_known_abis() {
  Registry& r = registry();
  std::call_once(r.all_once, [&] {
    for (size_t i = 0; i < r.owned.size(); ++i) r.all.push_back(abi_at(i));
  });
  return r.all;
}

std::vector<NvEscape> nvidia_escapes_of_every_release() {
  std::vector<NvEscape> out;
  for (const NvGenEscape* g : nvidia_generated_escape_rows()) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const NvEscape& e) {
      return e.nr == g->nr && e.param_size == g->param_size &&
             e.alt_param_size == g->alt_param_size && e.elem_size == g->elem_size;
    });
    if (!seen)
      out.push_back({g->nr, g->name, g->param_size, g->alt_param_size, g->elem_size,
                     g->status_offset, g->alt_status_offset});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const NvEscape& a, const NvEscape& b) { return a.nr < b.nr; });
  return out;
}

const NvidiaDriverAbi* nvidia_abi_for_version(std::string_view version) {
  const auto releases = nvidia_generated_releases();
  for (size_t i = 0; i < releases.size(); ++i)
    if (releases[i]->version == version) return abi_at(i);
  return nullptr;
}

std::optional<std::string> parse_nvidia_version_text(std::string_view text) {
  // The first line that starts "NVRM version:" names the kernel module; its version is the
  // first token made of digits and dots. The module kind ("Open Kernel Module", "Kernel
  // Module") and architecture come before it, the build tag after.
  constexpr std::string_view kPrefix = "NVRM version:";
  size_t pos = 0;
  while (pos < text.size()) {
    size_t eol = text.find('\n', pos);
    if (eol == std::string_view::npos) eol = text.size();
    std::string_view line = text.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.substr(0, kPrefix.size()) != kPrefix) continue;
    line.remove_prefix(kPrefix.size());
    size_t i = 0;
    while (i < line.size()) {
      while (i < line.size() && std::isspace(static_cast<unsigned char>(line[i]))) ++i;
      size_t j = i;
      while (j < line.size() && !std::isspace(static_cast<unsigned char>(line[j]))) ++j;
      std::string_view tok = line.substr(i, j - i);
      if (looks_like_version(tok)) return std::string(tok);
      i = j;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

std::optional<std::string> detect_nvidia_driver_version(const std::string& proc_root) {
  std::ifstream in(proc_root + "/driver/nvidia/version");
  if (!in) return std::nullopt;
  std::string text;
  // The file is two short lines; bound the read so a strange procfs cannot make us slurp.
  text.resize(4096);
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  return parse_nvidia_version_text(text);
}

}  // namespace gdrproxy::proxy
