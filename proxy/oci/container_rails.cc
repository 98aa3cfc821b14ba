// Moving a container's rails and giving them back (see container_rails.h).
#include "proxy/oci/container_rails.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <set>
#include <thread>

#include "base/error.h"
#include "base/escape.h"
#include "base/unique_fd.h"
#include "netns/netns_sysfs.h"
#include "netns/rdma_netns.h"
#include "netns/rdma_sysfs.h"
#include "netns/restore.h"
#include "proxy/oci/container_state.h"

namespace gdrproxy::proxy {
namespace {

// How long a moved rail's RoCE GID may take to come back (the GID cache works asynchronously).
constexpr int kGidWaitSteps = 30;
constexpr int kGidWaitStepMs = 100;

}  // namespace

void unpin_netns(const std::string& pin) {
  ::umount2(pin.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW);
  ::unlink(pin.c_str());
}

std::string container_rails_dir(const std::string& state_dir, const std::string& id) {
  return state_dir + "/" + container_file_name(id);
}

std::string make_container_rails_dir(const std::string& state_dir, const std::string& id,
                                     const std::string& who) {
  ::mkdir(state_dir.c_str(), 0700);
  const std::string dir = container_rails_dir(state_dir, id);
  struct stat ds {};
  if ((::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) || ::lstat(dir.c_str(), &ds) != 0 ||
      !S_ISDIR(ds.st_mode) || ds.st_uid != ::geteuid())
    throw Error(who + ": " + dir + " is not a directory of ours");
  return dir;
}

void move_container_rails(const ContainerRailMove& c, std::ostream& log) {
  const netns::MoveOptions& m = c.move;
  // Which rails back an RDMA device, read before the move; in exclusive RDMA netns mode the
  // devices go with their rails (netns/rdma_netns.h).
  // move_rails rolls back what it did before it throws: nothing is left to give back then.
  const std::vector<netns::RdmaNetdev> backing = netns::enumerate_rdma_netdevs("/sys");
  const bool exclusive = netns::rdma_netns_mode_here() == netns::RdmaNetnsMode::kExclusive;
  netns::move_rails(m, log);
  // Each rail that backs an RDMA device (as read before the move) must get a RoCE v2 IPv4 GID
  // back after it: the kernel drops a netdev's GIDs when it leaves the namespace and adds them
  // again, asynchronously, when the move re-adds its addresses. Without one NCCL's IB plugin finds
  // no usable GID for the device inside the container. In exclusive RDMA netns mode the devices
  // left the host's sysfs with the rails: they are read as the container's namespace sees them.
  std::string problem;
  const auto check_gids = [&](const std::string& sysfs_root) {
    auto usable_gid = [&](const std::string& ibdev, unsigned port) {
      for (const auto& d : netns::enumerate_rdma_netdevs(sysfs_root))
        if (d.ibdev == ibdev && d.port == port && netns::roce_v2_ipv4_gid_index(d, {}) >= 0)
          return true;
      return false;
    };
    for (const std::string& rail : m.ifaces) {
      const auto it = std::find_if(backing.begin(), backing.end(),
                                   [&](const netns::RdmaNetdev& d) { return d.netdev == rail; });
      if (it == backing.end()) {
        if (!c.allow_plain_rails) {
          problem =
              "rail " + rail + " backs no RDMA device (--allow-plain-rails to move it anyway)";
          break;
        }
        log << c.who << ": rail " << rail << " backs no RDMA device\n";
        continue;
      }
      bool usable = false;
      for (int i = 0; i < kGidWaitSteps && !(usable = usable_gid(it->ibdev, it->port)); ++i)
        std::this_thread::sleep_for(std::chrono::milliseconds(kGidWaitStepMs));
      if (!usable) {
        problem = "rail " + rail + " (" + it->ibdev + " port " + std::to_string(it->port) +
                  ") has no RoCE v2 IPv4 GID " + std::to_string(kGidWaitSteps * kGidWaitStepMs) +
                  " ms after the move" +
                  (exclusive ? " (as the container's namespace sees it)" : "");
        break;
      }
    }
  };
  try {
    if (exclusive)
      netns::in_sysfs_of(netns::NetnsFd::open_path(m.target_path), check_gids);
    else
      check_gids("/sys");
  } catch (const Error& e) {
    problem = e.what();
  }
  if (!problem.empty()) {
    netns::restore_command(m.journal, log);
    ::unlink(m.journal.c_str());
    ::unlink((m.journal + ".done").c_str());
    throw Error(c.who + ": " + problem + "; rails given back");
  }
}

int restore_rails_dir(const std::string& dir) {
  std::error_code ec;
  // One restorer at a time: a dead container's poststop hook and an agent's sweep may both take
  // its directory. The second waits, then finds the directory given back and removed.
  const UniqueFd held(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!held) return 0;  // nothing was moved, or given back
  while (::flock(held.get(), LOCK_EX) != 0)
    if (errno != EINTR) throw Error("cannot lock " + printable(dir) + ": " + std::strerror(errno));
  struct stat now {
  }, locked{};
  if (::stat(dir.c_str(), &now) != 0 || ::fstat(held.get(), &locked) != 0 ||
      now.st_ino != locked.st_ino || now.st_dev != locked.st_dev)
    return 0;  // given back by the other restorer while this one waited
  // A mover still at work (its container deleted before it started): its end first, so the
  // journal read here is whole and no rail moves after it was given back.
  const UniqueFd moving(
      ::openat(held.get(), kEarlyMoveFile, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK));
  while (moving && ::flock(moving.get(), LOCK_SH) != 0)
    if (errno != EINTR) throw Error("cannot lock " + printable(dir) + "/" + kEarlyMoveFile);
  // Every hook's journal (a completed restore leaves NAME.journal.done, which restore reads).
  std::set<std::string> journals;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    std::string name = e.path().string();
    if (name.size() > 5 && name.compare(name.size() - 5, 5, ".done") == 0)
      name.resize(name.size() - 5);
    if (name.size() > 8 && name.compare(name.size() - 8, 8, ".journal") == 0) journals.insert(name);
  }
  int problems = 0;
  for (const std::string& j : journals) problems += netns::restore_command(j, std::cerr);
  if (problems != 0) return problems;  // pins stay, for the next try to find the rails in
  for (const auto& e : std::filesystem::directory_iterator(dir, ec))
    if (e.path().extension() == ".netns") unpin_netns(e.path().string());
  std::filesystem::remove_all(dir, ec);
  return 0;
}

}  // namespace gdrproxy::proxy
