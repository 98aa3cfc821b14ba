// The decoder's layouts against every release's generated struct facts: the hand-decoded offsets
// (nvlayout::) are each release's, every declared field names a member each release's struct
// has, escape sizes are the sizes of their structs, and a release whose struct differs (535's
// dma-buf export) is read at its own offsets. A release that moves a member the decoder reads
// fails here, when its tables are generated, not on a node.
#include <gtest/gtest.h>

#include <string>

#include "proxy/abi/nvidia_abi.h"
#include "proxy/abi/nvidia_generated.h"
#include "proxy/abi/nvidia_layouts.h"

namespace gdrproxy::proxy {
namespace {

namespace L = nvlayout;

struct Member {
  const char* record;
  const char* field;
  uint32_t offset;  // the nvlayout:: constant the decoder and the supervisor use
};

// Every nvlayout:: offset, by the member of the driver's struct it stands for.
constexpr Member kHandDecoded[] = {
    {"NVOS21_PARAMETERS", "hRoot", L::kAllocHRoot},
    {"NVOS21_PARAMETERS", "hObjectParent", L::kAllocHParent},
    {"NVOS21_PARAMETERS", "hObjectNew", L::kAllocHObjectNew},
    {"NVOS21_PARAMETERS", "hClass", L::kAllocHClass},
    {"NVOS21_PARAMETERS", "pAllocParms", L::kAllocPAllocParms},
    {"NVOS21_PARAMETERS", "paramsSize", L::kAlloc21ParamsSize},
    {"NVOS21_PARAMETERS", "status", L::kAlloc21Status},
    {"NVOS64_PARAMETERS", "hRoot", L::kAllocHRoot},
    {"NVOS64_PARAMETERS", "hObjectParent", L::kAllocHParent},
    {"NVOS64_PARAMETERS", "hObjectNew", L::kAllocHObjectNew},
    {"NVOS64_PARAMETERS", "hClass", L::kAllocHClass},
    {"NVOS64_PARAMETERS", "pAllocParms", L::kAllocPAllocParms},
    {"NVOS64_PARAMETERS", "pRightsRequested", L::kAlloc64PRights},
    {"NVOS64_PARAMETERS", "paramsSize", L::kAlloc64ParamsSize},
    {"NVOS64_PARAMETERS", "flags", L::kAlloc64Flags},
    {"NVOS64_PARAMETERS", "status", L::kAlloc64Status},
    {"NVOS54_PARAMETERS", "hClient", L::kCtrlHClient},
    {"NVOS54_PARAMETERS", "hObject", L::kCtrlHObject},
    {"NVOS54_PARAMETERS", "cmd", L::kCtrlCmd},
    {"NVOS54_PARAMETERS", "flags", L::kCtrlFlags},
    {"NVOS54_PARAMETERS", "params", L::kCtrlParams},
    {"NVOS54_PARAMETERS", "paramsSize", L::kCtrlParamsSize},
    {"NVOS54_PARAMETERS", "status", L::kCtrlStatus},
    {"nv_ioctl_card_info_t", "valid", L::kCardValid},
    {"nv_ioctl_card_info_t", "pci_info.domain", L::kCardPciDomain},
    {"nv_ioctl_card_info_t", "pci_info.bus", L::kCardPciBus},
    {"nv_ioctl_card_info_t", "pci_info.slot", L::kCardPciSlot},
    {"nv_ioctl_card_info_t", "pci_info.function", L::kCardPciFunction},
    {"nv_ioctl_card_info_t", "pci_info.vendor_id", L::kCardVendorId},
    {"nv_ioctl_card_info_t", "pci_info.device_id", L::kCardDeviceId},
    {"nv_ioctl_card_info_t", "gpu_id", L::kCardGpuId},
    {"nv_ioctl_card_info_t", "minor_number", L::kCardMinor},
    {"nv_ioctl_rm_api_version_t", "cmd", L::kVersionCmd},
    {"nv_ioctl_rm_api_version_t", "reply", L::kVersionReply},
    {"nv_ioctl_rm_api_version_t", "versionString", L::kVersionString},
    {"NV0080_ALLOC_PARAMETERS", "deviceId", L::kDeviceAllocDeviceId},
    {"NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS", "gpuId", L::kIdInfoGpuId},
    {"NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS", "deviceInstance", L::kIdInfoDeviceInstance},
    {"nv_ioctl_xfer_t", "cmd", L::kXferCmd},
    {"nv_ioctl_xfer_t", "size", L::kXferSize},
    {"nv_ioctl_xfer_t", "ptr", L::kXferPtr},
    {"nv_ioctl_wait_open_complete_t", "rc", L::kWaitOpenRc},
};

struct Sized {
  const char* record;
  uint32_t size;
};

constexpr Sized kHandDecodedSizes[] = {
    {"NVOS21_PARAMETERS", L::kNvos21Size},
    {"NVOS64_PARAMETERS", L::kNvos64Size},
    {"nv_ioctl_card_info_t", L::kCardSize},
    {"NV0080_ALLOC_PARAMETERS", L::kDeviceAllocSize},
    {"NV0000_CTRL_GPU_GET_ID_INFO_V2_PARAMS", L::kIdInfoSize},
};

TEST(NvidiaLayouts, HandDecodedOffsetsAreEveryReleasesOwn) {
  for (const NvGenTables* t : nvidia_generated_releases()) {
    SCOPED_TRACE(std::string(t->version));
    for (const Member& m : kHandDecoded) {
      // A struct of an escape the release does not have (535 has no WAIT_OPEN_COMPLETE).
      if (!t->find_record(m.record) &&
          std::string_view(m.record) == "nv_ioctl_wait_open_complete_t" &&
          !t->find_escape(kNvEscWaitOpenComplete))
        continue;
      const NvGenField* f = t->find_field(m.record, m.field);
      ASSERT_NE(f, nullptr) << m.record << "." << m.field;
      EXPECT_EQ(f->offset, m.offset) << m.record << "." << m.field;
    }
    for (const Sized& s : kHandDecodedSizes) {
      const NvGenRecord* r = t->find_record(s.record);
      ASSERT_NE(r, nullptr) << s.record;
      EXPECT_EQ(r->size, s.size) << s.record;
    }
    const NvGenField* version = t->find_field("nv_ioctl_rm_api_version_t", "versionString");
    ASSERT_NE(version, nullptr);
    EXPECT_EQ(version->size, L::kVersionStringLen);
  }
}

// Every declared field is a member of the release's struct where the release has that member,
// and lies inside it: no release shows a field at another member's offset. Every member is
// in the 580 branch's structs (the GPU machine's), so a misspelt member fails here; older
// branches lack a few (535's NVOS46 has no flags2 or kindOverride), which are then not shown.
TEST(NvidiaLayouts, EveryDeclaredFieldResolvesInEveryRelease) {
  size_t absent = 0;
  for (const NvidiaDriverAbi* abi : nvidia_known_abis()) {
    SCOPED_TRACE(std::string(abi->version));
    const bool reference = nvidia_version_key(abi->version).front() == 580;
    for (const NvEscape& e : abi->escapes) {
      const auto specs = nv_escape_fields(e.name);
      if (specs.empty()) continue;
      const NvGenEscape* g = abi->generated->find_escape(e.nr);
      ASSERT_NE(g, nullptr);
      // The release's handler checks no struct (580.65.06's WAIT_OPEN_COMPLETE): named, its
      // fields not shown.
      if (g->record[0] == '\0') {
        EXPECT_TRUE(e.fields.empty()) << e.name;
        continue;
      }
      const auto fields = e.fields;
      if (reference) {
        EXPECT_EQ(fields.size(), specs.size()) << e.name;
      }
      absent += specs.size() - fields.size();
      for (const NvField& f : fields)
        EXPECT_LE(f.offset + nv_field_size(f.kind), e.param_size) << e.name << "." << f.name;
    }
    for (const NvUvmIoctl& u : abi->uvm_ioctls) {
      const auto specs = nv_uvm_fields(u.name);
      if (specs.empty()) continue;
      const auto fields = u.fields;
      if (reference) {
        EXPECT_EQ(fields.size(), specs.size()) << u.name;
      }
      absent += specs.size() - fields.size();
      for (const NvField& f : fields)
        EXPECT_LE(f.offset + nv_field_size(f.kind), u.param_size) << u.name << "." << f.name;
    }
  }
  std::printf("declared members other branches lack (release x member): %zu\n", absent);
}

// An escape's size is its struct's: the size the driver compares IOC_SIZE with.
TEST(NvidiaLayouts, EscapeSizesAreTheirStructs) {
  for (const NvGenTables* t : nvidia_generated_releases()) {
    SCOPED_TRACE(std::string(t->version));
    for (const NvGenEscape* e : t->escapes()) {
      if (e->record[0] == '\0' || e->elem_size != 0) continue;
      const NvGenRecord* r = t->find_record(e->record);
      ASSERT_NE(r, nullptr) << e->name;
      EXPECT_EQ(r->size, e->param_size) << e->name;
      if (e->alt_record[0] != '\0') {
        const NvGenRecord* alt = t->find_record(e->alt_record);
        ASSERT_NE(alt, nullptr) << e->name;
        EXPECT_EQ(alt->size, e->alt_param_size) << e->name;
      }
    }
  }
}

// The dma-buf export's layout is each release's own: 535 has no mappingType or bAllowMmap, so its
// arrays sit four bytes earlier.
TEST(NvidiaLayouts, DmabufExportFollowsTheRelease) {
  for (const NvidiaDriverAbi* abi : nvidia_known_abis()) {
    SCOPED_TRACE(std::string(abi->version));
    const NvDmabufLayout& l = abi->dmabuf;
    const NvEscape* e = abi->find_escape(uint8_t{kNvEscExportToDmabufFd});
    ASSERT_NE(e, nullptr);
    EXPECT_EQ(l.size, e->param_size);
    EXPECT_EQ(l.status, e->status_offset);
    EXPECT_EQ(l.fd, 0);
    EXPECT_EQ(l.max_handles, 128u);
    EXPECT_EQ(l.offsets, l.handles + 4 * 128 + (l.handles % 8 == 0 ? 0 : 4));
    EXPECT_EQ(l.sizes, l.offsets + 8 * 128);
  }
  EXPECT_EQ(nvidia_abi_for_version("535.43.02")->dmabuf.handles, 32);
  EXPECT_EQ(nvidia_abi_for_version("580.159.04")->dmabuf.handles, 36);
  EXPECT_EQ(nvidia_abi_for_version("580.159.04")->dmabuf.sizes, 1576);
}

}  // namespace
}  // namespace gdrproxy::proxy
