// Loading the ioctl judge (ioctl_lsm.bpf.c) and filling its tables (see ioctl_lsm.h). The tables
// are filled before the programs attach, and a sandbox's first task is marked before it runs the
// command, so no call of the sandbox is ever judged from half-filled tables.
#include "proxy/sandbox/ioctl_lsm.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <set>

#include "base/error.h"
#include "base/process_info.h"
#include "base/unique_fd.h"
#include "proxy/observe/bpf_links.h"
#include "proxy/sandbox/ioctl_lsm_bpf.h"
#include "proxy/sandbox/ioctl_lsm_event.h"

namespace gdrproxy::proxy {
namespace {

constexpr uint8_t kJudgeRequests = 1, kRefuseAll = 2;  // as in ioctl_lsm.bpf.c
constexpr unsigned kMiscMajor = 10;

// The kernel's internal dev_t, as struct inode holds it.
uint32_t kernel_dev(dev_t d) {
  return (major(d) << 20) | minor(d);
}

bool update(int map_fd, const void* key, const void* value, std::string& why, const char* map) {
  if (bpf_map_update_elem(map_fd, key, value, BPF_ANY) == 0) return true;
  why = std::string("BPF LSM table ") + map + ": " + std::strerror(errno);
  return false;
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

std::unique_ptr<IoctlLsm> IoctlLsm::load(const IoctlLsmTables& tables, std::string& why) {
  if (!bpf_lsm_active(why)) return nullptr;
  std::unique_ptr<IoctlLsm> l(new IoctlLsm());
  l->obj_ = load_embedded_bpf(kIoctlLsmBpf, kIoctlLsmBpfSize, "BPF LSM program:", why,
                              " (needs CAP_BPF, CAP_PERFMON and CAP_MAC_ADMIN; some kernels "
                              "refuse LSM programs to every process)");
  if (!l->obj_) return nullptr;
  const int nodes = bpf_object__find_map_fd_by_name(l->obj_, "nodes");
  const int majors = bpf_object__find_map_fd_by_name(l->obj_, "guarded_majors");
  const int untrapped = bpf_object__find_map_fd_by_name(l->obj_, "untrapped");
  const int allowed = bpf_object__find_map_fd_by_name(l->obj_, "allowed");
  l->sandboxed_fd_ = bpf_object__find_map_fd_by_name(l->obj_, "sandboxed");
  l->counters_fd_ = bpf_object__find_map_fd_by_name(l->obj_, "counters");
  const uint8_t judge = kJudgeRequests, refuse = kRefuseAll, one = 1;
  l->ring_ = ring_buffer__new(
      bpf_object__find_map_fd_by_name(l->obj_, "refusals"),
      [](void* ctx, void* data, size_t size) {
        if (size < sizeof(gdrproxy_lsm_refusal)) return 0;
        const auto* e = static_cast<const gdrproxy_lsm_refusal*>(data);
        Refusal r;
        r.tid = static_cast<pid_t>(e->tid);
        r.tgid = static_cast<pid_t>(e->tgid);
        r.ns_tid = static_cast<pid_t>(e->ns_tid);
        r.rdev = makedev(e->rdev >> 20, e->rdev & 0xfffff);
        r.request = e->request;
        r.why = e->why == GDRPROXY_LSM_UNKNOWN_MINOR ? Refusal::Why::kUnknownMinor
                : e->why == GDRPROXY_LSM_NOT_HERE    ? Refusal::Why::kNotAllowedHere
                                                     : Refusal::Why::kUngranted;
        r.comm.assign(e->comm, strnlen(e->comm, sizeof e->comm));
        static_cast<IoctlLsm*>(ctx)->taken_.push_back(std::move(r));
        return 0;
      },
      l.get(), nullptr);
  if (!l->ring_) {
    why = std::string("BPF LSM program: the refusals' ring: ") + std::strerror(errno);
    return nullptr;
  }
  for (const auto& [rdev, granted] : tables.nodes) {
    const uint32_t k = kernel_dev(rdev);
    if (!update(nodes, &k, granted ? &judge : &refuse, why, "nodes")) return nullptr;
  }
  for (unsigned m : tables.guarded_majors)
    if (!update(majors, &m, &one, why, "guarded_majors")) return nullptr;
  for (uint32_t r : tables.untrapped)
    if (!update(untrapped, &r, &one, why, "untrapped")) return nullptr;
  for (const auto& [rdev, request] : tables.allowed) {
    const uint32_t k[2] = {kernel_dev(rdev), request};
    if (!update(allowed, k, &one, why, "allowed")) return nullptr;
  }
  if (!attach_every_program(l->obj_, true, l->links_, "BPF LSM program:", why)) return nullptr;
  return l;
}

IoctlLsm::~IoctlLsm() {
  destroy_links_side_by_side(links_);
  if (ring_) ring_buffer__free(ring_);
  if (obj_) bpf_object__close(obj_);
}

void IoctlLsm::judge(pid_t pid) {
  const UniqueFd pidfd(static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)));
  if (!pidfd) throw_errno("BPF LSM: pidfd_open of the sandbox's first task", errno);
  const int fd = pidfd.get();
  const uint8_t one = 1;
  if (bpf_map_update_elem(sandboxed_fd_, &fd, &one, BPF_NOEXIST) != 0)
    throw_errno("BPF LSM: marking the sandbox's first task", errno);
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
