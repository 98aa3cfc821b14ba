// Mount plan creation and application; see mount_plan.h.
#include "sysfs/mount_plan.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"
#include "base/file_io.h"
#include "base/unique_fd.h"
#include "sysfs/builder.h"

namespace gdrproxy::sysfs {
namespace {

// The host's file at `rel` below its sysfs, under `host_root` ("/" for this host).
std::string host_sys_path(const std::string& host_root, const std::string& rel) {
  return host_root == "/" ? "/sys/" + rel : join(host_root, "sys/" + rel);
}

// One bind per attribute of `dir` (tree-relative, the host's path below /sys) the host refuses
// to read. The tree and the host name the file alike: "devices/<canonical path>/<name>".
void bind_refused(MountPlan& p, const std::string& host_root, const std::string& dir,
                  const RefusedMap& refused, const std::string& what, bool optional) {
  for (const auto& [name, e] : refused) {
    BindMount b;
    b.target = dir + "/" + name;
    b.source = host_sys_path(host_root, b.target);
    b.file = true;
    b.optional = optional;
    b.why = what + " " + name + ": the host refuses to read it (" + errno_name(e) +
            "), its own file answers";
    if (is_dir(join(p.tree, b.target)) || !exists_nofollow(join(p.tree, b.target)))
      throw Error("mount-plan: " + b.target + " is not a file of the tree " + p.tree +
                  " (built from another snapshot?)");
    if (!exists_nofollow(b.source)) {
      if (!optional) throw Error("mount-plan: host file " + b.source + " is missing");
      p.notes.push_back(b.source + " is missing (moved to another network namespace?): " +
                        b.target + " stays an empty file");
      continue;
    }
    p.binds.push_back(std::move(b));
  }
}

}  // namespace

MountPlan make_mount_plan(const Snapshot& s, const Selection& sel, const std::string& tree,
                          const std::string& host_root) {
  MountPlan p;
  p.tree = real_path(tree).value_or("");
  if (p.tree.empty()) throw Error("mount-plan: tree " + tree + " does not exist");
  for (const IbDevice* d : sel.ib) {
    for (const auto& port : d->ports) {
      BindMount b;
      if (port.host_path.empty() || port.host_path[0] != '/')
        throw Error("mount-plan: " + d->name + " port " + std::to_string(port.num) +
                    ": snapshot has no host path for it");
      b.source = host_root == "/" ? port.host_path : join(host_root, port.host_path);
      b.target = port_dir_in_tree(s, *d, port);
      b.why = d->name + " port " + std::to_string(port.num) +
              ": live gids, gid_attrs, state, rate, counters";
      if (!is_dir(join(p.tree, b.target)))
        throw Error("mount-plan: " + b.target + " is not in the tree " + p.tree +
                    " (built from another selection?)");
      if (!is_dir(b.source))
        throw Error("mount-plan: host port directory " + b.source + " is missing");
      p.binds.push_back(std::move(b));
    }
  }
  // Attributes the host refuses to read: its own files, bound over the tree's placeholders.
  for (const std::string& bdf : sel.pci) {
    const PciFunction* f = s.find_pci(bdf);
    if (f) bind_refused(p, host_root, "devices/" + f->path, f->refused, bdf, false);
  }
  for (const IbDevice* d : sel.ib) {
    const std::string pd = "devices/" + s.find_pci(d->pci)->path;
    bind_refused(p, host_root, pd + "/infiniband/" + d->name, d->refused, d->name, false);
    if (d->verbs)
      bind_refused(p, host_root, pd + "/infiniband_verbs/" + d->verbs->name, d->verbs->refused,
                   d->verbs->name, false);
  }
  for (const NetDevice* n : sel.net)
    bind_refused(p, host_root, "devices/" + s.find_pci(n->pci)->path + "/" + n->subpath, n->refused,
                 n->name, true);
  for (const NumaNode& n : s.numa)
    bind_refused(p, host_root, "devices/system/node/node" + std::to_string(n.id), n.refused,
                 "node" + std::to_string(n.id), false);
  // CPU topology is not part of the snapshot: it is the host's, read live (hwloc aborts without
  // it, glibc's get_nprocs reads devices/system/cpu/online).
  const std::string cpu = host_sys_path(host_root, "devices/system/cpu");
  if (is_dir(cpu))
    p.binds.push_back({cpu, "devices/system/cpu", "host CPU topology (hwloc, get_nprocs)"});
  else
    p.notes.push_back(cpu + " is missing: the tree will show no CPU topology");
  p.notes.push_back("fs/cgroup is an empty mount point for the runtime's cgroup mount");
  p.notes.push_back(
      "sources are host sysfs paths as seen from the host's network namespace; with RDMA netns "
      "mode 'exclusive' a device moved into the container's namespace is only visible in a sysfs "
      "mounted from that namespace, so take the sources from such a mount");
  p.notes.push_back(
      "net/<if> attributes stay static, but for those the host refused to read, bound live: once "
      "an interface moves into the container's network namespace the host's sysfs no longer "
      "shows it");
  return p;
}

nlohmann::json to_json(const MountPlan& p) {
  nlohmann::json binds = nlohmann::json::array();
  for (const auto& b : p.binds) {
    nlohmann::json o{{"source", b.source},
                     {"target", b.target},
                     {"flags", {"bind", "ro", "nosuid", "nodev", "noexec"}},
                     {"why", b.why}};
    if (b.file) o["file"] = true;
    if (b.optional) o["optional"] = true;
    binds.push_back(std::move(o));
  }
  return {{"schema", "gdrproxy.sysfs.mount-plan"},
          {"version", 1},
          {"tree", p.tree},
          {"mount_tree_at", "/sys"},
          {"binds", binds},
          {"notes", p.notes}};
}

MountPlan mount_plan_from_json(const nlohmann::json& j) {
  if (!j.is_object() || j.value("schema", "") != "gdrproxy.sysfs.mount-plan")
    throw Error("mount plan: not a gdrproxy.sysfs.mount-plan document");
  if (j.value("version", 0) != 1) throw Error("mount plan: unsupported version");
  MountPlan p;
  p.tree = j.at("tree").get<std::string>();
  for (const auto& b : j.at("binds"))
    p.binds.push_back({b.at("source").get<std::string>(), b.at("target").get<std::string>(),
                       b.value("why", ""), b.value("file", false), b.value("optional", false)});
  return p;
}

namespace {

// Mounts made so far, unmounted in reverse order unless released.
class MountStack {
 public:
  ~MountStack() {
    for (auto it = done_.rbegin(); it != done_.rend(); ++it) ::umount2(it->c_str(), MNT_DETACH);
  }
  void push(std::string t) { done_.push_back(std::move(t)); }
  void release() { done_.clear(); }

 private:
  std::vector<std::string> done_;
};

// A mount target is resolved once, by fd, with no symlink followed anywhere in its path: the
// container's rootfs (and so its /sys) belongs to the tenant, who could otherwise point it at a
// host directory between a check and the mount. The mount then goes onto /proc/self/fd/N, the
// directory that was resolved (the way runc mounts into a rootfs).
std::string open_target(int root_fd, const std::string& dst, UniqueFd& out, bool file = false) {
  open_how how{};
  how.flags = O_PATH | (file ? 0 : O_DIRECTORY) | O_CLOEXEC;
  how.resolve = RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | (root_fd >= 0 ? RESOLVE_IN_ROOT : 0);
  const int fd = static_cast<int>(
      ::syscall(SYS_openat2, root_fd >= 0 ? root_fd : AT_FDCWD, dst.c_str(), &how, sizeof how));
  if (fd < 0)
    return "mount target " + dst + ": " + std::strerror(errno) +
           (errno == ELOOP ? " (a symlink in the path: refused, mount targets are never "
                             "followed; give the container's rootfs with --root)"
                           : "");
  out.reset(fd);
  return "";
}

std::string bind_ro(const std::string& src, const std::string& dst, bool recursive,
                    int root_fd = -1, bool file = false) {
  UniqueFd target;
  if (std::string e = open_target(root_fd, dst, target, file); !e.empty()) return e;
  const std::string at = "/proc/self/fd/" + std::to_string(target.get());
  unsigned long f = MS_BIND | (recursive ? MS_REC : 0);
  if (::mount(src.c_str(), at.c_str(), nullptr, f, nullptr) != 0)
    return "bind " + src + " -> " + dst + ": " + std::strerror(errno);
  // The new mount sits on the resolved directory; remount it through a fresh, equally strict
  // resolution of the same path (it now names the mount's root).
  UniqueFd mounted;
  if (std::string e = open_target(root_fd, dst, mounted, file); !e.empty()) {
    ::umount2(at.c_str(), MNT_DETACH);
    return e;
  }
  const std::string now = "/proc/self/fd/" + std::to_string(mounted.get());
  unsigned long ro = MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC;
  if (::mount(nullptr, now.c_str(), nullptr, ro, nullptr) != 0) {
    std::string e = "remount read-only " + dst + ": " + std::strerror(errno);
    ::umount2(now.c_str(), MNT_DETACH);
    return e;
  }
  return "";
}

}  // namespace

std::string apply_mount_plan(const MountPlan& p, const std::string& sys_target,
                             const std::string& root) {
  UniqueFd root_fd;
  if (!root.empty()) {
    root_fd = UniqueFd(::open(root.c_str(), O_PATH | O_DIRECTORY | O_CLOEXEC));
    if (!root_fd) return "container root " + root + ": " + std::strerror(errno);
  }
  MountStack stack;
  for (const auto& b : p.binds) {
    std::string dst = join(p.tree, b.target);
    if (b.optional && !exists_nofollow(b.source)) continue;  // the placeholder stays
    if (std::string e = bind_ro(b.source, dst, false, -1, b.file); !e.empty()) return e;
    stack.push(dst);
  }
  if (!sys_target.empty()) {
    // Recursive, so the port mounts just made travel with the tree.
    if (std::string e = bind_ro(p.tree, sys_target, true, root_fd.get()); !e.empty()) return e;
  }
  stack.release();
  return "";
}

}  // namespace gdrproxy::sysfs
