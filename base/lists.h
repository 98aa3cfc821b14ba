// Lists written as one string, as command lines and environment variables carry them ("mlx5_0,
// mlx5_1"): split into their items and joined back. The idea not to miss: an empty item is no
// item (",a,,b," is a and b), so a trailing or doubled separator never names "".
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace gdrproxy {

// The non-empty items of `s` between `sep`s, in order.
std::vector<std::string> split_list(std::string_view s, char sep = ',');

// The non-empty items of `items` (any range of strings) with `sep` between them; "" for none.
template <typename Items>
std::string join_list(const Items& items, std::string_view sep = ",") {
  std::string out;
  for (const auto& item : items) {
    if (std::string_view(item).empty()) continue;
    if (!out.empty()) out += sep;
    out += item;
  }
  return out;
}

}  // namespace gdrproxy
