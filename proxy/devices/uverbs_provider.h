// Which RDMA provider serves a uverbs device node: the kernel driver of the node's IB device, read
// from sysfs (class/infiniband_verbs/<entry whose `dev` is the node's number>/device/driver).
//
// The idea not to miss: driver-namespace ids are per provider (proxy/abi/uverbs_providers.h), so
// the provider must come from the kernel, never from the tenant (the ioctl header's driver_id is
// the caller's to write and is never read). A hardware device's parent is bound to its
// provider's driver (mlx5_core, efa, ice for irdma, an auxiliary "<module>.<name>", ...). A
// software provider (rxe, siw) sits on a netdev whose own NIC driver the link may show: such a
// device can then be attributed to that NIC's provider, which names its calls wrongly and lets
// through only driver-namespace ids the software provider's kernel driver does not have (it has
// none), which the kernel refuses.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>

namespace gdrproxy::proxy {

// The provider (enum rdma_driver_id) of a kernel driver as sysfs names it ("mlx5_core",
// "irdma.gen_2"); 0 when it is not an RDMA provider's driver.
uint32_t provider_of_kernel_driver(std::string_view driver);

// The provider of the uverbs device numbered `rdev`, from `sys_root` (normally "/sys"); 0 when
// sysfs has no such device or its driver is not known.
uint32_t uverbs_provider_of(const std::string& sys_root, dev_t rdev);

}  // namespace gdrproxy::proxy
