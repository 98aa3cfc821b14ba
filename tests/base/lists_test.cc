// Lists as command lines and environment variables carry them (base/lists.h): an empty item is
// no item, whichever way.
#include "base/lists.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace gdrproxy {
namespace {

using Items = std::vector<std::string>;

TEST(Lists, SplitDropsEmptyItems) {
  EXPECT_EQ(split_list(",mlx5_0,,mlx5_1,"), (Items{"mlx5_0", "mlx5_1"}));
  EXPECT_EQ(split_list("eth0"), (Items{"eth0"}));
  EXPECT_EQ(split_list(""), Items{});
  EXPECT_EQ(split_list(",,"), Items{});
  EXPECT_EQ(split_list("a b", ' '), (Items{"a", "b"}));
}

TEST(Lists, JoinPutsTheSeparatorBetweenNonEmptyItems) {
  EXPECT_EQ(join_list(Items{"a", "", "b"}), "a,b");
  EXPECT_EQ(join_list(Items{"", "a"}), "a");
  EXPECT_EQ(join_list(Items{}), "");
  EXPECT_EQ(join_list(std::set<std::string>{"b", "a"}, " "), "a b");
}

TEST(Lists, JoinThenSplitGivesTheItemsBack) {
  const Items items{"mlx5_0:1", "mlx5_1:1"};
  EXPECT_EQ(split_list(join_list(items)), items);
}

}  // namespace
}  // namespace gdrproxy
