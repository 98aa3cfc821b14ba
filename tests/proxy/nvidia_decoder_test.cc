// Tests of the NVIDIA decoders on byte-exact parameter buffers: every table entry decodes to its
// name, the hand-decoded escapes render their fields, results (RM status, new handles, dma-buf
// fd, UVM rmStatus) decode from the bytes copied at exit, and bad input (wrong IOC_SIZE,
// unreadable or truncated memory, absurd counts, unknown numbers) is reported, never crashes.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "proxy/abi/nvidia_generated.h"
#include "proxy/decode/nvidia_decoder.h"
#include "tests/proxy/nvidia_test_structs.h"

namespace gdrproxy::proxy {
namespace {

using namespace testing;  // NOLINT: the struct mirrors

constexpr uint64_t kArg = 0x7f0000001000;
constexpr uint64_t kInner = 0x7f0000100000;

const NvidiaDriverAbi& abi() {
  return *nvidia_abi_for_version("580.159.04");
}

std::string arg_of(const DecodedCall& c, const std::string& name) {
  for (const auto& f : c.args) {
    if (f.name == name) return f.value;
  }
  return "<absent " + name + ">";
}

std::string field_of(const std::vector<DecodedField>& fields, const std::string& name) {
  for (const auto& f : fields) {
    if (f.name == name) return f.value;
  }
  return "<absent " + name + ">";
}

std::vector<DecodedField> result_of(const DecodedCall& c, const std::vector<uint8_t>& after) {
  std::vector<DecodedField> out;
  decode_nvidia_result(c, after, {}, out);
  return out;
}

DecodedCall decode_fe(uint8_t nr, std::vector<uint8_t> params) {
  BufferMemory mem;
  const uint32_t size = static_cast<uint32_t>(params.size());
  mem.map(kArg, std::move(params));
  return decode_nvidia_frontend_ioctl(nv_iowr(nr, size), kArg, mem, abi());
}

TEST(NvidiaDecoder, EveryEscapeDecodesToItsName) {
  for (const NvEscape& e : abi().escapes) {
    SCOPED_TRACE(e.name);
    uint32_t size = e.param_size ? e.param_size : e.elem_size ? 2u * e.elem_size : 8u;
    std::vector<uint8_t> params(size, 0);
    if (e.nr == kNvEscIoctlXferCmd) {
      // Tunnel an RM_FREE through IOCTL_XFER_CMD.
      Xfer x{0x29, sizeof(Nvos00), kInner};
      params = bytes_of(x);
    }
    BufferMemory mem;
    mem.map(kArg, params);
    mem.map(kInner, std::vector<uint8_t>(sizeof(Nvos00), 0));
    const DecodedCall c = decode_nvidia_frontend_ioctl(nv_iowr(e.nr, size), kArg, mem, abi());
    EXPECT_EQ(c.device_class, DeviceClass::kNvidiaFrontend);
    EXPECT_EQ(c.cmd, nv_iowr(e.nr, size));
    EXPECT_TRUE(c.malformed.empty()) << c.malformed;
    if (e.nr == kNvEscIoctlXferCmd) {
      EXPECT_EQ(c.name, "IOCTL_XFER_CMD(RM_FREE)");
      EXPECT_EQ(c.keys.nv_escape, 0x29);
      EXPECT_EQ(c.result_regions[0].addr, kInner);
      EXPECT_EQ(c.result_regions[0].len, sizeof(Nvos00));
      continue;
    }
    EXPECT_EQ(c.name, e.name);
    EXPECT_EQ(c.keys.nv_escape, e.nr);
    if (e.param_size || e.elem_size) {
      EXPECT_EQ(c.result_regions[0].addr, kArg);
      EXPECT_EQ(c.result_regions[0].len, size);
    }
  }
}

TEST(NvidiaDecoder, RmAllocNamesEveryClassInBothForms) {
  for (const NvClass& cls : abi().classes) {
    SCOPED_TRACE(cls.name);
    // The class's own parameter size, as its callers pass it (another is malformed:
    // AnAllocationsParameterSizeIsTheClasss).
    const NvGenClass* g = abi().generated->find_class(cls.id);
    ASSERT_NE(g, nullptr);
    const uint32_t size = g->param_size > 0 ? static_cast<uint32_t>(g->param_size) : 40;
    char want[96];
    std::snprintf(want, sizeof want, "%s(0x%04x)", cls.name, cls.id);
    Nvos64 p64{};
    p64.hRoot = 0xc1d00001;
    p64.hObjectParent = 0xc1d00001;
    p64.hObjectNew = 0x5c000002;
    p64.hClass = cls.id;
    p64.pAllocParms = 0x7ffd1234;
    p64.paramsSize = size;
    const DecodedCall c = decode_fe(0x2b, bytes_of(p64));
    // A device object's parameters are read too (DeviceObjectCarriesItsDeviceInstance): none
    // are mapped here.
    const bool reads_params = cls.id == 0x80;
    EXPECT_EQ(c.name, "RM_ALLOC");
    EXPECT_EQ(c.malformed.empty(), !reads_params) << c.malformed;
    EXPECT_EQ(arg_of(c, "hClass"), want);
    EXPECT_EQ(c.keys.nv_class, cls.id);
    EXPECT_EQ(arg_of(c, "hObjectNew"), "0x5c000002");
    EXPECT_EQ(arg_of(c, "paramsSize"), std::to_string(size));

    Nvos21 p21{};
    p21.hClass = cls.id;
    p21.paramsSize = size;
    const DecodedCall c21 = decode_fe(0x2b, bytes_of(p21));
    EXPECT_EQ(c21.malformed.empty(), !reads_params) << c21.malformed;
    EXPECT_EQ(arg_of(c21, "hClass"), want);
    EXPECT_EQ(arg_of(c21, "paramsSize"), std::to_string(size));
  }
}

// The driver copies paramsSize bytes of a class's parameters; a size other than the class's (in
// the session's release) is another struct than the one judged: malformed, naming the release.
// Zero (no parameters) is the driver's to refuse.
TEST(NvidiaDecoder, AnAllocationsParameterSizeIsTheClasss) {
  Nvos64 p64{};
  p64.hClass = 0xc86f;  // HOPPER_CHANNEL_GPFIFO_A
  const NvGenClass* g = abi().generated->find_class(0xc86f);
  ASSERT_NE(g, nullptr);
  ASSERT_GT(g->param_size, 8);
  p64.paramsSize = static_cast<uint32_t>(g->param_size) - 8;
  DecodedCall c = decode_fe(0x2b, bytes_of(p64));
  EXPECT_EQ(c.malformed, "RM_ALLOC HOPPER_CHANNEL_GPFIFO_A(0xc86f) paramsSize " +
                             std::to_string(g->param_size - 8) + " is not the " +
                             std::to_string(g->param_size) +
                             " bytes of its parameters in 580.159.04's tables");
  p64.paramsSize = 0;
  c = decode_fe(0x2b, bytes_of(p64));
  EXPECT_TRUE(c.malformed.empty()) << c.malformed;
}

// A refusal's line is whole however long the control's name: the longest-named fixed-size
// control with another paramsSize (a 128-byte buffer once cut such a line mid-word).
TEST(NvidiaDecoder, AControlsWrongSizeIsSaidWholeForTheLongestName) {
  const NvGenControl* longest = nullptr;
  for (const NvGenControl* g : abi().generated->controls())
    if (g->param_size > 8 && (!longest || std::strlen(g->name) > std::strlen(longest->name)))
      longest = g;
  ASSERT_NE(longest, nullptr);
  ASSERT_GT(std::strlen(longest->name), 60u);
  Nvos54 p{};
  p.cmd = longest->cmd;
  p.paramsSize = static_cast<uint32_t>(longest->param_size) - 8;
  const DecodedCall c = decode_fe(0x2a, bytes_of(p));
  char cmd[16];
  std::snprintf(cmd, sizeof cmd, "0x%x", longest->cmd);
  EXPECT_EQ(c.malformed, std::string("RM_CONTROL ") + longest->name + "(" + cmd + ") paramsSize " +
                             std::to_string(longest->param_size - 8) + " is not the " +
                             std::to_string(longest->param_size) +
                             " bytes of its parameters in 580.159.04's tables");
}

TEST(NvidiaDecoder, RmControlNamesEveryCommand) {
  for (const NvControl& ctl : abi().controls) {
    SCOPED_TRACE(ctl.name);
    char want[128];
    std::snprintf(want, sizeof want, "%s(0x%08x)", ctl.name, ctl.cmd);
    Nvos54 p{};
    p.hClient = 0xc1d00001;
    p.hObject = 0x5c000003;
    p.cmd = ctl.cmd;
    p.params = 0x7ffd5678;
    p.paramsSize = 24;
    const DecodedCall c = decode_fe(0x2a, bytes_of(p));
    EXPECT_EQ(c.name, "RM_CONTROL");
    EXPECT_EQ(arg_of(c, "cmd"), want);
    EXPECT_EQ(arg_of(c, "paramsSize"), "24");
    EXPECT_EQ(arg_of(c, "hObject"), "0x5c000003");
    EXPECT_EQ(c.keys.nv_control, ctl.cmd);
    EXPECT_FALSE(c.keys.nv_class.has_value());
  }
}

TEST(NvidiaDecoder, EveryUvmIoctlDecodesToItsName) {
  for (const NvUvmIoctl& u : abi().uvm_ioctls) {
    SCOPED_TRACE(u.name);
    BufferMemory mem;
    mem.map(kArg, std::vector<uint8_t>(u.param_size, 0));
    const DecodedCall c = decode_nvidia_uvm_ioctl(u.cmd, kArg, mem, abi());
    EXPECT_EQ(c.device_class, DeviceClass::kNvidiaUvm);
    EXPECT_EQ(c.name, u.name);
    EXPECT_EQ(c.keys.uvm_cmd, u.cmd);
    EXPECT_TRUE(c.malformed.empty()) << c.malformed;
    EXPECT_EQ(c.result_regions[0].len, u.param_size);
    if (u.param_size) {
      EXPECT_EQ(c.result_regions[0].addr, kArg);
    }
  }
}

TEST(NvidiaDecoder, RmAllocResultShowsStatusAndNewHandle) {
  Nvos64 p{};
  p.hClass = 0x41;  // NV01_ROOT_CLIENT: the RM picks the handle
  const DecodedCall c = decode_fe(0x2b, bytes_of(p));
  EXPECT_EQ(arg_of(c, "hClass"), "NV01_ROOT_CLIENT(0x0041)");
  p.hObjectNew = 0xc1d00042;
  p.status = 0;
  auto r = result_of(c, bytes_of(p));
  EXPECT_EQ(field_of(r, "status"), "NV_OK(0x0)");
  EXPECT_EQ(field_of(r, "hObjectNew"), "0xc1d00042");
  // The older 32-byte form keeps its status at another offset.
  Nvos21 p21{};
  const DecodedCall c21 = decode_fe(0x2b, bytes_of(p21));
  p21.status = 0x1f;
  r = result_of(c21, bytes_of(p21));
  EXPECT_EQ(field_of(r, "status"), "NV_ERR_INVALID_ARGUMENT(0x1f)");
}

// A device object names its GPU by device instance, one pointer down: the instance becomes a
// policy key in both RM_ALLOC forms (and without rendering), and parameters the supervisor cannot
// read make the call malformed (denied), never an allocation of an unknown GPU.
TEST(NvidiaDecoder, DeviceObjectCarriesItsDeviceInstance) {
  for (bool v64 : {true, false}) {
    SCOPED_TRACE(v64 ? "NVOS64" : "NVOS21");
    BufferMemory mem;
    std::vector<uint8_t> params;
    if (v64) {
      Nvos64 p{};
      p.hClass = 0x80;
      p.pAllocParms = kInner;
      params = bytes_of(p);
    } else {
      Nvos21 p{};
      p.hClass = 0x80;
      p.pAllocParms = kInner;
      params = bytes_of(p);
    }
    const uint32_t size = static_cast<uint32_t>(params.size());
    mem.map(kArg, params);
    // Unmapped parameters: malformed, no instance.
    DecodedCall c =
        decode_nvidia_frontend_ioctl(nv_iowr(0x2b, size), kArg, mem, abi(), DecodeDepth::kPolicy);
    EXPECT_FALSE(c.keys.nv_device_instance);
    EXPECT_NE(c.malformed.find("RM_ALLOC(NV01_DEVICE_0) parameters at 0x7f0000100000"),
              std::string::npos)
        << c.malformed;
    std::vector<uint8_t> dev(56, 0);
    dev[0] = 3;  // deviceId
    mem.map(kInner, dev);
    c = decode_nvidia_frontend_ioctl(nv_iowr(0x2b, size), kArg, mem, abi(), DecodeDepth::kPolicy);
    EXPECT_TRUE(c.malformed.empty()) << c.malformed;
    EXPECT_EQ(c.keys.nv_device_instance, 3u);
    EXPECT_TRUE(c.args.empty());
    c = decode_nvidia_frontend_ioctl(nv_iowr(0x2b, size), kArg, mem, abi());
    EXPECT_EQ(arg_of(c, "deviceId"), "3");
  }
  // Other classes carry none and read nothing more.
  Nvos64 p{};
  p.hClass = 0x41;
  p.pAllocParms = kInner;
  const DecodedCall c = decode_fe(0x2b, bytes_of(p));
  EXPECT_TRUE(c.malformed.empty());
  EXPECT_FALSE(c.keys.nv_device_instance);
}

TEST(NvidiaDecoder, RmControlResultStatusNamedOrNumbered) {
  Nvos54 p{};
  p.cmd = 0x101;
  const DecodedCall c = decode_fe(0x2a, bytes_of(p));
  p.status = 0x1b;
  EXPECT_EQ(field_of(result_of(c, bytes_of(p)), "status"), "NV_ERR_INSUFFICIENT_PERMISSIONS(0x1b)");
  p.status = 0x12345;
  EXPECT_EQ(field_of(result_of(c, bytes_of(p)), "status"), "unknown(0x12345)");
  // Fewer bytes than the struct came back: said so, not guessed.
  auto short_copy = bytes_of(p);
  short_copy.resize(20);
  EXPECT_EQ(field_of(result_of(c, short_copy), "result"), "unreadable (20 of 32 bytes)");
}

TEST(NvidiaDecoder, RmMapMemoryFields) {
  Nvos33WithFd p{};
  p.hClient = 0xc1d00001;
  p.hDevice = 0x5c000001;
  p.hMemory = 0x5c0000aa;
  p.offset = 0x1000;
  p.length = 0x200000;
  p.flags = 0x4;
  p.fd = 17;
  const DecodedCall c = decode_fe(0x4e, bytes_of(p));
  EXPECT_EQ(c.name, "RM_MAP_MEMORY");
  EXPECT_EQ(arg_of(c, "hClient"), "0xc1d00001");
  EXPECT_EQ(arg_of(c, "hDevice"), "0x5c000001");
  EXPECT_EQ(arg_of(c, "hMemory"), "0x5c0000aa");
  EXPECT_EQ(arg_of(c, "offset"), "0x1000");
  EXPECT_EQ(arg_of(c, "length"), "0x200000");
  EXPECT_EQ(arg_of(c, "flags"), "0x4");
  EXPECT_EQ(arg_of(c, "fd"), "17");
  EXPECT_EQ(arg_of(c, "pLinearAddress"), "<absent pLinearAddress>");  // written by the driver
  p.pLinearAddress = 0x7f1234560000;
  const auto r = result_of(c, bytes_of(p));
  EXPECT_EQ(field_of(r, "status"), "NV_OK(0x0)");
  EXPECT_EQ(field_of(r, "pLinearAddress"), "0x7f1234560000");
}

TEST(NvidiaDecoder, RmFreeFields) {
  Nvos00 p{0xc1d00001, 0xc1d00001, 0x5c000007, 0};
  const DecodedCall c = decode_fe(0x29, bytes_of(p));
  EXPECT_EQ(arg_of(c, "hObjectOld"), "0x5c000007");
}

TEST(NvidiaDecoder, RegisterFdShowsControlFd) {
  const int32_t ctl_fd = 5;
  const DecodedCall c = decode_fe(201, bytes_of(ctl_fd));
  EXPECT_EQ(c.name, "REGISTER_FD");
  EXPECT_EQ(arg_of(c, "ctl_fd"), "5");
}

TEST(NvidiaDecoder, AttachGpusToFdListsIds) {
  const uint32_t ids[2] = {0x600, 0x700};
  DecodedCall c = decode_fe(212, bytes_of(ids));
  EXPECT_EQ(arg_of(c, "gpu_ids"), "[0x600,0x700]");
  std::vector<uint8_t> many(40 * 4, 0);
  c = decode_fe(212, many);
  EXPECT_NE(arg_of(c, "gpu_ids").find(",...(+8)]"), std::string::npos);
}

TEST(NvidiaDecoder, CardInfoResultListsValidCards) {
  CardInfo cards[2]{};
  const DecodedCall c = decode_fe(200, bytes_of(cards));
  EXPECT_EQ(arg_of(c, "count"), "2");
  cards[0].valid = 1;
  cards[0].domain = 0;
  cards[0].bus = 0;
  cards[0].slot = 6;
  cards[0].vendor_id = 0x10de;
  cards[0].device_id = 0x2335;
  cards[0].gpu_id = 0x600;
  cards[0].minor_number = 0;
  EXPECT_EQ(field_of(result_of(c, bytes_of(cards)), "cards"),
            "[{gpu_id=0x600 pci=0000:00:06.0 id=10de:2335 minor=0}]");
}

TEST(NvidiaDecoder, CheckVersionStrBothWays) {
  RmApiVersion v{};
  std::strcpy(v.versionString, "580.159.04");
  const DecodedCall c = decode_fe(210, bytes_of(v));
  EXPECT_EQ(arg_of(c, "cmd"), "STRICT(0x0)");
  EXPECT_EQ(arg_of(c, "versionString"), "\"580.159.04\"");
  v.reply = 1;
  EXPECT_EQ(field_of(result_of(c, bytes_of(v)), "reply"), "RECOGNIZED(1)");
  // A string without NUL and with control bytes stays bounded and printable.
  std::memset(v.versionString, 0x07, sizeof v.versionString);
  v.cmd = '2';
  const DecodedCall q = decode_fe(210, bytes_of(v));
  EXPECT_EQ(arg_of(q, "cmd"), "QUERY(0x32)");
  EXPECT_EQ(arg_of(q, "versionString"), "\"" + std::string(64, '?') + "\"");
}

TEST(NvidiaDecoder, ExportToDmabufFdFieldsAndFd) {
  ExportDmabuf p{};
  p.fd = -1;
  p.hClient = 0xc1d00001;
  p.totalObjects = 1;
  p.numObjects = 1;
  p.totalSize = 0x200000;
  p.handles[0] = 0x5c0000b0;
  p.offsets[0] = 0;
  p.sizes[0] = 0x200000;
  const DecodedCall c = decode_fe(217, bytes_of(p));
  EXPECT_EQ(c.name, "EXPORT_TO_DMABUF_FD");
  EXPECT_TRUE(c.malformed.empty()) << c.malformed;
  EXPECT_EQ(arg_of(c, "hClient"), "0xc1d00001");
  EXPECT_EQ(arg_of(c, "totalSize"), "0x200000");
  EXPECT_EQ(arg_of(c, "mappingType"), "DEFAULT(0)");
  EXPECT_EQ(arg_of(c, "objects"), "[0x5c0000b0@0x0+0x200000]");
  p.fd = 42;
  const auto r = result_of(c, bytes_of(p));
  EXPECT_EQ(field_of(r, "fd"), "42");
  EXPECT_EQ(field_of(r, "status"), "NV_OK(0x0)");

  p.numObjects = 129;
  const DecodedCall bad = decode_fe(217, bytes_of(p));
  EXPECT_NE(bad.malformed.find("numObjects 129"), std::string::npos) << bad.malformed;
}

TEST(NvidiaDecoder, UvmFieldsAndRmStatus) {
  UvmRegisterGpu p{};
  for (int i = 0; i < 16; ++i) p.gpu_uuid[i] = static_cast<uint8_t>(i);
  p.rmCtrlFd = 9;
  p.hClient = 0xc1d00001;
  BufferMemory mem;
  mem.map(kArg, bytes_of(p));
  const DecodedCall c = decode_nvidia_uvm_ioctl(37, kArg, mem, abi());
  EXPECT_EQ(c.name, "UVM_REGISTER_GPU");
  EXPECT_EQ(arg_of(c, "gpu_uuid"), "GPU-00010203-0405-0607-0809-0a0b0c0d0e0f");
  EXPECT_EQ(arg_of(c, "rmCtrlFd"), "9");
  EXPECT_EQ(arg_of(c, "hClient"), "0xc1d00001");
  p.rmStatus = 0x56;  // NV_ERR_INVALID_DEVICE? whatever its name, it is shown with the number
  p.numaNodeId = -1;
  const auto r = result_of(c, bytes_of(p));
  EXPECT_NE(field_of(r, "rmStatus").find("(0x56)"), std::string::npos);
  EXPECT_EQ(field_of(r, "numaNodeId"), "-1");

  UvmInitialize init{};
  init.flags = 0x3;
  BufferMemory m2;
  m2.map(kArg, bytes_of(init));
  const DecodedCall ci = decode_nvidia_uvm_ioctl(0x30000001, kArg, m2, abi());
  EXPECT_EQ(arg_of(ci, "flags"), "0x3");
  EXPECT_EQ(field_of(result_of(ci, bytes_of(init)), "rmStatus"), "NV_OK(0x0)");
}

TEST(NvidiaDecoder, UvmDeinitializeReadsNothing) {
  BufferMemory empty;
  const DecodedCall c = decode_nvidia_uvm_ioctl(0x30000002, 0, empty, abi());
  EXPECT_EQ(c.name, "UVM_DEINITIALIZE");
  EXPECT_TRUE(c.malformed.empty());
  EXPECT_EQ(c.result_regions[0].len, 0u);
  std::vector<DecodedField> out;
  decode_nvidia_result(c, {}, {}, out);
  EXPECT_TRUE(out.empty());
}

// ---- Bad input ----

TEST(NvidiaDecoder, SizeMismatchIsMalformed) {
  BufferMemory mem;
  mem.map(kArg, std::vector<uint8_t>(64, 0));
  DecodedCall c = decode_nvidia_frontend_ioctl(nv_iowr(0x2a, 16), kArg, mem, abi());
  EXPECT_EQ(c.name, "RM_CONTROL");
  EXPECT_NE(c.malformed.find("size 16"), std::string::npos) << c.malformed;
  EXPECT_FALSE(c.keys.nv_control.has_value());
  EXPECT_EQ(c.result_regions[0].len, 0u);
  c = decode_nvidia_frontend_ioctl(nv_iowr(0x2b, 40), kArg, mem, abi());
  EXPECT_NE(c.malformed.find("neither 48 nor 32"), std::string::npos) << c.malformed;
  c = decode_nvidia_frontend_ioctl(nv_iowr(212, 6), kArg, mem, abi());
  EXPECT_NE(c.malformed.find("multiple of 4"), std::string::npos) << c.malformed;
  c = decode_nvidia_frontend_ioctl(nv_iowr(212, 0), kArg, mem, abi());
  EXPECT_FALSE(c.malformed.empty());
}

TEST(NvidiaDecoder, UnreadableAndTruncatedMemoryIsMalformed) {
  BufferMemory empty;
  DecodedCall c = decode_nvidia_frontend_ioctl(nv_iowr(0x2a, 32), kArg, empty, abi());
  EXPECT_NE(c.malformed.find("unreadable"), std::string::npos) << c.malformed;
  EXPECT_EQ(c.keys.nv_escape, 0x2a);
  BufferMemory truncated;
  truncated.map(kArg, std::vector<uint8_t>(31, 0));  // one byte short of NVOS54
  c = decode_nvidia_frontend_ioctl(nv_iowr(0x2a, 32), kArg, truncated, abi());
  EXPECT_NE(c.malformed.find("unreadable"), std::string::npos) << c.malformed;
  c = decode_nvidia_uvm_ioctl(37, kArg, truncated, abi());
  EXPECT_NE(c.malformed.find("UVM_REGISTER_GPU"), std::string::npos) << c.malformed;
}

TEST(NvidiaDecoder, UnknownNumbersAreNamedUnknownNotMalformed) {
  BufferMemory mem;
  mem.map(kArg, std::vector<uint8_t>(64, 0));
  DecodedCall c = decode_nvidia_frontend_ioctl(nv_iowr(0x99, 8), kArg, mem, abi());
  EXPECT_EQ(c.name, "ESC_0x99(unknown)");
  EXPECT_TRUE(c.malformed.empty());
  EXPECT_EQ(c.keys.nv_escape, 0x99);
  c = decode_nvidia_uvm_ioctl(0x4242, kArg, mem, abi());
  EXPECT_EQ(c.name, "UVM_0x4242(unknown)");
  EXPECT_TRUE(c.malformed.empty());
  EXPECT_EQ(c.keys.uvm_cmd, 0x4242u);

  Nvos64 alloc{};
  alloc.hClass = 0xbeef;
  c = decode_fe(0x2b, bytes_of(alloc));
  EXPECT_EQ(arg_of(c, "hClass"), "unknown(0xbeef)");
  EXPECT_EQ(c.keys.nv_class, 0xbeefu);
  Nvos54 ctl{};
  // Neither exported nor forwarded (no GSS legacy bit) by the release.
  ctl.cmd = 0x20800fff;
  c = decode_fe(0x2a, bytes_of(ctl));
  EXPECT_EQ(arg_of(c, "cmd"), "unknown(0x20800fff)");
  EXPECT_EQ(c.keys.nv_control, 0x20800fffu);
}

TEST(NvidiaDecoder, ForeignTypeByteIsShownButDecodedByNumber) {
  BufferMemory mem;
  mem.map(kArg, std::vector<uint8_t>(16, 0));
  const uint32_t cmd = (nv_iowr(0x29, 16) & ~0xff00u) | (0x47u << 8);
  const DecodedCall c = decode_nvidia_frontend_ioctl(cmd, kArg, mem, abi());
  EXPECT_EQ(c.name, "RM_FREE");
  EXPECT_EQ(arg_of(c, "ioc_type"), "0x47");
}

TEST(NvidiaDecoder, XferCmdBadShapes) {
  BufferMemory mem;
  // Inner size beyond the driver's limit.
  mem.map(kArg, bytes_of(Xfer{0x2a, 20000, kInner}));
  DecodedCall c = decode_nvidia_frontend_ioctl(nv_iowr(211, 16), kArg, mem, abi());
  EXPECT_NE(c.malformed.find("exceeds"), std::string::npos) << c.malformed;
  // XFER inside XFER.
  BufferMemory nested;
  nested.map(kArg, bytes_of(Xfer{211, 16, kInner}));
  nested.map(kInner, bytes_of(Xfer{0x2a, 32, kArg}));
  c = decode_nvidia_frontend_ioctl(nv_iowr(211, 16), kArg, nested, abi());
  EXPECT_NE(c.malformed.find("nested"), std::string::npos) << c.malformed;
  // The tunnelled parameters are unreadable.
  BufferMemory dangling;
  dangling.map(kArg, bytes_of(Xfer{0x2a, 32, kInner}));
  c = decode_nvidia_frontend_ioctl(nv_iowr(211, 16), kArg, dangling, abi());
  EXPECT_EQ(c.name, "IOCTL_XFER_CMD(RM_CONTROL)");
  EXPECT_NE(c.malformed.find("unreadable"), std::string::npos) << c.malformed;
  // Wrong outer size, and an unreadable header.
  c = decode_nvidia_frontend_ioctl(nv_iowr(211, 8), kArg, dangling, abi());
  EXPECT_FALSE(c.malformed.empty());
  BufferMemory none;
  c = decode_nvidia_frontend_ioctl(nv_iowr(211, 16), kArg, none, abi());
  EXPECT_NE(c.malformed.find("unreadable"), std::string::npos) << c.malformed;
  // A tunnelled number beyond any escape.
  BufferMemory big;
  big.map(kArg, bytes_of(Xfer{0x1234, 8, kInner}));
  c = decode_nvidia_frontend_ioctl(nv_iowr(211, 16), kArg, big, abi());
  EXPECT_EQ(c.name, "IOCTL_XFER_CMD(ESC_0x1234(unknown))");
}

TEST(NvidiaDecoder, ResultOfForeignCallIsIgnored) {
  DecodedCall c;  // not from an NVIDIA decoder
  c.result_hints = {7, 7, 7, 7};
  std::vector<DecodedField> out;
  const std::vector<uint8_t> bytes(64, 0xff);
  decode_nvidia_result(c, bytes, {}, out);
  EXPECT_TRUE(out.empty());
}

}  // namespace
}  // namespace gdrproxy::proxy
