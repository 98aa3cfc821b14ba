// PCI address helpers and the kernel's relative link spelling.
#include <gtest/gtest.h>

#include "sysfs/bdf.h"
#include "sysfs/kernel_link.h"

namespace gdrproxy::sysfs {
namespace {

TEST(Bdf, RecognisesKernelAddresses) {
  EXPECT_TRUE(is_bdf("0000:0c:00.0"));
  EXPECT_TRUE(is_bdf("10000:00:00.0"));  // 32-bit domains (VMD, Hyper-V)
  EXPECT_FALSE(is_bdf("pci0000:0c"));
  EXPECT_FALSE(is_bdf("0000:0c:00.8"));
  EXPECT_FALSE(is_bdf("0000:0c:00"));
  EXPECT_TRUE(is_nccl_bdf("0000:0c:00.0"));
  EXPECT_FALSE(is_nccl_bdf("10000:00:00.0"));  // NCCL's walk takes it for a CPU
  EXPECT_TRUE(is_root_complex_dir("pci0000:07"));
  EXPECT_FALSE(is_root_complex_dir("pci_bus"));
}

TEST(Bdf, FunctionAndDeviceZero) {
  EXPECT_EQ(bus_of("0000:0c:00.1"), "0000:0c");
  EXPECT_EQ(function0_of("0000:0c:00.1"), "0000:0c:00.0");
  EXPECT_EQ(device0_of("0000:0c:01.3"), "0000:0c:00.0");
  EXPECT_EQ(normalize_bdf("0C:00.0"), "0000:0c:00.0");
}

// Link strings as they appear in the captured sysfs of hwloc's 32em64t-2n8c fixture.
TEST(KernelLinks, MatchCapturedSysfs) {
  const std::string dev = "devices/pci0000:80/0000:80:02.2/0000:82:00.0";
  EXPECT_EQ(kernel_relative_link(dev + "/infiniband/mlx4_0", dev), "../../../0000:82:00.0");
  EXPECT_EQ(kernel_relative_link(dev, "bus/pci"), "../../../../bus/pci");
  EXPECT_EQ(kernel_relative_link(dev, "bus/pci/drivers/mlx4_core"),
            "../../../../bus/pci/drivers/mlx4_core");
  EXPECT_EQ(kernel_relative_link(dev + "/infiniband/mlx4_0", "class/infiniband"),
            "../../../../../../class/infiniband");
  EXPECT_EQ(kernel_relative_link("class/infiniband", dev + "/infiniband/mlx4_0"),
            "../../" + dev + "/infiniband/mlx4_0");
  EXPECT_EQ(kernel_relative_link("bus/pci/devices", dev), "../../../" + dev);
  EXPECT_EQ(kernel_relative_link("devices/pci0000:00/pci_bus/0000:00", "devices/pci0000:00"),
            "../../../pci0000:00");
}

}  // namespace
}  // namespace gdrproxy::sysfs
