// The RDMA netlink client (netns/rdma_nl.h) on bytes built here: requests as the kernel parses
// them, dump/ack/error replies (with the kernel's extended-ack text) as the kernel sends them, and
// malformed replies refused without reading past the buffer. Then the real socket of this
// machine, whichever answer it gives.
#include "netns/rdma_nl.h"

#include <gtest/gtest.h>
#include <linux/netlink.h>
#include <rdma/rdma_netlink.h>

#include <cerrno>
#include <cstring>

#include "base/error.h"

namespace gdrproxy::netns {
namespace {

// Appends one netlink message: header of `type`, `flags`, `seq`, then `payload` (aligned).
void message(std::vector<uint8_t>& out, uint16_t type, uint16_t flags, uint32_t seq,
             const std::vector<uint8_t>& payload) {
  nlmsghdr h{};
  h.nlmsg_len = static_cast<uint32_t>(NLMSG_HDRLEN + payload.size());
  h.nlmsg_type = type;
  h.nlmsg_flags = flags;
  h.nlmsg_seq = seq;
  const auto* hb = reinterpret_cast<const uint8_t*>(&h);
  out.insert(out.end(), hb, hb + sizeof h);
  out.insert(out.end(), payload.begin(), payload.end());
  out.resize(out.size() + (NLMSG_ALIGN(h.nlmsg_len) - h.nlmsg_len), 0);
}

// Attributes as the kernel lays them out.
std::vector<uint8_t> attrs(const NlAttrs& list) {
  std::vector<uint8_t> out = nldev_request(0, 0, 0, list);
  out.erase(out.begin(), out.begin() + NLMSG_HDRLEN);
  return out;
}

uint16_t nldev(uint16_t op) {
  return static_cast<uint16_t>(RDMA_NL_GET_TYPE(RDMA_NL_NLDEV, op));
}

std::vector<uint8_t> error_payload(int error, const std::string& text) {
  nlmsgerr e{};
  e.error = -error;
  e.msg.nlmsg_len = NLMSG_HDRLEN + 16;  // the request, capped: only its header comes back
  std::vector<uint8_t> out(sizeof e);
  std::memcpy(out.data(), &e, sizeof e);
  if (!text.empty()) {
    const auto tlv = attrs({nl_str(NLMSGERR_ATTR_MSG, text)});
    out.insert(out.end(), tlv.begin(), tlv.end());
  }
  return out;
}

TEST(RdmaNl, RequestIsLaidOutAsTheKernelReadsIt) {
  const auto msg =
      nldev_request(RDMA_NLDEV_CMD_SET, 0, 7,
                    {nl_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 3), nl_u32(RDMA_NLDEV_NET_NS_FD, 9),
                     nl_str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0")});
  nlmsghdr h;
  std::memcpy(&h, msg.data(), sizeof h);
  EXPECT_EQ(h.nlmsg_len, msg.size());
  EXPECT_EQ(h.nlmsg_type, (RDMA_NL_NLDEV << 10) + RDMA_NLDEV_CMD_SET);
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK);
  EXPECT_EQ(h.nlmsg_seq, 7u);
  // Header, then three attributes each on a 4-byte boundary: 8 + 8 + (4 + 7 -> 12).
  EXPECT_EQ(msg.size(), NLMSG_HDRLEN + 8u + 8u + 12u);
  nlattr a;
  std::memcpy(&a, msg.data() + NLMSG_HDRLEN + 8, sizeof a);
  EXPECT_EQ(a.nla_type, RDMA_NLDEV_NET_NS_FD);
  EXPECT_EQ(a.nla_len, NLA_HDRLEN + 4);
  uint32_t fd = 0;
  std::memcpy(&fd, msg.data() + NLMSG_HDRLEN + 8 + NLA_HDRLEN, sizeof fd);
  EXPECT_EQ(fd, 9u);
  // Read back with the reply parser (a request is a message like any other).
  NldevReply back;
  std::string why;
  ASSERT_TRUE(parse_nldev_reply(msg, 7, back, why)) << why;
  ASSERT_EQ(back.messages.size(), 1u);
  EXPECT_EQ(nl_get_u32(back.messages[0], RDMA_NLDEV_ATTR_DEV_INDEX), 3u);
  EXPECT_EQ(nl_get_str(back.messages[0], RDMA_NLDEV_ATTR_DEV_NAME), "mlx5_0");
  EXPECT_EQ(back.messages[0][2].data.size(), 7u);  // the name is sent NUL-terminated
  const auto dump = nldev_request(RDMA_NLDEV_CMD_GET, NLM_F_DUMP, 1, {});
  std::memcpy(&h, dump.data(), sizeof h);
  EXPECT_EQ(h.nlmsg_flags, NLM_F_REQUEST | NLM_F_ACK | NLM_F_DUMP);
  EXPECT_EQ(dump.size(), NLMSG_HDRLEN);
}

TEST(RdmaNl, DumpRepliesEndAtDoneAndOtherSequencesAreSkipped) {
  std::vector<uint8_t> buf;
  uint64_t guid = 0x0123456789abcdefull;
  NlAttr g{RDMA_NLDEV_ATTR_NODE_GUID, std::vector<uint8_t>(8)};
  std::memcpy(g.data.data(), &guid, 8);
  message(
      buf, nldev(RDMA_NLDEV_CMD_GET), NLM_F_MULTI, 5,
      attrs({nl_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 1), nl_str(RDMA_NLDEV_ATTR_DEV_NAME, "mlx5_0"), g}));
  // A late acknowledgement of an earlier request on the same socket: not this request's.
  message(buf, NLMSG_ERROR, 0, 4, error_payload(0, ""));
  message(buf, nldev(RDMA_NLDEV_CMD_GET), NLM_F_MULTI, 5,
          attrs({nl_u32(RDMA_NLDEV_ATTR_DEV_INDEX, 2), nl_str(RDMA_NLDEV_ATTR_DEV_NAME, "rxe0")}));
  NldevReply r;
  std::string why;
  ASSERT_TRUE(parse_nldev_reply(buf, 5, r, why)) << why;
  EXPECT_FALSE(r.done);
  EXPECT_FALSE(r.acked);
  ASSERT_EQ(r.messages.size(), 2u);
  EXPECT_EQ(nl_get_str(r.messages[0], RDMA_NLDEV_ATTR_DEV_NAME), "mlx5_0");
  EXPECT_EQ(nl_get_u64(r.messages[0], RDMA_NLDEV_ATTR_NODE_GUID), guid);
  EXPECT_EQ(nl_get_u32(r.messages[1], RDMA_NLDEV_ATTR_DEV_INDEX), 2u);
  EXPECT_FALSE(nl_get_u64(r.messages[1], RDMA_NLDEV_ATTR_NODE_GUID).has_value());
  std::vector<uint8_t> done;
  message(done, NLMSG_DONE, NLM_F_MULTI, 5, {0, 0, 0, 0});
  ASSERT_TRUE(parse_nldev_reply(done, 5, r, why));
  EXPECT_TRUE(r.done);
  EXPECT_EQ(r.error, 0);
  // A dump the kernel could not run (a device gone between two requests) ends with its errno.
  std::vector<uint8_t> failed;
  const int err = -EINVAL;
  std::vector<uint8_t> payload(sizeof err);
  std::memcpy(payload.data(), &err, sizeof err);
  message(failed, NLMSG_DONE, NLM_F_MULTI, 6, payload);
  NldevReply f;
  ASSERT_TRUE(parse_nldev_reply(failed, 6, f, why));
  EXPECT_TRUE(f.done);
  EXPECT_EQ(f.error, EINVAL);
}

TEST(RdmaNl, SysReplyGivesTheNetnsMode) {
  for (const uint8_t mode : {uint8_t{0}, uint8_t{1}}) {
    std::vector<uint8_t> buf;
    message(buf, nldev(RDMA_NLDEV_CMD_SYS_GET), 0, 2,
            attrs({nl_u8(RDMA_NLDEV_SYS_ATTR_NETNS_MODE, mode)}));
    message(buf, NLMSG_ERROR, 0, 2, error_payload(0, ""));
    NldevReply r;
    std::string why;
    ASSERT_TRUE(parse_nldev_reply(buf, 2, r, why)) << why;
    EXPECT_TRUE(r.acked);
    ASSERT_EQ(r.messages.size(), 1u);
    EXPECT_EQ(nl_get_u8(r.messages[0], RDMA_NLDEV_SYS_ATTR_NETNS_MODE), mode);
  }
  EXPECT_EQ(to_string(RdmaNetnsMode::kExclusive), "exclusive");
  EXPECT_EQ(to_string(RdmaNetnsMode::kShared), "shared");
  EXPECT_EQ(to_string(RdmaNetnsMode::kUnknown), "");
}

TEST(RdmaNl, ErrorReplyKeepsTheKernelsText) {
  std::vector<uint8_t> buf;
  message(buf, NLMSG_ERROR, NLM_F_CAPPED | NLM_F_ACK_TLVS, 3,
          error_payload(EOPNOTSUPP, "device cannot change net namespace"));
  NldevReply r;
  std::string why;
  ASSERT_TRUE(parse_nldev_reply(buf, 3, r, why)) << why;
  EXPECT_EQ(r.error, EOPNOTSUPP);
  EXPECT_FALSE(r.acked);
  EXPECT_EQ(r.error_message, "device cannot change net namespace");
  EXPECT_EQ(kernel_reason(r.error, r.error_message),
            std::string(std::strerror(EOPNOTSUPP)) + " (device cannot change net namespace)");
  // Without extended ack: the errno alone.
  std::vector<uint8_t> plain;
  message(plain, NLMSG_ERROR, 0, 3, error_payload(EPERM, ""));
  NldevReply p;
  ASSERT_TRUE(parse_nldev_reply(plain, 3, p, why));
  EXPECT_EQ(p.error, EPERM);
  EXPECT_EQ(p.error_message, "");
  EXPECT_EQ(kernel_reason(EPERM, ""), std::strerror(EPERM));
}

TEST(RdmaNl, MalformedRepliesAreRefusedNotFollowed) {
  std::string why;
  // A message length past the buffer.
  std::vector<uint8_t> buf;
  message(buf, nldev(RDMA_NLDEV_CMD_GET), 0, 1, attrs({nl_str(RDMA_NLDEV_ATTR_DEV_NAME, "x")}));
  auto longer = buf;
  longer[0] = 0xff;
  longer[1] = 0x7f;
  NldevReply r1;
  EXPECT_FALSE(parse_nldev_reply(longer, 1, r1, why));
  EXPECT_NE(why.find("malformed"), std::string::npos);
  // An attribute length past its message.
  auto attr_long = buf;
  attr_long[NLMSG_HDRLEN] = 0x40;
  NldevReply r2;
  why.clear();
  EXPECT_FALSE(parse_nldev_reply(attr_long, 1, r2, why));
  EXPECT_NE(why.find("attribute"), std::string::npos);
  // An error message too short to hold its errno.
  std::vector<uint8_t> short_err;
  message(short_err, NLMSG_ERROR, 0, 1, {0, 0});
  NldevReply r3;
  EXPECT_FALSE(parse_nldev_reply(short_err, 1, r3, why));
  // An extended-ack attribute whose length runs past the message: the error stands, no text.
  std::vector<uint8_t> bad_tlv;
  auto payload = error_payload(EINVAL, "abc");
  payload[sizeof(nlmsgerr)] = 0x7f;
  message(bad_tlv, NLMSG_ERROR, NLM_F_CAPPED | NLM_F_ACK_TLVS, 1, payload);
  NldevReply r4;
  EXPECT_TRUE(parse_nldev_reply(bad_tlv, 1, r4, why));
  EXPECT_EQ(r4.error, EINVAL);
  EXPECT_EQ(r4.error_message, "");
  // A truncated tail (less than a header) is ignored, as the kernel never sends one.
  std::vector<uint8_t> tail = buf;
  tail.resize(tail.size() + 3, 0);
  NldevReply r5;
  EXPECT_TRUE(parse_nldev_reply(tail, 1, r5, why));
  EXPECT_EQ(r5.messages.size(), 1u);
}

TEST(RdmaNl, ThisMachinesKernelAnswersOrHasNoRdmaCore) {
  const auto nl = RdmaNl::open_if_present();
  if (!nl) {
    // No RDMA core: no device, and no mode to report.
    EXPECT_TRUE(rdma_port_netdevs().empty());
    EXPECT_EQ(rdma_netns_mode_here(), RdmaNetnsMode::kUnknown);
    EXPECT_THROW(RdmaNl(), Error);
  } else {
    // The kernel answers a dump and the mode (every kernel with RDMA_NLDEV_CMD_SYS_GET says it).
    for (const auto& d : rdma_devices(*nl)) EXPECT_FALSE(d.name.empty());
    EXPECT_NE(rdma_netns_mode(*nl), RdmaNetnsMode::kUnknown);
  }
}

}  // namespace
}  // namespace gdrproxy::netns
