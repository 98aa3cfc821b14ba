// What every check reads: where the node's files are and whose view it takes.
//
// The idea not to miss: no check opens "/sys", "/proc", "/dev" or "/etc" by name. Each reads
// under the roots held here, so a test points them at a tree it built (a fake sysfs, a fake
// /proc/PID/maps, a rootfs of small ELF files) and makes every check pass and fail on a machine
// with no RDMA NIC and no GPU. The defaults are the running node's.
#pragma once

#include <chrono>
#include <functional>
#include <map>
#include <string>
#include <vector>

namespace gdrproxy::doctor {

struct Context {
  std::string sysfs_root = "/sys";
  std::string proc_root = "/proc";
  std::string dev_root = "/dev";
  std::string etc_root = "/etc";  // nccl.conf, ld.so.conf of the node (not of --rootfs)
  std::string home;               // whose ~/.nccl.conf; "" = none

  // The environment NCCL sees: the doctor's own, or the first --pid's (/proc/PID/environ).
  std::map<std::string, std::string> env;
  std::string env_origin = "environment";

  std::vector<int> pids;                  // --pid: live processes of the job
  std::string rootfs;                     // --rootfs: an image's root file system
  std::string peer;                       // --peer: another node's `doctor --json`
  std::string arp_profile = "multirail";  // the rail profile gdrproxy applies (netns/)
  std::string arp_profile_dir;            // searched first for it, as `netns move` does
  std::string libcuda = "libcuda.so.1";   // what the NVIDIA checks dlopen()
  std::string kernel_release;             // uname -r ("" = unknown)

  // Without --pid, the lib family's probe child dlopen()s these (empty: no probe) and is killed
  // after probe_timeout. The child is the doctor's own: its maps are under self_proc_root.
  std::vector<std::string> probe_libraries = {"libibverbs.so.1", "librdmacm.so.1", "libnccl.so.2",
                                              "libucp.so.0",     "libfabric.so.1", "libcuda.so.1",
                                              "libnixl.so"};
  std::chrono::milliseconds probe_timeout{2000};
  std::string self_proc_root = "/proc";

  // IPv4 addresses of a netdev, dotted. Default: getifaddrs() of the current network namespace.
  std::function<std::vector<std::string>(const std::string& netdev)> ipv4_of;
};

// The defaults for the running node: real roots, the process environment, $HOME, getifaddrs.
Context node_context();

// KEY=VALUE\0... as /proc/PID/environ holds it.
std::map<std::string, std::string> parse_environ(const std::string& bytes);

}  // namespace gdrproxy::doctor
