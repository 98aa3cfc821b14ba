// Implementation of the kernel's relative link spelling; see kernel_link.h.
#include "sysfs/kernel_link.h"

#include <vector>

namespace gdrproxy::sysfs {

static std::vector<std::string_view> split_path(std::string_view p) {
  std::vector<std::string_view> parts;
  size_t i = 0;
  while (i < p.size()) {
    size_t j = p.find('/', i);
    if (j == std::string_view::npos) j = p.size();
    if (j > i) parts.push_back(p.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

std::string kernel_relative_link(std::string_view from_dir, std::string_view target) {
  auto from = split_path(from_dir);
  auto to = split_path(target);
  size_t k = 0;
  while (k < from.size() && k + 1 < to.size() && from[k] == to[k]) ++k;
  std::string out;
  for (size_t i = k; i < from.size(); ++i) out += "../";
  for (size_t i = k; i < to.size(); ++i) {
    out.append(to[i]);
    if (i + 1 < to.size()) out.push_back('/');
  }
  return out;
}

}  // namespace gdrproxy::sysfs
