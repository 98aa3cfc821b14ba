// Loading the ioctl judge (ioctl_lsm.bpf.c) and filling its tables (see ioctl_lsm.h). A scope's
// tables are filled before any task is judged in it (its first task marked, its cgroup entered),
// so no call of a sandbox is ever judged from half-filled tables; a scope's entries are removed
// only after its cgroups are no longer judged.
#include "proxy/sandbox/ioctl_lsm.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <dirent.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

#include "base/error.h"
#include "base/kernel_dev.h"
#include "base/process_info.h"
#include "base/unique_fd.h"
#include "proxy/observe/bpf_links.h"
#include "proxy/sandbox/ioctl_lsm_bpf.h"
#include "proxy/sandbox/ioctl_lsm_event.h"

namespace gdrproxy::proxy {
namespace {

constexpr unsigned kMiscMajor = 10;

// The kernel's internal dev_t, as struct inode holds it.
uint32_t kernel_dev(dev_t d) {
  return (major(d) << 20) | minor(d);
}

// The program's keys (ioctl_lsm.bpf.c).
struct ScopeNode {
  uint32_t scope, rdev;
};
struct ScopeRequest {
  uint32_t scope, request;
};
struct ScopeNodeRequest {
  uint32_t scope, rdev, request;
};

struct JudgedCgroup {
  uint32_t scope, level;
};

constexpr uint8_t kOne = 1;

// Every map of the program, by name: what a pinned judge pins and a later process takes over.
constexpr const char* kMaps[] = {"sandboxed",     "counters",        "judged_cgroups",
                                 "cgroup_levels", "guarded_nodes",   "guarded_majors",
                                 "granted",       "untrapped",       "allowed",
                                 "refusals",      "supervisor_pidns"};

// A pinned judge's directory: one per program, named by a hash of its bytes (FNV-1a), so that a
// process never takes maps laid out for another program.
std::string version_of(const void* bytes, size_t size) {
  uint64_t h = 1469598103934665603ULL;
  for (size_t i = 0; i < size; ++i)
    h = (h ^ static_cast<const uint8_t*>(bytes)[i]) * 1099511628211ULL;
  char hex[20];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

void put(int map_fd, const void* key, const void* value, const char* map) {
  if (bpf_map_update_elem(map_fd, key, value, BPF_ANY) != 0)
    throw_errno(std::string("BPF LSM table ") + map, errno);
}

// Whether `dir` holds a pinned link for every program of the judge (one removed by hand has
// detached its program: such pins are not taken over, but replaced).
bool all_links_pinned(const std::string& dir) {
  bpf_object* obj = bpf_object__open_mem(kIoctlLsmBpf, kIoctlLsmBpfSize, nullptr);
  if (!obj) return false;
  size_t programs = 0;
  bpf_program* p = nullptr;
  bpf_object__for_each_program(p, obj) {
    ++programs;
  }
  bpf_object__close(obj);
  for (size_t i = 0; i < programs; ++i) {
    const UniqueFd link(bpf_obj_get((dir + "/link_" + std::to_string(i)).c_str()));
    if (!link) return false;
  }
  return programs > 0;
}

// Calls `each` with every key of the judged-cgroups map `fd` (a cgroup's 8-byte id).
template <typename Each>
void each_judged_cgroup_id(int fd, Each each) {
  uint64_t key = 0, next = 0;
  const uint64_t* at = nullptr;
  while (bpf_map_get_next_key(fd, at, &next) == 0) {
    each(next);
    key = next;
    at = &key;
  }
}

}  // namespace

IoctlLsmTables ioctl_lsm_tables(const DeviceCatalog& catalog, const Grants& grants,
                                const KernelAllowed& untrapped) {
  IoctlLsmTables t;
  std::set<dev_t> catalogued;
  for (const DeviceNode& n : catalog.nodes()) {
    t.nodes.emplace_back(n.rdev, grants.granted(n));
    catalogued.insert(n.rdev);
  }
  for (const DeviceNode& d : catalog.drivers()) {
    if (major(d.rdev) == kMiscMajor) {
      // One misc minor per driver: never granted unless a catalogued node carries it.
      if (!catalogued.count(d.rdev)) t.nodes.emplace_back(d.rdev, false);
    } else {
      t.guarded_majors.push_back(major(d.rdev));
    }
  }
  t.untrapped = untrapped.requests;
  auto allow_on_class = [&](const std::vector<uint32_t>& requests, DeviceClass cls) {
    for (const DeviceNode& n : catalog.nodes()) {
      if (n.device_class != cls || !grants.granted(n)) continue;
      for (uint32_t r : requests) t.allowed.emplace_back(n.rdev, r);
    }
  };
  allow_on_class(untrapped.uvm_requests, DeviceClass::kNvidiaUvm);
  allow_on_class(untrapped.frontend_requests, DeviceClass::kNvidiaFrontend);
  return t;
}

bool bpf_lsm_active(std::string& why) {
  // The active LSMs are listed in securityfs; where the host has not mounted it, it is mounted
  // for the read only and detached right after.
  constexpr const char* kDir = "/sys/kernel/security";
  const std::string list = std::string(kDir) + "/lsm";
  bool mounted = false;
  if (::access(list.c_str(), R_OK) != 0)
    mounted =
        ::mount("securityfs", kDir, "securityfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0;
  std::string lsms;
  const bool read = static_cast<bool>(std::getline(std::ifstream(list), lsms));
  if (mounted) ::umount2(kDir, MNT_DETACH);
  if (!read) {
    why = list +
          " is unreadable (securityfs cannot be mounted here), so whether the BPF LSM "
          "is active cannot be known";
    return false;
  }
  std::string item;
  for (size_t i = 0; i <= lsms.size(); ++i) {
    if (i == lsms.size() || lsms[i] == ',') {
      if (item == "bpf") return true;
      item.clear();
    } else {
      item += lsms[i];
    }
  }
  why = "the BPF LSM is not active on this kernel (active: " + lsms + "; boot with lsm=" + lsms +
        ",bpf)";
  return false;
}

bool IoctlLsm::find_maps(std::string& why) {
  const auto fd = [this](const char* name) {
    if (obj_) return bpf_object__find_map_fd_by_name(obj_, name);
    for (size_t i = 0; i < std::size(kMaps); ++i)
      if (std::strcmp(kMaps[i], name) == 0) return pinned_maps_[i].get();
    return -1;
  };
  sandboxed_fd_ = fd("sandboxed");
  counters_fd_ = fd("counters");
  cgroups_fd_ = fd("judged_cgroups");
  levels_fd_ = fd("cgroup_levels");
  guarded_nodes_fd_ = fd("guarded_nodes");
  guarded_majors_fd_ = fd("guarded_majors");
  granted_fd_ = fd("granted");
  untrapped_fd_ = fd("untrapped");
  allowed_fd_ = fd("allowed");
  ring_ = ring_buffer__new(
      fd("refusals"),
      [](void* ctx, void* data, size_t size) {
        if (size < sizeof(gdrproxy_lsm_refusal)) return 0;
        const auto* e = static_cast<const gdrproxy_lsm_refusal*>(data);
        Refusal r;
        r.tid = static_cast<pid_t>(e->tid);
        r.tgid = static_cast<pid_t>(e->tgid);
        r.ns_tid = static_cast<pid_t>(e->ns_tid);
        r.rdev = dev_from_kernel(e->rdev);
        r.request = e->request;
        r.why = e->why == GDRPROXY_LSM_UNKNOWN_MINOR ? Refusal::Why::kUnknownMinor
                : e->why == GDRPROXY_LSM_NOT_HERE    ? Refusal::Why::kNotAllowedHere
                                                     : Refusal::Why::kUngranted;
        r.scope = e->scope;
        r.comm.assign(e->comm, strnlen(e->comm, sizeof e->comm));
        static_cast<IoctlLsm*>(ctx)->taken_.push_back(std::move(r));
        return 0;
      },
      this, nullptr);
  if (!ring_) {
    why = std::string("BPF LSM program: the refusals' ring: ") + std::strerror(errno);
    return false;
  }
  return true;
}

bool IoctlLsm::load_object(std::string& why) {
  obj_ = load_embedded_bpf(kIoctlLsmBpf, kIoctlLsmBpfSize, "BPF LSM program:", why,
                           " (needs CAP_BPF, CAP_PERFMON and CAP_MAC_ADMIN; some kernels "
                           "refuse LSM programs to every process)");
  return obj_ && find_maps(why);
}

std::unique_ptr<IoctlLsm> IoctlLsm::load(std::string& why) {
  if (!bpf_lsm_active(why)) return nullptr;
  std::unique_ptr<IoctlLsm> l(new IoctlLsm());
  if (!l->load_object(why)) return nullptr;
  // Judging no one until a scope has tables and tasks: safe to attach at once.
  if (!attach_every_program(l->obj_, true, l->links_, "BPF LSM program:", why)) return nullptr;
  return l;
}

std::unique_ptr<IoctlLsm> IoctlLsm::load_pinned(const std::string& pin_dir, std::string& why) {
  if (!bpf_lsm_active(why)) return nullptr;
  const std::string dir = pin_dir + "/" + version_of(kIoctlLsmBpf, kIoctlLsmBpfSize);
  const std::string complete = dir + "/complete";
  std::unique_ptr<IoctlLsm> l(new IoctlLsm());
  l->pinned_at_ = dir;
  struct stat st {};
  if (::lstat(complete.c_str(), &st) == 0 && all_links_pinned(dir)) {
    // An earlier process's judge, still attached: its maps are taken over.
    for (const char* name : kMaps) {
      UniqueFd fd(bpf_obj_get((dir + "/" + name).c_str()));
      if (!fd) {
        why = "BPF LSM program pinned at " + dir + ": map " + name + ": " + std::strerror(errno);
        return nullptr;
      }
      l->pinned_maps_.push_back(std::move(fd));
    }
    if (!l->find_maps(why)) return nullptr;
    l->inherited_from_pins_ = true;
    each_judged_cgroup_id(l->cgroups_fd_, [&l](uint64_t id) {
      JudgedCgroup j{};
      if (bpf_map_lookup_elem(l->cgroups_fd_, &id, &j) == 0 && j.level <= kMaxCgroupLevel) {
        l->inherited_[j.scope].push_back(CgroupV2{id, j.level});
        ++l->cgroups_at_level_[j.level];
      }
    });
    return l;
  }
  // None there (or one cut short while being pinned): loaded, then pinned, "complete" last.
  l->unpin();  // what a cut-short pinning left
  if (::mkdir(pin_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    why = "BPF LSM pins: " + pin_dir + ": " + std::strerror(errno);
    return nullptr;
  }
  if (::mkdir(dir.c_str(), 0700) != 0) {
    why = "BPF LSM pins: " + dir + ": " + std::strerror(errno);
    return nullptr;
  }
  if (!l->load_object(why)) return nullptr;
  for (const char* name : kMaps)
    if (const int rc =
            bpf_map__pin(bpf_object__find_map_by_name(l->obj_, name), (dir + "/" + name).c_str());
        rc != 0) {
      why = "BPF LSM pins: map " + std::string(name) + " in " + dir + ": " + std::strerror(-rc) +
            " (is it on a bpffs? mount -t bpf bpf /sys/fs/bpf)";
      l->unpin();
      return nullptr;
    }
  if (!attach_every_program(l->obj_, true, l->links_, "BPF LSM program:", why)) {
    l->unpin();
    return nullptr;
  }
  for (size_t i = 0; i < l->links_.size(); ++i) {
    // (No dots: bpffs reserves names with one.)
    const std::string path = dir + "/link_" + std::to_string(i);
    if (const int rc = bpf_link__pin(l->links_[i], path.c_str()); rc != 0) {
      why = "BPF LSM pins: link " + path + ": " + std::strerror(-rc);
      l->unpin();
      return nullptr;
    }
  }
  // bpffs holds no regular files: the mark is a symbolic link.
  if (::symlink("gdrproxy-bpf-lsm-judge", complete.c_str()) != 0) {
    why = "BPF LSM pins: " + complete + ": " + std::strerror(errno);
    l->unpin();
    return nullptr;
  }
  return l;
}

IoctlLsm::~IoctlLsm() {
  destroy_links_side_by_side(links_);
  if (ring_) ring_buffer__free(ring_);
  if (obj_) bpf_object__close(obj_);
}

void IoctlLsm::add_scope(uint32_t scope, const IoctlLsmTables& tables) {
  if (scope == 0 || scopes_.count(scope))
    throw Error("BPF LSM: scope " + std::to_string(scope) + " is in use");
  Scope& s = scopes_[scope];
  try {
    // Guarded nodes and majors are the host's, whoever is judged: only ever added.
    for (const auto& [rdev, granted] : tables.nodes) {
      const uint32_t k = kernel_dev(rdev);
      put(guarded_nodes_fd_, &k, &kOne, "guarded_nodes");
      if (!granted) continue;
      s.granted.push_back(k);
      const ScopeNode key{scope, k};
      put(granted_fd_, &key, &kOne, "granted");
    }
    for (unsigned m : tables.guarded_majors) put(guarded_majors_fd_, &m, &kOne, "guarded_majors");
    for (uint32_t r : tables.untrapped) {
      s.untrapped.push_back(r);
      const ScopeRequest key{scope, r};
      put(untrapped_fd_, &key, &kOne, "untrapped");
    }
    for (const auto& [rdev, request] : tables.allowed) {
      s.allowed.emplace_back(kernel_dev(rdev), request);
      const ScopeNodeRequest key{scope, kernel_dev(rdev), request};
      put(allowed_fd_, &key, &kOne, "allowed");
    }
  } catch (...) {
    erase_tables(scope, s);
    scopes_.erase(scope);
    throw;
  }
}

void IoctlLsm::judge_task(pid_t pid, uint32_t scope) {
  if (!scopes_.count(scope))
    throw Error("BPF LSM: scope " + std::to_string(scope) + " has no tables");
  const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) throw_errno("BPF LSM: pidfd_open of the sandbox's first task", errno);
  const int fd = pidfd.get();
  if (bpf_map_update_elem(sandboxed_fd_, &fd, &scope, BPF_NOEXIST) != 0)
    throw_errno("BPF LSM: marking the sandbox's first task", errno);
}

void IoctlLsm::judge_cgroup(const CgroupV2& cgroup, uint32_t scope, uint32_t replacing) {
  auto it = scopes_.find(scope);
  if (it == scopes_.end())
    throw Error("BPF LSM: scope " + std::to_string(scope) + " has no tables");
  if (cgroup.level == 0 || cgroup.level > kMaxCgroupLevel)
    throw Error("BPF LSM: a cgroup at level " + std::to_string(cgroup.level) +
                " cannot be judged (levels 1 to " + std::to_string(kMaxCgroupLevel) + ")");
  // One scope per cgroup: a cgroup another sandbox of this process is judged in is not taken
  // over, unless the caller names that scope (`replacing`); one an earlier process judged is
  // (the same container, adopted again). Either in one update: never unjudged in between.
  JudgedCgroup was{};
  const bool earlier = bpf_map_lookup_elem(cgroups_fd_, &cgroup.id, &was) == 0;
  const bool replaced = earlier && replacing != 0 && was.scope == replacing &&
                        scopes_.count(replacing) && replacing != scope;
  if (earlier && !replaced && !inherited_.count(was.scope))
    throw Error("BPF LSM: cgroup " + std::to_string(cgroup.id) +
                " is judged for another sandbox already");
  const JudgedCgroup now{scope, cgroup.level};
  if (bpf_map_update_elem(cgroups_fd_, &cgroup.id, &now, earlier ? BPF_EXIST : BPF_NOEXIST) != 0)
    throw_errno("BPF LSM: judging cgroup " + std::to_string(cgroup.id), errno);
  it->second.cgroups.push_back(cgroup);
  ++cgroups_at_level_[cgroup.level];
  if (earlier) {
    // Off the list of the scope that judged it before: this process's (its tables stay, for
    // forget_scope) or an earlier process's (whose tables go with its last cgroup).
    std::vector<CgroupV2>& left = replaced ? scopes_[replacing].cgroups : inherited_[was.scope];
    std::erase_if(left, [&](const CgroupV2& c) {
      if (c.id != cgroup.id) return false;
      --cgroups_at_level_[c.level];
      return true;
    });
    if (!replaced && left.empty()) erase_inherited_scope(was.scope);
  }
  if (!publish_levels()) throw_errno("BPF LSM: the judged cgroups' levels", errno);
}

void IoctlLsm::forget_scope(uint32_t scope) noexcept {
  auto it = scopes_.find(scope);
  if (it == scopes_.end()) return;
  // Its cgroups first: no task is judged in it from the next call on, so no call meets tables
  // half gone.
  for (const CgroupV2& c : it->second.cgroups) {
    bpf_map_delete_elem(cgroups_fd_, &c.id);
    --cgroups_at_level_[c.level];
  }
  static_cast<void>(publish_levels());  // stale bits only cost lookups that find nothing
  erase_tables(scope, it->second);
  scopes_.erase(it);
}

size_t IoctlLsm::inherited_cgroups() const {
  size_t n = 0;
  for (const auto& [scope, cgroups] : inherited_) n += cgroups.size();
  return n;
}

uint32_t IoctlLsm::highest_inherited_scope() const {
  return inherited_.empty() ? 0 : inherited_.rbegin()->first;
}

size_t IoctlLsm::sweep_inherited() {
  size_t gone = 0;
  const UniqueFd root = cgroup2_root();  // once for the whole sweep
  for (auto it = inherited_.begin(); it != inherited_.end();) {
    std::erase_if(it->second, [&](const CgroupV2& c) {
      if (cgroup_v2_exists(root.get(), c.id)) return false;
      bpf_map_delete_elem(cgroups_fd_, &c.id);
      --cgroups_at_level_[c.level];
      ++gone;
      return true;
    });
    const uint32_t scope = it->first;
    ++it;
    if (inherited_[scope].empty()) erase_inherited_scope(scope);
  }
  if (gone) static_cast<void>(publish_levels());
  return gone;
}

void IoctlLsm::erase_inherited_scope(uint32_t scope) {
  inherited_.erase(scope);
  // Its keys are known only by their first word, the scope: each map is walked.
  const auto erase_keys = [scope](int fd, size_t key_size) {
    std::vector<uint8_t> key(key_size), next(key_size);
    std::vector<std::vector<uint8_t>> doomed;
    const void* at = nullptr;
    while (bpf_map_get_next_key(fd, at, next.data()) == 0) {
      uint32_t first = 0;
      std::memcpy(&first, next.data(), sizeof first);
      if (first == scope) doomed.push_back(next);
      key = next;
      at = key.data();
    }
    for (const auto& k : doomed) bpf_map_delete_elem(fd, k.data());
  };
  erase_keys(granted_fd_, sizeof(ScopeNode));
  erase_keys(untrapped_fd_, sizeof(ScopeRequest));
  erase_keys(allowed_fd_, sizeof(ScopeNodeRequest));
}

namespace {

// Removes every pin in `dir`, then `dir`: a program whose link pins go (and that no process holds)
// detaches.
void remove_pins(const std::string& dir) {
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (std::strcmp(e->d_name, ".") != 0 && std::strcmp(e->d_name, "..") != 0)
        ::unlink((dir + "/" + e->d_name).c_str());
    ::closedir(d);
  }
  ::rmdir(dir.c_str());
}

// How many cgroups that still exist the judged-cgroups map pinned at `path` names; nullopt when
// there is no such map (pins cut short) or it is not one (a hash keyed by a cgroup's 8-byte id:
// its values may be laid out otherwise, its keys are read alone).
std::optional<size_t> live_judged_cgroups(const std::string& path, int cgroup_root) {
  const UniqueFd fd(bpf_obj_get(path.c_str()));
  if (!fd) return std::nullopt;
  bpf_map_info info{};
  uint32_t len = sizeof info;
  if (bpf_obj_get_info_by_fd(fd.get(), &info, &len) != 0 || info.type != BPF_MAP_TYPE_HASH ||
      info.key_size != sizeof(uint64_t))
    return std::nullopt;
  size_t live = 0;
  each_judged_cgroup_id(fd.get(), [&](uint64_t id) {
    if (cgroup_v2_exists(cgroup_root, id)) ++live;
  });
  return live;
}

}  // namespace

void IoctlLsm::unpin() {
  if (pinned_at_.empty()) return;
  remove_pins(pinned_at_);
  // The directory it was pinned under, when nothing else is pinned there.
  ::rmdir(pinned_at_.substr(0, pinned_at_.rfind('/')).c_str());
}

std::vector<IoctlLsm::OtherJudge> IoctlLsm::retire_other_judges() {
  std::vector<OtherJudge> found;
  if (pinned_at_.empty()) return found;
  const std::string parent = pinned_at_.substr(0, pinned_at_.rfind('/'));
  const std::string own = pinned_at_.substr(pinned_at_.rfind('/') + 1);
  std::vector<std::string> others;
  if (DIR* d = ::opendir(parent.c_str())) {
    while (const dirent* e = ::readdir(d))
      if (e->d_type == DT_DIR && e->d_name[0] != '.' && own != e->d_name)
        others.push_back(parent + "/" + e->d_name);
    ::closedir(d);
  }
  if (others.empty()) return found;
  const UniqueFd root = cgroup2_root();
  for (const std::string& dir : others) {
    const std::optional<size_t> live = live_judged_cgroups(dir + "/judged_cgroups", root.get());
    if (live && *live > 0) {
      found.push_back({dir, *live});
      continue;
    }
    remove_pins(dir);
    found.push_back({dir, 0});
  }
  return found;
}

void IoctlLsm::erase_tables(uint32_t scope, const Scope& s) {
  for (uint32_t rdev : s.granted) {
    const ScopeNode k{scope, rdev};
    bpf_map_delete_elem(granted_fd_, &k);
  }
  for (uint32_t r : s.untrapped) {
    const ScopeRequest k{scope, r};
    bpf_map_delete_elem(untrapped_fd_, &k);
  }
  for (const auto& [rdev, request] : s.allowed) {
    const ScopeNodeRequest k{scope, rdev, request};
    bpf_map_delete_elem(allowed_fd_, &k);
  }
}

bool IoctlLsm::publish_levels() {
  uint64_t mask = 0;
  for (unsigned level = 0; level <= kMaxCgroupLevel; ++level)
    if (cgroups_at_level_[level] > 0) mask |= uint64_t{1} << level;
  const uint32_t zero = 0;
  return bpf_map_update_elem(levels_fd_, &zero, &mask, BPF_ANY) == 0;
}

IoctlLsm::Counts IoctlLsm::counts() const {
  Counts c;
  const int cpus = libbpf_num_possible_cpus();
  if (cpus <= 0) return c;
  std::vector<uint64_t> per_cpu(static_cast<size_t>(cpus));
  uint64_t* into[] = {&c.allowed, &c.refused, &c.unreported};  // the program's counter order
  for (uint32_t which = 0; which < 3; ++which) {
    if (bpf_map_lookup_elem(counters_fd_, &which, per_cpu.data()) != 0) continue;
    uint64_t sum = 0;
    for (uint64_t v : per_cpu) sum += v;
    *into[which] = sum;
  }
  return c;
}

int IoctlLsm::refusals_fd() const {
  return ring_buffer__epoll_fd(ring_);
}

void IoctlLsm::take_refusals(const std::function<void(const Refusal&)>& each) {
  taken_.clear();
  ring_buffer__consume(ring_);
  for (const Refusal& r : taken_) each(r);
  taken_.clear();
}

}  // namespace gdrproxy::proxy
