// The uverbs decoder against byte-exact buffers: every table entry decodes to its name, attribute
// kinds are read as declared, results are read back from where the kernel writes them, and bad
// input is reported, never crashed on.
#include <gtest/gtest.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>

#include "proxy/abi/uverbs_abi.h"
#include "proxy/decode/uverbs_decoder.h"
#include "tests/proxy/verbs_buffer.h"

namespace gdrproxy::proxy {
namespace {

using testing::kDataAddr;
using testing::kHdrAddr;
using testing::VerbsBuffer;

std::string arg(const DecodedCall& c, const std::string& name) {
  for (const auto& a : c.args)
    if (a.name == name) return a.value;
  return "<absent>";
}

TEST(UverbsDecoder, EveryMethodInTheTablesDecodesToItsName) {
  ASSERT_GT(uverbs::all_methods().size(), 30u);
  for (const auto& m : uverbs::all_methods()) {
    if (m.object == UVERBS_OBJECT_DEVICE && m.method == UVERBS_METHOD_INVOKE_WRITE) continue;
    BufferMemory mem;
    VerbsBuffer{m.object, m.method}.map_into(mem);
    DecodedCall c = decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem);
    const std::string want = std::string(uverbs::find_object(m.object)->name) + "." + m.name;
    EXPECT_EQ(c.name, want);
    EXPECT_TRUE(c.malformed.empty()) << want << ": " << c.malformed;
    EXPECT_EQ(c.keys.uverbs_object, m.object);
    EXPECT_EQ(c.keys.uverbs_method, m.method);
  }
}

TEST(UverbsDecoder, EveryWriteCommandDecodesToItsNameThroughInvokeWrite) {
  for (const auto& w : uverbs::all_write_cmds()) {
    BufferMemory mem;
    std::vector<uint8_t> core_in(128, 0);
    mem.map(kDataAddr, core_in);
    VerbsBuffer b{UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE};
    b.attr(UVERBS_ATTR_CORE_IN, 128, kDataAddr).attr(UVERBS_ATTR_WRITE_CMD, 4, w.cmd);
    b.map_into(mem);
    DecodedCall c = decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem);
    EXPECT_EQ(c.name, std::string("INVOKE_WRITE(") + w.name + ")");
    EXPECT_EQ(c.keys.uverbs_write_cmd, w.cmd);
    EXPECT_TRUE(c.malformed.empty()) << c.malformed;
  }
}

TEST(UverbsDecoder, RegMrFieldsComeFromTheCoreInStruct) {
  ib_uverbs_reg_mr mr{};
  mr.start = 0x7f0000001000;
  mr.length = 65536;
  mr.hca_va = 0x7f0000001000;
  mr.pd_handle = 7;
  mr.access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE | IB_UVERBS_ACCESS_REMOTE_WRITE;
  BufferMemory mem;
  mem.map(kDataAddr, testing::bytes_of(mr));
  VerbsBuffer b{UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE};
  b.attr(UVERBS_ATTR_CORE_IN, sizeof mr, kDataAddr)
      .attr(UVERBS_ATTR_CORE_OUT, sizeof(ib_uverbs_reg_mr_resp), 0x30000)
      .attr(UVERBS_ATTR_WRITE_CMD, 4, IB_USER_VERBS_CMD_REG_MR);
  b.map_into(mem);
  DecodedCall c = decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem);
  EXPECT_EQ(c.name, "INVOKE_WRITE(REG_MR)");
  EXPECT_EQ(arg(c, "start"), "0x7f0000001000");
  EXPECT_EQ(arg(c, "length"), "65536");
  EXPECT_EQ(arg(c, "pd_handle"), "7");
  EXPECT_EQ(arg(c, "access_flags"), "LOCAL_WRITE|REMOTE_WRITE");
  EXPECT_EQ(c.result_regions[1].addr, 0x30000u);

  ib_uverbs_reg_mr_resp resp{};
  resp.mr_handle = 3;
  resp.lkey = 0x1234;
  resp.rkey = 0x5678;
  const auto r1 = testing::bytes_of(resp);
  std::vector<DecodedField> out;
  decode_uverbs_result(c, b.bytes(), r1, out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].name, "mr_handle");
  EXPECT_EQ(out[0].value, "3");
  EXPECT_EQ(out[1].value, "0x1234");
}

TEST(UverbsDecoder, RegMrSentAsWriteDecodesLikeItsInvokeWrite) {
  // write(fd, {struct ib_uverbs_cmd_hdr; struct ib_uverbs_reg_mr}, n): the legacy encoding.
  struct {
    ib_uverbs_cmd_hdr hdr;
    ib_uverbs_reg_mr mr;
  } w{};
  w.hdr.command = IB_USER_VERBS_CMD_REG_MR;
  w.hdr.in_words = sizeof w / 4;
  w.hdr.out_words = sizeof(ib_uverbs_reg_mr_resp) / 4;
  w.mr.start = 0x7f0000001000;
  w.mr.length = 4096;
  w.mr.pd_handle = 2;
  w.mr.access_flags = IB_UVERBS_ACCESS_LOCAL_WRITE;
  BufferMemory mem;
  mem.map(kDataAddr, testing::bytes_of(w));
  DecodedCall c = decode_uverbs_write(kDataAddr, sizeof w, mem);
  EXPECT_EQ(c.name, "WRITE(REG_MR)");
  EXPECT_TRUE(c.malformed.empty()) << c.malformed;
  ASSERT_TRUE(c.keys.uverbs_write_cmd);
  EXPECT_EQ(*c.keys.uverbs_write_cmd, uint32_t{IB_USER_VERBS_CMD_REG_MR});
  EXPECT_EQ(arg(c, "length"), "4096");
  EXPECT_EQ(arg(c, "access_flags"), "LOCAL_WRITE");
  // Short and unreadable writes are malformed, never thrown.
  EXPECT_FALSE(decode_uverbs_write(kDataAddr, 4, mem).malformed.empty());
  EXPECT_FALSE(decode_uverbs_write(0xdead0000, 64, mem).malformed.empty());
}

TEST(UverbsDecoder, RegDmabufMrShowsFdOffsetLengthIovaAccessAndNewHandle) {
  BufferMemory mem;
  VerbsBuffer b{UVERBS_OBJECT_MR, UVERBS_METHOD_REG_DMABUF_MR};
  b.attr(UVERBS_ATTR_REG_DMABUF_MR_HANDLE, 0, 0)
      .attr(UVERBS_ATTR_REG_DMABUF_MR_PD_HANDLE, 0, 5)
      .attr(UVERBS_ATTR_REG_DMABUF_MR_OFFSET, 8, 4096)
      .attr(UVERBS_ATTR_REG_DMABUF_MR_LENGTH, 8, 2 << 20)
      .attr(UVERBS_ATTR_REG_DMABUF_MR_IOVA, 8, 0x10000000)
      .attr(UVERBS_ATTR_REG_DMABUF_MR_FD, 4, 42)
      .attr(UVERBS_ATTR_REG_DMABUF_MR_ACCESS_FLAGS, 4, IB_UVERBS_ACCESS_REMOTE_READ)
      .attr(UVERBS_ATTR_REG_DMABUF_MR_RESP_LKEY, 4, 0x40000);
  b.map_into(mem);
  DecodedCall c = decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem);
  EXPECT_EQ(c.name, "MR.REG_DMABUF_MR");
  EXPECT_EQ(arg(c, "pd"), "5");
  EXPECT_EQ(arg(c, "offset"), "4096");
  EXPECT_EQ(arg(c, "length"), "2097152");
  EXPECT_EQ(arg(c, "fd"), "42");
  EXPECT_EQ(arg(c, "access"), "REMOTE_READ");
  // After the call the kernel has written the new MR handle into the attribute's data word.
  VerbsBuffer after = b;
  after.attrs[0].data = 9;
  uint32_t lkey = 0xabc;
  std::vector<DecodedField> out;
  decode_uverbs_result(c, after.bytes(), testing::bytes_of(lkey), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].name, "mr");
  EXPECT_EQ(out[0].value, "9");
  EXPECT_EQ(out[1].name, "lkey");
  EXPECT_EQ(out[1].value, std::to_string(0xabc));
}

TEST(UverbsDecoder, LargeScalarIsReadThroughItsPointerNotTakenInline) {
  BufferMemory mem;
  uint64_t cqe = 1024;  // a 16-byte attribute: the data word is a pointer
  std::vector<uint8_t> buf(16, 0);
  std::memcpy(buf.data(), &cqe, 8);
  mem.map(kDataAddr, buf);
  VerbsBuffer b{UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE};
  b.attr(UVERBS_ATTR_CREATE_CQ_CQE, 16, kDataAddr);
  b.map_into(mem);
  EXPECT_EQ(arg(decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem), "cqe"), "1024");
}

TEST(UverbsDecoder, ModifyQpShowsTargetStateAndMask) {
  ib_uverbs_modify_qp mq{};
  mq.qp_handle = 4;
  mq.qp_state = 3;
  mq.attr_mask = 1 | (1 << 16);
  BufferMemory mem;
  mem.map(kDataAddr, testing::bytes_of(mq));
  VerbsBuffer b{UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE};
  b.attr(UVERBS_ATTR_CORE_IN, sizeof mq, kDataAddr)
      .attr(UVERBS_ATTR_WRITE_CMD, 4, IB_USER_VERBS_CMD_MODIFY_QP);
  b.map_into(mem);
  DecodedCall c = decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem);
  EXPECT_EQ(arg(c, "qp_state"), "RTS");
  EXPECT_EQ(arg(c, "attr_mask"), "STATE|SQ_PSN");
}

TEST(UverbsDecoder, UnknownAndDriverMethodsAreNamedByNumber) {
  BufferMemory mem;
  VerbsBuffer{0x1003, 0x1001}.map_into(mem);
  DecodedCall c = decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem);
  EXPECT_EQ(c.name, "MLX5_FLOW_MATCHER.DRIVER_METHOD_0x1001");
  BufferMemory mem2;
  VerbsBuffer{UVERBS_OBJECT_PD, 9}.map_into(mem2);
  EXPECT_EQ(decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem2).name, "PD.METHOD_0x9");
}

TEST(UverbsDecoder, BadInputIsReportedNotTrusted) {
  {
    BufferMemory empty;
    DecodedCall c = decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, empty);
    EXPECT_NE(c.malformed.find("header unreadable"), std::string::npos);
  }
  {
    BufferMemory mem;
    VerbsBuffer b{UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY};
    b.attr(UVERBS_ATTR_DESTROY_PD_HANDLE, 0, 1);
    b.length_fix = 16;
    b.map_into(mem);
    EXPECT_NE(decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem).malformed.find("disagrees"),
              std::string::npos);
  }
  {
    BufferMemory mem;
    VerbsBuffer b{UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY};
    b.num_attrs_fix = 60000;
    b.map_into(mem);
    EXPECT_NE(decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem).malformed.find("absurd"),
              std::string::npos);
  }
  {
    // Header claims 3 attributes but the memory ends after one (truncated).
    BufferMemory mem;
    VerbsBuffer b{UVERBS_OBJECT_PD, UVERBS_METHOD_PD_DESTROY};
    b.attr(UVERBS_ATTR_DESTROY_PD_HANDLE, 0, 1);
    auto bytes = b.bytes();
    ib_uverbs_ioctl_hdr h;
    std::memcpy(&h, bytes.data(), sizeof h);
    h.num_attrs = 3;
    h.length = sizeof h + 3 * sizeof(ib_uverbs_attr);
    std::memcpy(bytes.data(), &h, sizeof h);
    mem.map(kHdrAddr, bytes);
    EXPECT_NE(decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem)
                  .malformed.find("attributes unreadable"),
              std::string::npos);
  }
  {
    // INVOKE_WRITE whose core_in pointer is unmapped.
    BufferMemory mem;
    VerbsBuffer b{UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE};
    b.attr(UVERBS_ATTR_CORE_IN, 64, 0xdead0000)
        .attr(UVERBS_ATTR_WRITE_CMD, 4, IB_USER_VERBS_CMD_REG_MR);
    b.map_into(mem);
    EXPECT_NE(decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem).malformed.find("unreadable"),
              std::string::npos);
  }
  {
    BufferMemory mem;
    VerbsBuffer{UVERBS_OBJECT_DEVICE, UVERBS_METHOD_INVOKE_WRITE}.map_into(mem);
    EXPECT_NE(decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem).malformed.find("WRITE_CMD"),
              std::string::npos);
  }
}

TEST(UverbsDecoder, OtherUverbsIoctlNumbersAreNamedNotParsed) {
  BufferMemory mem;
  DecodedCall c = decode_uverbs_ioctl(0xc0101b02, kHdrAddr, mem);
  EXPECT_EQ(c.name, "UVERBS_IOCTL_0xc0101b02");
  EXPECT_TRUE(c.malformed.empty());
}

}  // namespace
}  // namespace gdrproxy::proxy
