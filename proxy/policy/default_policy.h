// The built-in policy: configs/policy/default.json, embedded at build time so the binary works
// without the source tree.
#pragma once

namespace gdrproxy::proxy {
extern const char* const kDefaultPolicyJson;
}
