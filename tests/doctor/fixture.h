// Test fixtures for the doctor: directory trees in a temporary directory that play a node's
// /sys, /proc, /dev and /etc, or an image's rootfs.
#pragma once

#include <string>
#include <vector>

#include "doctor/context.h"
#include "doctor/report.h"

namespace gdrproxy::doctor::testing {

class TempTree {
 public:
  TempTree();
  ~TempTree();
  TempTree(const TempTree&) = delete;
  TempTree& operator=(const TempTree&) = delete;

  const std::string& root() const { return root_; }
  std::string path(const std::string& rel) const { return root_ + "/" + rel; }
  // Creates parent directories as needed.
  void write(const std::string& rel, const std::string& contents) const;
  void mkdir(const std::string& rel) const;
  void symlink(const std::string& target, const std::string& rel) const;

 private:
  std::string root_;
};

// A GID as sysfs prints it for an IPv4 address: 0000:...:ffff:0a00:0001.
std::string ipv4_gid(const std::string& dotted);

// Adds to the sysfs tree under `sys` ("sys" inside `t`) an RDMA device `ibdev` with one port
// (1) whose netdev is `netdev` and whose GID table has `gids` (index, gid, type).
struct FakeGid {
  int index;
  std::string gid;
  std::string type;
};
void add_hca(const TempTree& t, const std::string& ibdev, const std::string& netdev,
             const std::vector<FakeGid>& gids, const std::string& link_layer = "Ethernet");

// Compiles a small shared object with gcc at `out` (parent directories made): SONAME `soname`
// (none when empty), one DT_NEEDED per library in `link_with` (paths of objects built before:
// each contributes its SONAME), C `source` (a dummy function when empty), and DT_RUNPATH (or
// DT_RPATH when `rpath_not_runpath`) entries.
void build_so(const std::string& out, const std::string& soname,
              const std::vector<std::string>& link_with = {},
              const std::vector<std::string>& search = {}, bool rpath_not_runpath = false,
              bool m32 = false, const std::string& source = "");

// A Context reading only `t`: sysfs at t/sys, /proc at t/proc, /dev at t/dev, /etc at t/etc, an
// empty environment, no home, no IPv4 addresses and no library probe.
Context tree_context(const TempTree& t);

// The one check with this id; fails the test if there is not exactly one.
Check only_check(const Report& r, const std::string& id);

}  // namespace gdrproxy::doctor::testing
