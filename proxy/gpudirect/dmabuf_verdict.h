// What the mechanism found an fd a call hands the device to be (dmabuf_check.h fills it from
// /proc), and whether its exporter is allowed. A plain value with no code: the policy
// (proxy/policy/dmabuf_provenance.h) judges calls by it without linking the /proc reader.
#pragma once

#include <string>

namespace gdrproxy::proxy {

struct DmabufVerdict {
  bool allowed = false;
  std::string exporter;  // exp_name from fdinfo, if the fd is a dma-buf
  std::string reason;    // why it was refused
};

}  // namespace gdrproxy::proxy
