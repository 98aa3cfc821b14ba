#include "proxy/observe/exit_observer.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include <atomic>
#include <cerrno>
#include <cstring>

#include "base/process_info.h"
#include "proxy/observe/bpf_links.h"
#include "proxy/observe/syscall_exit_bpf.h"

namespace gdrproxy::proxy {

std::unique_ptr<ExitObserver> ExitObserver::open(Callback cb, std::string& why) {
  std::unique_ptr<ExitObserver> o(new ExitObserver());
  o->cb_ = std::move(cb);
  bool attached = false;
  with_tracefs([&] {
    o->obj_ = load_embedded_bpf(kSyscallExitBpf, kSyscallExitBpfSize, "bpf", why);
    attached = o->obj_ && attach_every_program(o->obj_, false, o->links_, "bpf", why);
  });
  if (!attached) return nullptr;
  o->pending_fd_ = bpf_object__find_map_fd_by_name(o->obj_, "pending");
  if (!o->mapping_.map(bpf_object__find_map_fd_by_name(o->obj_, "pending_slots"),
                       sizeof(gdrproxy_pending_slot) * GDRPROXY_PENDING_SLOTS, true,
                       "the pending slots", why))
    return nullptr;
  o->slots_ = static_cast<gdrproxy_pending_slot*>(o->mapping_.data());
  o->cm_fds_fd_ = bpf_object__find_map_fd_by_name(o->obj_, "cm_fds");
  o->lost_fd_ = bpf_object__find_map_fd_by_name(o->obj_, "lost");
  int events_fd = bpf_object__find_map_fd_by_name(o->obj_, "events");
  auto on_event = [](void* ctx, void* data, size_t size) -> int {
    if (size >= sizeof(gdrproxy_exit_event))
      static_cast<ExitObserver*>(ctx)->cb_(*static_cast<const gdrproxy_exit_event*>(data));
    return 0;
  };
  o->rb_ = ring_buffer__new(events_fd, on_event, o.get(), nullptr);
  if (!o->rb_) {
    why = std::string("bpf ring buffer: ") + std::strerror(errno);
    return nullptr;
  }
  return o;
}

ExitObserver::~ExitObserver() {
  if (rb_) ring_buffer__free(rb_);
  // Links are not owned by the object: each is destroyed, which detaches its program.
  destroy_links_side_by_side(links_);
  if (obj_) bpf_object__close(obj_);
}

std::vector<uint32_t> ExitObserver::link_ids() const {
  std::vector<uint32_t> ids;
  for (bpf_link* l : links_) {
    bpf_link_info info{};
    __u32 len = sizeof(info);
    if (bpf_obj_get_info_by_fd(bpf_link__fd(l), &info, &len) == 0) ids.push_back(info.id);
  }
  return ids;
}

void ExitObserver::unwatch_cm_fd(uint32_t tgid, uint32_t fd) {
  gdrproxy_cm_fd key{tgid, fd};
  bpf_map_delete_elem(cm_fds_fd_, &key);
}

bool ExitObserver::expect(uint32_t tid, uint64_t seq, uint64_t cookie, const ResultRegion& r0,
                          const ResultRegion& r1, bool watch_rdma_cm) {
  gdrproxy_pending p{};
  p.seq = seq;
  p.cookie = cookie;
  p.addr0 = r0.addr;
  p.addr1 = r1.addr;
  p.len0 = r0.len;
  p.len1 = r1.len;
  p.kind = watch_rdma_cm ? GDRPROXY_EVENT_CM_OPEN : GDRPROXY_EVENT_RESULT;
  gdrproxy_pending_slot& slot = slot_of(tid);
  std::atomic_ref<uint64_t> state(slot.state);
  // Free, or left armed by this thread's earlier call (it never returned: it died, and the tid
  // was reused): taken, written, armed. The thread is waiting in its notification, so no exit
  // of its own can take the slot meanwhile.
  for (uint64_t was : {uint64_t{0}, uint64_t{GDRPROXY_SLOT_STATE(tid, GDRPROXY_SLOT_ARMED)}}) {
    if (state.compare_exchange_strong(was, GDRPROXY_SLOT_STATE(tid, GDRPROXY_SLOT_BUSY),
                                      std::memory_order_acquire)) {
      slot.p = p;
      state.store(GDRPROXY_SLOT_STATE(tid, GDRPROXY_SLOT_ARMED), std::memory_order_release);
      return true;
    }
  }
  return bpf_map_update_elem(pending_fd_, &tid, &p, BPF_ANY) == 0;
}

void ExitObserver::forget(uint32_t tid) {
  uint64_t armed = GDRPROXY_SLOT_STATE(tid, GDRPROXY_SLOT_ARMED);
  std::atomic_ref<uint64_t>(slot_of(tid).state)
      .compare_exchange_strong(armed, 0, std::memory_order_acq_rel);
  bpf_map_delete_elem(pending_fd_, &tid);
}

bool ExitObserver::still_armed(uint32_t tid, uint64_t seq) const {
  gdrproxy_pending_slot& slot = slot_of(tid);
  std::atomic_ref<uint64_t> state(slot.state);
  const uint64_t armed = GDRPROXY_SLOT_STATE(tid, GDRPROXY_SLOT_ARMED);
  if (state.load(std::memory_order_acquire) == armed) {
    const uint64_t in_slot = std::atomic_ref<uint64_t>(slot.p.seq).load();
    // Read while the slot stayed armed by this thread: the seq is the slot's registration's.
    if (state.load(std::memory_order_acquire) == armed && in_slot == seq) return true;
  }
  gdrproxy_pending p{};
  return bpf_map_lookup_elem(pending_fd_, &tid, &p) == 0 && p.seq == seq;
}

int ExitObserver::poll_fd() const {
  return ring_buffer__epoll_fd(rb_);
}

void ExitObserver::consume() {
  ring_buffer__consume(rb_);
}

uint64_t ExitObserver::skipped() const {
  uint64_t n = 0;
  bpf_program* prog = nullptr;
  bpf_object__for_each_program(prog, obj_) {
    bpf_prog_info info{};
    uint32_t len = sizeof info;
    if (bpf_obj_get_info_by_fd(bpf_program__fd(prog), &info, &len) == 0) n += info.recursion_misses;
  }
  return n;
}

uint64_t ExitObserver::lost() const {
  uint32_t zero = 0;
  uint64_t n = 0;
  if (lost_fd_ >= 0) bpf_map_lookup_elem(lost_fd_, &zero, &n);
  return n;
}

}  // namespace gdrproxy::proxy
