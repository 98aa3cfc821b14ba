// Turns the release tree of nvidia_versions.cc into NvidiaDriverAbi objects (each release = its
// parent's tables with its patch applied), answers the number and name lookups, and reads the
// loaded driver's version. The objects are built once, on first use, and never change: lookups
// from the notification loop need no lock.
#include <algorithm>
#include <cctype>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/nvidia_generated.h"
#include "proxy/abi/nvidia_tables.h"

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

// One materialized release: owns the merged tables that its NvidiaDriverAbi spans point into.
struct OwnedAbi {
  std::string version;
  std::vector<NvEscape> escapes;
  std::vector<NvClass> classes;
  std::vector<NvControl> controls;
  std::vector<NvUvmIoctl> uvm_ioctls;
  NvidiaDriverAbi abi;
};

struct Registry {
  std::vector<std::unique_ptr<OwnedAbi>> owned;
  std::vector<const NvidiaDriverAbi*> abis;
};

const Registry& registry() {
  static const Registry reg = [] {
    Registry r;
    for (const nvtables::Release& rel : nvtables::releases()) {
      auto o = std::make_unique<OwnedAbi>();
      o->version = std::string(rel.version);
      if (rel.root_tables != nullptr) {
        const nvtables::TableSet& t = *rel.root_tables;
        o->escapes.assign(t.escapes.begin(), t.escapes.end());
        o->classes.assign(t.classes.begin(), t.classes.end());
        o->controls.assign(t.controls.begin(), t.controls.end());
        o->uvm_ioctls.assign(t.uvm_ioctls.begin(), t.uvm_ioctls.end());
      } else {
        const OwnedAbi* parent = nullptr;
        for (const auto& p : r.owned) {
          if (p->version == rel.parent) parent = p.get();
        }
        // A release whose parent is not listed before it is a mistake in nvidia_versions.cc;
        // skipping it makes the version unknown (trace only), which is the safe reading.
        if (parent == nullptr) continue;
        const nvtables::Patch& p = rel.patch;
        o->escapes =
            nvtables::apply_patch(parent->escapes, p.add.escapes, p.remove_escapes, kEscapeKey);
        o->classes =
            nvtables::apply_patch(parent->classes, p.add.classes, p.remove_classes, kClassKey);
        o->controls =
            nvtables::apply_patch(parent->controls, p.add.controls, p.remove_controls, kControlKey);
        o->uvm_ioctls = nvtables::apply_patch(parent->uvm_ioctls, p.add.uvm_ioctls,
                                              p.remove_uvm_ioctls, kUvmKey);
      }
      o->abi.version = o->version;
      o->abi.escapes = o->escapes;
      o->abi.classes = o->classes;
      o->abi.controls = o->controls;
      o->abi.uvm_ioctls = o->uvm_ioctls;
      const NvGenTables* gen = nvidia_generated_for_version(o->version);
      o->abi.generated = gen ? gen : &nvidia_generated_newest();
      o->abi.generated_exact = gen != nullptr;
      r.abis.push_back(&o->abi);
      r.owned.push_back(std::move(o));
    }
    return r;
  }();
  return reg;
}

// "580.159.04" -> {580, 159, 4}; non-numeric parts compare as 0.
std::vector<unsigned long> version_key(std::string_view v) {
  std::vector<unsigned long> key;
  std::string part;
  std::istringstream in{std::string(v)};
  while (std::getline(in, part, '.')) {
    key.push_back(std::strtoul(part.c_str(), nullptr, 10));
  }
  return key;
}

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
  return registry().abis;
}

const NvidiaDriverAbi* nvidia_abi_for_version(std::string_view version) {
  for (const NvidiaDriverAbi* abi : registry().abis) {
    if (abi->version == version) return abi;
  }
  return nullptr;
}

const NvidiaDriverAbi& nvidia_newest_abi() {
  // Chosen once: the policy asks on every NVIDIA ioctl, and comparing the versions parses them.
  static const NvidiaDriverAbi& newest = *[] {
    const auto& abis = registry().abis;
    const NvidiaDriverAbi* n = abis.front();
    for (const NvidiaDriverAbi* abi : abis) {
      if (version_key(abi->version) > version_key(n->version)) n = abi;
    }
    return n;
  }();
  return newest;
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
