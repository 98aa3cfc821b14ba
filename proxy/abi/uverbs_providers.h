// The RDMA providers' driver-namespace uverbs ABI as data: per provider (keyed by the kernel's
// `enum rdma_driver_id`), its own objects, its methods (on its objects or on core ones) and the
// driver attributes it adds to core methods.
//
// The idea not to miss: ids at or above UVERBS_ID_NS_SPECIFIC (1 << 12) are per provider and
// collide between providers (mlx5's DEVX.DEVX_OTHER and bnxt_re's ALLOC_PAGE.ALLOC_PAGE are both
// object 0x1000, method 0x1000). A driver-namespace id has a name only when the provider that
// serves the device is known; without it, it stays a number.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

#include "proxy/abi/uverbs_abi.h"

namespace gdrproxy::proxy::uverbs {

// RDMA_DRIVER_UNKNOWN: the device's provider was not found.
inline constexpr uint32_t kProviderUnknown = 0;
// enum rdma_driver_id values newer than some distributions' headers (the kernel's
// include/uapi/rdma/ib_user_ioctl_verbs.h: ..., RDMA_DRIVER_ERDMA, RDMA_DRIVER_MANA,
// RDMA_DRIVER_IONIC).
inline constexpr uint32_t kRdmaDriverMana = 20;
inline constexpr uint32_t kRdmaDriverIonic = 21;

// Driver attributes a provider adds to a core method (e.g. mlx5's CQ.CREATE_CQ uar_index).
struct DriverAttrs {
  uint16_t object;
  uint16_t method;
  std::span<const AttrSpec> attrs;
};

struct ProviderSpec {
  uint32_t driver_id;  // enum rdma_driver_id
  const char* name;    // rdma-core's provider and the kernel's uapi header, e.g. "efa"
  std::span<const ObjectSpec> objects;
  // Methods in the driver namespace, on the provider's objects or on core objects. A method's
  // `issued_by_library` says whether rdma-core's providers/<name>/ calls it.
  std::span<const MethodSpec> methods;
  std::span<const DriverAttrs> driver_attrs;
};

std::span<const ProviderSpec> all_providers();
const ProviderSpec* find_provider(uint32_t driver_id);
const ProviderSpec* find_provider(std::string_view name);

// Core first, then (for driver-namespace ids) the provider's own; nullptr when neither names it.
const ObjectSpec* find_object(uint32_t provider, uint16_t id);
const MethodSpec* find_method(uint32_t provider, uint16_t object, uint16_t method);
// A provider's method whatever its provider (policy rules written by name): the method named
// `name` on `object` of some provider, which is returned in `owner`.
const MethodSpec* find_provider_method(uint16_t object, std::string_view name,
                                       const ProviderSpec** owner);
// A provider's object by its name ("MLX5_DEVX_OBJ"), with its provider in `owner`.
const ObjectSpec* find_provider_object(std::string_view name, const ProviderSpec** owner);
// A driver attribute the provider adds to a core method.
const AttrSpec* find_driver_attr(uint32_t provider, uint16_t object, uint16_t method,
                                 uint16_t attr);

}  // namespace gdrproxy::proxy::uverbs
