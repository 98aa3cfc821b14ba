// The uverbs decoder against byte-exact buffers: every table entry decodes to its name, attribute
// kinds are read as declared, results are read back from where the kernel writes them, and bad
// input is reported, never crashed on.
#include <gtest/gtest.h>
#include <rdma/ib_user_ioctl_verbs.h>
#include <rdma/ib_user_verbs.h>
#include <rdma/mlx5_user_ioctl_cmds.h>

#include "proxy/abi/uverbs_abi.h"
#include "proxy/abi/uverbs_providers.h"
#include "proxy/abi/uverbs_uapi_newer.h"
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
  VerbsBuffer{0x1003, 0x1009}.map_into(mem);
  // Under mlx5, object 0x1003 is its flow matcher, which has no method 0x1009.
  EXPECT_EQ(
      decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem, DecodeDepth::kFull, RDMA_DRIVER_MLX5)
          .name,
      "MLX5_FLOW_MATCHER.DRIVER_METHOD_0x1009");
  // Without the device's provider a driver-namespace id means nothing: it stays a number.
  DecodedCall c = decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem);
  EXPECT_EQ(c.name, "DRIVER_OBJ_0x1003.DRIVER_METHOD_0x1009");
  EXPECT_FALSE(c.keys.uverbs_provider);
  BufferMemory mem2;
  VerbsBuffer{UVERBS_OBJECT_PD, 9}.map_into(mem2);
  EXPECT_EQ(decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem2).name, "PD.METHOD_0x9");
}

DecodedCall decode_under(uint32_t provider, const VerbsBuffer& b) {
  BufferMemory mem;
  b.map_into(mem);
  return decode_uverbs_ioctl(uverbs::kVerbsIoctl, kHdrAddr, mem, DecodeDepth::kFull, provider);
}

TEST(UverbsDecoder, EveryProvidersMethodsDecodeByNameUnderThatProvider) {
  size_t with_methods = 0;
  for (const auto& p : uverbs::all_providers()) {
    with_methods += !p.methods.empty();
    for (const auto& m : p.methods) {
      DecodedCall c = decode_under(p.driver_id, VerbsBuffer{m.object, m.method});
      const auto* o = uverbs::find_object(p.driver_id, m.object);
      ASSERT_NE(o, nullptr) << p.name << " " << m.name;
      EXPECT_EQ(c.name, std::string(o->name) + "." + m.name) << p.name;
      EXPECT_TRUE(c.malformed.empty()) << m.name << ": " << c.malformed;
      EXPECT_EQ(c.keys.uverbs_provider, p.driver_id);
      EXPECT_EQ(c.keys.uverbs_object, m.object);
      EXPECT_EQ(c.keys.uverbs_method, m.method);
    }
  }
  EXPECT_EQ(with_methods, 3u);  // mlx5, bnxt_re, efa: the uapi headers' driver namespaces
  for (const char* name : {"mlx5", "mlx4", "efa", "irdma", "bnxt_re", "mana", "erdma", "hns",
                           "qedr", "vmw_pvrdma", "siw", "rxe", "ionic"})
    EXPECT_NE(uverbs::find_provider(std::string_view(name)), nullptr) << name;
}

TEST(UverbsDecoder, TheSameDriverIdsNameDifferentCallsUnderDifferentProviders) {
  const VerbsBuffer b{0x1000, 0x1000};
  EXPECT_EQ(decode_under(RDMA_DRIVER_MLX5, b).name, "MLX5_DEVX.MLX5_DEVX_OTHER");
  EXPECT_EQ(decode_under(RDMA_DRIVER_BNXT_RE, b).name, "BNXT_RE_ALLOC_PAGE.BNXT_RE_ALLOC_PAGE");
  EXPECT_EQ(decode_under(RDMA_DRIVER_IRDMA, b).name, "DRIVER_OBJ_0x1000.DRIVER_METHOD_0x1000");
  EXPECT_EQ(decode_under(uverbs::kProviderUnknown, b).name,
            "DRIVER_OBJ_0x1000.DRIVER_METHOD_0x1000");
  // A driver method on a core object: EFA's MR query is nothing of mlx5's.
  const VerbsBuffer mr{UVERBS_OBJECT_MR, 0x1000};
  EXPECT_EQ(decode_under(RDMA_DRIVER_EFA, mr).name, "MR.EFA_MR_QUERY");
  EXPECT_EQ(decode_under(RDMA_DRIVER_MLX5, mr).name, "MR.DRIVER_METHOD_0x1000");
  // Core ids mean the same under every provider.
  EXPECT_EQ(
      decode_under(RDMA_DRIVER_EFA, VerbsBuffer{UVERBS_OBJECT_MR, UVERBS_METHOD_QUERY_MR}).name,
      "MR.QUERY_MR");
}

TEST(UverbsDecoder, ProviderAttributesAreNamedAndShownUninterpreted) {
  // mlx5 adds uar_index to CQ.CREATE_CQ (UVERBS_ID_DRIVER_NS_WITH_UHW); bnxt_re gives that id
  // no meaning on a CQ, but its own dbr handle on a QP.
  VerbsBuffer cq{UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE};
  cq.attr(0x1002, 4, 5);
  EXPECT_EQ(arg(decode_under(RDMA_DRIVER_MLX5, cq), "mlx5_uar_index"), "len=4 data=0x5");
  EXPECT_EQ(arg(decode_under(RDMA_DRIVER_BNXT_RE, cq), "attr_0x1002"), "len=4 data=0x5");
  VerbsBuffer qp{UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE};
  qp.attr(0x1002, 8, 7);
  EXPECT_EQ(arg(decode_under(RDMA_DRIVER_BNXT_RE, qp), "bnxt_re_dbr_handle"), "len=8 data=0x7");
  // A provider method's own attributes, and the common driver_in.
  VerbsBuffer q{UVERBS_OBJECT_MR, 0x1000};
  q.attr(0x1000, 4, 3).attr(0x1001, 2, 0x20000);
  DecodedCall c = decode_under(RDMA_DRIVER_EFA, q);
  EXPECT_EQ(arg(c, "mr"), "len=4 data=0x3");
  EXPECT_EQ(arg(c, "ic_id_validity"), "len=2 data=0x20000");
}

TEST(UverbsDecoder, Mlx5UmemDmabufIsCheckedLikeRegDmabufMr) {
  // DEVX_UMEM_REG can register a dma-buf: its fd is a key the provenance check reads.
  VerbsBuffer b{MLX5_IB_OBJECT_DEVX_UMEM, MLX5_IB_METHOD_DEVX_UMEM_REG};
  b.attr(MLX5_IB_ATTR_DEVX_UMEM_REG_HANDLE, 0, 0).attr(MLX5_IB_ATTR_DEVX_UMEM_REG_DMABUF_FD, 4, 17);
  DecodedCall c = decode_under(RDMA_DRIVER_MLX5, b);
  EXPECT_EQ(c.name, "MLX5_DEVX_UMEM.MLX5_DEVX_UMEM_REG");
  EXPECT_EQ(c.keys.dmabuf_fd, 17);
  EXPECT_EQ(arg(c, "dmabuf_fd"), "17");
  // The new UMEM's handle is read back from the attribute array.
  VerbsBuffer after = b;
  after.attrs[0].data = 4;
  std::vector<DecodedField> out;
  decode_uverbs_result(c, after.bytes(), {}, out);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "handle");
  EXPECT_EQ(out[0].value, "4");
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

namespace gdrproxy::proxy {
namespace {

namespace nw = uverbs::newer;

DecodedCall decode_with(const VerbsBuffer& b, BufferMemory& mem) {
  b.map_into(mem);
  return decode_uverbs_ioctl(uverbs::kVerbsIoctl, testing::kHdrAddr, mem, DecodeDepth::kFull,
                             RDMA_DRIVER_RXE);
}

TEST(UverbsDecoderNewer, VerbsOfNewerKernelsNameTheirDmabufsForTheProvenanceCheck) {
  BufferMemory mem;
  VerbsBuffer reg{UVERBS_OBJECT_MR, nw::kMethodRegMr};
  reg.attr(nw::kAttrRegMrHandle, 0, 0).attr(nw::kAttrRegMrFd, 4, 21);
  DecodedCall c = decode_with(reg, mem);
  EXPECT_EQ(c.name, "MR.REG_MR");
  EXPECT_EQ(c.keys.dmabuf_fd, 21);
  EXPECT_FALSE(c.keys.uverbs_unjudged_attr);

  VerbsBuffer cq{UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE};
  cq.attr(nw::kAttrCreateCqBufferFd, 4, 22);
  EXPECT_EQ(decode_with(cq, mem).keys.dmabuf_fd, 22);

  // Two buffer descriptors: a dma-buf each, both checked; a VA one names none.
  uint8_t sq[nw::kBufferDescSize] = {}, rq[nw::kBufferDescSize] = {}, va[nw::kBufferDescSize] = {};
  const int32_t a = 23, b = 24;
  const uint32_t type_va = 1;
  std::memcpy(sq + nw::kBufferDescFdOffset, &a, 4);
  std::memcpy(rq + nw::kBufferDescFdOffset, &b, 4);
  std::memcpy(va, &type_va, 4);
  mem.map(0x30000, std::vector<uint8_t>(sq, sq + sizeof sq));
  mem.map(0x31000, std::vector<uint8_t>(rq, rq + sizeof rq));
  mem.map(0x32000, std::vector<uint8_t>(va, va + sizeof va));
  VerbsBuffer qp{UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE};
  qp.attr(nw::kAttrCreateQpSqBufUmem, nw::kBufferDescSize, 0x30000)
      .attr(nw::kAttrCreateQpRqBufUmem, nw::kBufferDescSize, 0x31000)
      .attr(nw::kAttrCreateQpBufUmem, nw::kBufferDescSize, 0x32000);
  c = decode_with(qp, mem);
  EXPECT_EQ(c.malformed, "");
  EXPECT_EQ(c.keys.dmabuf_fd, 23);
  EXPECT_EQ(c.keys.dmabuf_fd2, 24);
  EXPECT_EQ(arg(c, "buf_umem"), "type 1");
  // A third dma-buf in one call is refused as malformed; so is a descriptor of another size.
  mem.map(0x33000, std::vector<uint8_t>(sq, sq + sizeof sq));
  std::memcpy(sq + nw::kBufferDescFdOffset, &type_va, 4);  // fd 1
  mem.map(0x33000, std::vector<uint8_t>(sq, sq + sizeof sq));
  VerbsBuffer three = qp;
  three.attrs[2].data = 0x33000;
  EXPECT_EQ(decode_with(three, mem).malformed, "more than two dma-buf fds in one call");
  VerbsBuffer short_desc{UVERBS_OBJECT_QP, UVERBS_METHOD_QP_CREATE};
  short_desc.attr(nw::kAttrCreateQpBufUmem, 8, 0x30000);
  EXPECT_NE(decode_with(short_desc, mem).malformed.find("not a readable buffer descriptor"),
            std::string::npos);
}

TEST(UverbsDecoderNewer, CapabilityFdsAndUnnamedCoreAttributesCannotBeJudged) {
  BufferMemory mem;
  VerbsBuffer ctx{UVERBS_OBJECT_DEVICE, UVERBS_METHOD_GET_CONTEXT};
  ctx.attr(nw::kAttrGetContextFdArr, 8, testing::kDataAddr);
  DecodedCall c = decode_with(ctx, mem);
  EXPECT_EQ(c.keys.uverbs_unjudged_attr, nw::kAttrGetContextFdArr);
  EXPECT_EQ(arg(c, "capability_fds"), "[2 fds]");
  VerbsBuffer cq{UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE};
  cq.attr(0x7ff, 4, 1);
  EXPECT_EQ(decode_with(cq, mem).keys.uverbs_unjudged_attr, 0x7ff);
  // A driver-namespace attribute is the provider's: shown, not judged here.
  VerbsBuffer drv{UVERBS_OBJECT_CQ, UVERBS_METHOD_CQ_CREATE};
  drv.attr(0x1009, 4, 1);
  EXPECT_FALSE(decode_with(drv, mem).keys.uverbs_unjudged_attr);
  // The newer objects and methods have names.
  EXPECT_EQ(decode_with(VerbsBuffer{nw::kObjectDmah, nw::kMethodDmahAlloc}, mem).name,
            "DMAH.ALLOC_DMAH");
  EXPECT_EQ(decode_with(VerbsBuffer{nw::kObjectDmabuf, nw::kMethodDmabufAlloc}, mem).name,
            "DMABUF.ALLOC_DMABUF");
  EXPECT_EQ(decode_with(VerbsBuffer{UVERBS_OBJECT_DEVICE, nw::kMethodQueryPortSpeed}, mem).name,
            "DEVICE.QUERY_PORT_SPEED");
}

}  // namespace
}  // namespace gdrproxy::proxy
