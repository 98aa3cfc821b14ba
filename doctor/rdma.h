// RDMA checks: uverbs ABI and device nodes against sysfs, and per rail (an RDMA-backed netdev)
// its IPv4 address, its ARP/rp_filter sysctls against gdrproxy's rail profile and its RoCE v2
// IPv4 GID index.
//
// The idea not to miss: the kernel applies the larger of net.ipv4.conf.all.<key> and
// net.ipv4.conf.<rail>.<key> for arp_ignore, arp_announce and rp_filter (arp_filter: either one
// set), so a rail's own value alone says nothing; the effective value is compared.
#pragma once

#include "doctor/context.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {

void check_rdma(const Context& ctx, Report& report);

}  // namespace gdrproxy::doctor
