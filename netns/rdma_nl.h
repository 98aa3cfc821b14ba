// RDMA netlink (NETLINK_RDMA, the nldev family of <rdma/rdma_netlink.h>): the one client that the
// rail launcher and `gdrproxy doctor` ask the kernel's RDMA core through. Request building and
// reply parsing are pure functions over bytes (tested without a kernel); RdmaNl sends them.
//
// The idea not to miss: an RDMA netlink socket answers for the network namespace it was opened
// in, for its whole life. In exclusive RDMA netns mode (`rdma system set netns exclusive`) a
// device is visible, and can be changed, only through a socket of the namespace that holds it; in
// shared mode every namespace sees every device. Which netdev a port has is reported only to a
// socket of the netdev's own namespace. So every question here is asked through a socket of a
// chosen namespace (RdmaNl::open_in), never "globally".
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "netns/netns_fd.h"

namespace gdrproxy::netns {

// One attribute of a message: type (flags masked off) and payload.
struct NlAttr {
  uint16_t type = 0;
  std::vector<uint8_t> data;
};
using NlAttrs = std::vector<NlAttr>;  // one message's attributes, in order

NlAttr nl_str(uint16_t type, const std::string& s);  // NUL-terminated, as the kernel wants
NlAttr nl_u32(uint16_t type, uint32_t v);
NlAttr nl_u8(uint16_t type, uint8_t v);

// The last attribute of `type`, or null. Getters give nullopt/"" when it is absent or too short.
const NlAttr* nl_find(const NlAttrs& attrs, uint16_t type);
std::string nl_get_str(const NlAttrs& attrs, uint16_t type);
std::optional<uint8_t> nl_get_u8(const NlAttrs& attrs, uint16_t type);
std::optional<uint32_t> nl_get_u32(const NlAttrs& attrs, uint16_t type);
std::optional<uint64_t> nl_get_u64(const NlAttrs& attrs, uint16_t type);

// A request for nldev command `op` (RDMA_NLDEV_CMD_*): NLM_F_REQUEST | NLM_F_ACK | `flags`.
std::vector<uint8_t> nldev_request(uint16_t op, uint16_t flags, uint32_t seq, const NlAttrs& attrs);

// What the replies to one request said so far.
struct NldevReply {
  std::vector<NlAttrs> messages;  // data messages, in order
  bool done = false;              // NLMSG_DONE (end of a dump, which sets error if it failed)
  bool acked = false;             // NLMSG_ERROR with 0 (end of any other request)
  int error = 0;                  // NLMSG_ERROR's errno (positive), 0 if none
  std::string error_message;      // the kernel's extended-ack text with it, if any
};

// Adds the messages of one received datagram to `reply`, skipping those of another sequence
// number. Returns false with `why` set on bytes that are not well-formed netlink (a length that
// runs past the buffer or the message); never reads outside `bytes`.
bool parse_nldev_reply(std::span<const uint8_t> bytes, uint32_t seq, NldevReply& reply,
                       std::string& why);

// An RDMA netlink socket of one network namespace.
class RdmaNl {
 public:
  // In the calling thread's namespace. Throws gdrproxy::Error (with the errno's text) when the
  // socket cannot be opened: EPROTONOSUPPORT means the kernel has no RDMA core loaded.
  RdmaNl();
  // The same, or nullopt when the kernel has no RDMA netlink (hence no RDMA device) at all.
  static std::optional<RdmaNl> open_if_present();
  // A socket opened inside `ns` (on a short-lived thread, netns_fd.h).
  static RdmaNl open_in(const NetnsFd& ns);

  // Sends one request and collects its replies (2 s per reply). An error reply throws, naming
  // `what` and the kernel's reason, or, with `error` given, is stored there (errno, and the
  // kernel's text in `message` if given) and returns what came before it.
  std::vector<NlAttrs> request(uint16_t op, uint16_t flags, const NlAttrs& attrs,
                               const std::string& what, int* error = nullptr,
                               std::string* message = nullptr) const;

 private:
  explicit RdmaNl(UniqueFd fd) : fd_(std::move(fd)) {}
  UniqueFd fd_;
  mutable uint32_t seq_ = 0;
};

// "Operation not supported" or, when the kernel said more, "Operation not supported (TEXT)".
std::string kernel_reason(int error, const std::string& message);

// One RDMA device as the socket's namespace sees it.
struct RdmaDevice {
  std::string name;
  uint32_t index = 0;  // the kernel's device index: global, kept across namespace moves
  uint64_t node_guid = 0;
};
std::vector<RdmaDevice> rdma_devices(const RdmaNl& nl);

// One port of an RDMA device and the netdev it has in the socket's namespace ("" and 0 when its
// netdev lives in another namespace or it has none).
struct RdmaPortNetdev {
  std::string ibdev;
  unsigned dev_index = 0;
  unsigned port = 0;
  std::string netdev;
  int ifindex = 0;
};
std::vector<RdmaPortNetdev> rdma_port_netdevs(const RdmaNl& nl);
// The same through a socket of the calling thread's namespace; none without RDMA netlink.
std::vector<RdmaPortNetdev> rdma_port_netdevs();

// RDMA_NLDEV_SYS_ATTR_NETNS_MODE.
enum class RdmaNetnsMode { kUnknown, kShared, kExclusive };
RdmaNetnsMode rdma_netns_mode(const RdmaNl& nl);
// "shared", "exclusive", or "" for kUnknown.
std::string to_string(RdmaNetnsMode mode);
// The calling thread's namespace's view of the mode; kUnknown without RDMA netlink or when the
// kernel does not say.
RdmaNetnsMode rdma_netns_mode_here();

// RDMA_NLDEV_CMD_SET with RDMA_NLDEV_NET_NS_FD: moves device `index`, which must be visible
// through `nl`, into `to`. Returns 0 or the kernel's errno (its text in `message`).
int set_rdma_device_netns(const RdmaNl& nl, uint32_t index, const NetnsFd& to,
                          std::string& message);
// RDMA_NLDEV_CMD_SET with RDMA_NLDEV_ATTR_DEV_NAME. Returns 0 or the kernel's errno.
int rename_rdma_device(const RdmaNl& nl, uint32_t index, const std::string& name,
                       std::string& message);

}  // namespace gdrproxy::netns
