// Tree writer; see builder.h.
#include "sysfs/builder.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <set>
#include <thread>

#include "base/error.h"
#include "base/file_io.h"
#include "base/unique_fd.h"
#include "sysfs/bdf.h"
#include "sysfs/kernel_link.h"

namespace gdrproxy::sysfs {
namespace {

// Writes a tree below one directory fd. Paths are tree-relative ("devices/pci0000:00/...").
// Directories are created at once, in order; files and links are queued and then created by a
// few threads in parallel (the build is thousands of tiny creations, each a syscall or three).
// Each thread creates entries relative to an fd of their own directory, kept open while
// consecutive entries go to the same directory, so the kernel resolves one path component per
// entry instead of the whole depth of the PCI tree.
class TreeWriter {
 public:
  TreeWriter(int root_fd, BuildResult& res) : root_(root_fd), res_(res) {}

  void dir(const std::string& rel) {
    if (made_.count(rel)) return;
    std::string parent = dirname_of(rel);
    if (!parent.empty() && parent != "/") dir(parent);
    if (::mkdirat(root_, rel.c_str(), 0755) != 0 && errno != EEXIST)
      throw_errno("build: cannot mkdir " + rel, errno);
    made_.insert(rel);
    ++res_.dirs;
  }

  void file(const std::string& rel, std::string_view data) {
    ops_.push_back({Op::kFile, rel, std::string(data)});
    ++res_.files;
  }

  // A file whose contents repeat in the tree (the zero GID of an empty slot, the 0x0000 P_Key, a
  // vendor id): the first one is written, the others are hard links to it, one syscall instead of
  // three and no extra page. The tree is read-only, so sharing an inode is invisible to readers.
  void shared_file(const std::string& rel, const std::string& data) {
    auto it = prototypes_.find(data);
    if (it == prototypes_.end()) {
      std::string err = create_one({Op::kFile, rel, data}, root_, rel);
      if (!err.empty()) throw Error(err);
      prototypes_.emplace(data, rel);
    } else {
      ops_.push_back({Op::kHardLink, rel, it->second});
    }
    ++res_.files;
  }

  // A link at `rel` pointing (kernel-style, relative) at tree path `target`.
  void link(const std::string& rel, const std::string& target) {
    ops_.push_back({Op::kSymlink, rel, kernel_relative_link(dirname_of(rel), target)});
    ++res_.links;
  }

  // Attribute values repeat across a node (every switch port has the same vendor, class, link
  // speed, NUMA node): equal values share one inode, like the table defaults.
  void attrs(const std::string& dir_rel, const AttrMap& m) {
    for (const auto& [name, value] : m) shared_file(dir_rel + "/" + name, value);
  }

  // Attributes the host refuses to read: an empty file each, its own inode (never a hard link: it
  // is a mount point), over which the mount plan binds the host's file, whose open() and read()
  // then fail as the host's do. Only an unmounted tree shows the empty file.
  void refused(const std::string& dir_rel, const RefusedMap& m) {
    for (const auto& entry : m) {
      file(dir_rel + "/" + entry.first, "");
      ++res_.refused;
    }
  }

  // Creates every queued file and link; throws Error naming the first entry that failed.
  void flush() {
    unsigned n = std::clamp(std::thread::hardware_concurrency(), 1u, 4u);
    if (ops_.size() < 512) n = 1;
    std::vector<std::string> errors(n);
    std::vector<std::thread> threads;
    size_t chunk = (ops_.size() + n - 1) / n;
    for (unsigned i = 0; i < n; ++i) {
      size_t b = i * chunk, e = std::min(ops_.size(), b + chunk);
      auto work = [this, b, e, &err = errors[i]] { err = create(b, e); };
      if (i + 1 == n)
        work();
      else
        threads.emplace_back(work);
    }
    for (auto& t : threads) t.join();
    ops_.clear();
    for (const auto& e : errors)
      if (!e.empty()) throw Error(e);
  }

 private:
  struct Op {
    enum Kind { kFile, kSymlink, kHardLink } kind;
    std::string rel;
    std::string data;  // file contents, symlink target, or tree path of the hard link's file
  };

  // Creates one entry named `name` in directory `dfd`.
  std::string create_one(const Op& op, int dfd, const std::string& name) const {
    if (op.kind == Op::kSymlink) {
      if (::symlinkat(op.data.c_str(), dfd, name.c_str()) != 0)
        return "build: cannot symlink " + op.rel + ": " + std::strerror(errno);
      return "";
    }
    if (op.kind == Op::kHardLink) {
      if (::linkat(root_, op.data.c_str(), dfd, name.c_str(), 0) != 0)
        return "build: cannot link " + op.rel + ": " + std::strerror(errno);
      return "";
    }
    UniqueFd fd(::openat(dfd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444));
    if (!fd) return "build: cannot create " + op.rel + ": " + std::strerror(errno);
    size_t off = 0;
    while (off < op.data.size()) {
      ssize_t w = ::write(fd.get(), op.data.data() + off, op.data.size() - off);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return "build: cannot write " + op.rel + ": " + std::strerror(errno);
      off += static_cast<size_t>(w);
    }
    return "";
  }

  std::string create(size_t begin, size_t end) const {
    UniqueFd cur;
    std::string cur_path;
    for (size_t i = begin; i < end; ++i) {
      const Op& op = ops_[i];
      std::string d = dirname_of(op.rel);
      int dfd = root_;
      std::string name = op.rel;
      if (!d.empty()) {
        if (d != cur_path) {
          cur = UniqueFd(::openat(root_, d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
          if (!cur) return "build: cannot open directory " + d + ": " + std::strerror(errno);
          cur_path = d;
        }
        dfd = cur.get();
        name = op.rel.substr(d.size() + 1);
      }
      if (std::string err = create_one(op, dfd, name); !err.empty()) return err;
    }
    return "";
  }

  int root_;
  BuildResult& res_;
  std::set<std::string> made_;
  std::vector<Op> ops_;
  std::map<std::string, std::string> prototypes_;  // contents -> first file written with them
};

std::string devices_path(const PciFunction& f) {
  return "devices/" + f.path;
}

void write_pci(TreeWriter& w, const Snapshot& s, const Selection& sel) {
  std::set<std::string> roots_used;
  for (const auto& bdf : sel.pci) {
    const PciFunction* f = s.find_pci(bdf);
    roots_used.insert(f->path.substr(0, f->path.find('/')));
  }
  for (const auto& rc : s.roots) {
    if (!roots_used.count(rc.dir)) continue;
    std::string d = "devices/" + rc.dir;
    w.dir(d);
    for (const auto& bus : rc.buses) {
      std::string b = d + "/pci_bus/" + bus;
      w.dir(b);
      w.link(b + "/device", d);
      w.link(b + "/subsystem", "class/pci_bus");
      w.link("class/pci_bus/" + bus, b);
    }
  }
  // s.pci is ordered parents first, so each directory's parent already exists.
  for (const auto& f : s.pci) {
    if (!sel.pci.count(f.bdf)) continue;
    std::string d = devices_path(f);
    w.dir(d);
    w.attrs(d, f.attrs);
    w.refused(d, f.refused);
    if (!f.config.empty()) w.file(d + "/config", f.config);
    w.link(d + "/subsystem", "bus/pci");
    w.link("bus/pci/devices/" + f.bdf, d);
    if (!f.driver.empty()) {
      w.dir("bus/pci/drivers/" + f.driver);
      w.link(d + "/driver", "bus/pci/drivers/" + f.driver);
      w.link("bus/pci/drivers/" + f.driver + "/" + f.bdf, d);
    }
    if (!f.physfn.empty() && sel.pci.count(f.physfn))
      w.link(d + "/physfn", devices_path(*s.find_pci(f.physfn)));
    for (const auto& bus : f.child_buses) {
      std::string b = d + "/pci_bus/" + bus;
      w.dir(b);
      w.link(b + "/device", d);
      w.link(b + "/subsystem", "class/pci_bus");
      w.link("class/pci_bus/" + bus, b);
    }
  }
}

void write_table(TreeWriter& w, const std::string& dir, int len,
                 const std::map<int, std::string>& m, const std::string& empty) {
  w.dir(dir);
  for (int i = 0; i < len; ++i) {
    auto it = m.find(i);
    if (it != m.end())
      w.file(dir + "/" + std::to_string(i), it->second);
    else
      w.shared_file(dir + "/" + std::to_string(i), empty);
  }
}

void write_ib(TreeWriter& w, const Snapshot& s, const Selection& sel, bool live_ports,
              BuildResult& res) {
  bool any_verbs = false;
  for (const IbDevice* d : sel.ib) {
    const PciFunction& f = *s.find_pci(d->pci);
    std::string pd = devices_path(f);
    std::string id = pd + "/infiniband/" + d->name;
    w.dir(id);
    w.attrs(id, d->attrs);
    w.refused(id, d->refused);
    w.link(id + "/device", pd);
    w.link(id + "/subsystem", "class/infiniband");
    w.link("class/infiniband/" + d->name, id);
    for (const auto& p : d->ports) {
      std::string pp = id + "/ports/" + std::to_string(p.num);
      w.dir(pp);
      if (live_ports) continue;  // a mount point: the host's directory is bound here
      // The static copy, for a tree used without its plan: the plan binds the host's whole
      // directory over it, which also answers refused reads (rate, empty GID slots) live.
      w.attrs(pp, p.attrs);
      for (const auto& entry : p.refused) w.shared_file(pp + "/" + entry.first, "");
      write_table(w, pp + "/gids", p.gid_table_len, p.gids,
                  "0000:0000:0000:0000:0000:0000:0000:0000\n");
      // The kernel refuses to read an empty slot's type and netdev (ENODATA, or EINVAL; the
      // snapshot records which); a static file cannot, so it is empty until the plan binds the
      // host's port directory here.
      write_table(w, pp + "/gid_attrs/types", p.gid_table_len, p.gid_types, "");
      write_table(w, pp + "/gid_attrs/ndevs", p.gid_table_len, p.gid_ndevs, "");
      write_table(w, pp + "/pkeys", p.pkey_table_len, p.pkeys, "0x0000\n");
    }
    if (d->verbs) {
      any_verbs = true;
      std::string vd = pd + "/infiniband_verbs/" + d->verbs->name;
      w.dir(vd);
      w.attrs(vd, d->verbs->attrs);
      w.refused(vd, d->verbs->refused);
      w.link(vd + "/device", pd);
      w.link(vd + "/subsystem", "class/infiniband_verbs");
      w.link("class/infiniband_verbs/" + d->verbs->name, vd);
    } else {
      res.notes.push_back(d->name +
                          ": no uverbs device in the snapshot; libibverbs will not list it");
    }
  }
  if (s.uverbs_abi_version)
    w.file("class/infiniband_verbs/abi_version", *s.uverbs_abi_version);
  else if (any_verbs)
    res.notes.push_back("class/infiniband_verbs/abi_version: not in the snapshot, not written");
}

void write_net(TreeWriter& w, const Snapshot& s, const Selection& sel) {
  for (const NetDevice* n : sel.net) {
    const PciFunction& f = *s.find_pci(n->pci);
    std::string nd = devices_path(f) + "/" + n->subpath;
    w.dir(nd);
    w.attrs(nd, n->attrs);
    w.refused(nd, n->refused);
    // `device` names the interface's parent device: the directory holding net/<if>.
    w.link(nd + "/device", dirname_of(dirname_of(nd)));
    w.link(nd + "/subsystem", "class/net");
    w.link("class/net/" + n->name, nd);
  }
}

void write_numa(TreeWriter& w, const Snapshot& s) {
  for (const auto& n : s.numa) {
    std::string d = "devices/system/node/node" + std::to_string(n.id);
    w.dir(d);
    w.attrs(d, n.attrs);
    w.refused(d, n.refused);
  }
  for (const auto& [path, value] : s.peer_memory) {
    w.dir(dirname_of(path));
    w.file(path, value);
  }
}

}  // namespace

std::string port_dir_in_tree(const Snapshot& s, const IbDevice& d, const IbPort& p) {
  const PciFunction* f = s.find_pci(d.pci);
  return devices_path(*f) + "/infiniband/" + d.name + "/ports/" + std::to_string(p.num);
}

BuildResult build_tree(const Snapshot& s, const Selection& sel, const BuildOptions& opt) {
  if (opt.out.empty()) throw Error("build: no output directory given");
  if (!s.port_tables && !opt.live_ports)
    throw Error("build: the snapshot of " + s.source +
                " has no GID or P_Key tables, so its ports can only be bound live");
  std::string out = opt.out;
  while (out.size() > 1 && out.back() == '/') out.pop_back();
  if (exists_nofollow(out) && !opt.force)
    throw Error("build: " + out + " already exists (use --force to replace it atomically)");
  std::string parent = dirname_of(out);
  if (parent.empty()) parent = ".";
  std::string tmpl = join(parent, "." + basename_of(out) + ".tmp-XXXXXX");
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw_errno("build: cannot create a temporary directory next to " + out, errno);
  std::string tmp(buf.data());
  ::chmod(tmp.c_str(), 0755);
  BuildResult res;
  res.notes = sel.notes;
  try {
    UniqueFd root(::open(tmp.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!root) throw_errno("build: cannot open " + tmp, errno);
    TreeWriter w(root.get(), res);
    for (const char* d :
         {"devices", "bus/pci/devices", "bus/pci/drivers", "class/pci_bus", "class/infiniband",
          "class/infiniband_verbs", "class/net", "devices/system/node",
          // Mount points: the host's live CPU topology (see mount_plan.h) and the
          // runtime's cgroup mount.
          "devices/system/cpu", "fs/cgroup"})
      w.dir(d);
    write_pci(w, s, sel);
    write_ib(w, s, sel, opt.live_ports, res);
    write_net(w, s, sel);
    write_numa(w, s);
    w.flush();
    if (res.refused > 0)
      res.notes.push_back(std::to_string(res.refused) +
                          " attributes the host refuses to read are empty mount points: the mount "
                          "plan binds the host's files over them, which fail as the host's do");
    // No fsync: the tree is rebuilt from the snapshot on every container start, and a journal
    // flush costs more than the whole build.
  } catch (...) {
    remove_tree(tmp, nullptr);
    throw;
  }
  if (::rename(tmp.c_str(), out.c_str()) != 0) {
    if (!(opt.force &&
          (errno == ENOTEMPTY || errno == EEXIST || errno == EISDIR || errno == ENOTDIR))) {
      int e = errno;
      remove_tree(tmp, nullptr);
      throw_errno("build: cannot rename " + tmp + " to " + out, e);
    }
    // Swap the complete new tree with the old one in one step, then remove the old one.
    if (::renameat2(AT_FDCWD, tmp.c_str(), AT_FDCWD, out.c_str(), RENAME_EXCHANGE) != 0) {
      int e = errno;
      remove_tree(tmp, nullptr);
      throw_errno("build: cannot replace " + out, e);
    }
    std::string err;
    if (!remove_tree(tmp, &err)) res.notes.push_back("old tree left at " + tmp + ": " + err);
  }
  res.path = out;
  return res;
}

}  // namespace gdrproxy::sysfs
