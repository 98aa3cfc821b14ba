// The demo of the example node: it builds, verifies and prints the container's affinity table.
#include <sstream>

#include <gtest/gtest.h>

#include "demo/example_node.h"

namespace gdrproxy::demo {
namespace {

TEST(Demo, ExampleNodeTable) {
  std::ostringstream out;
  EXPECT_EQ(example_node(out), 0) << out.str();
  const std::string s = out.str();
  EXPECT_NE(s.find("8 GPUs, 8 RDMA NICs"), std::string::npos) << s;
  EXPECT_NE(s.find("GPUs 0000:0f:00.0 0000:2d:00.0, NICs mlx5_0 mlx5_1"), std::string::npos) << s;
  EXPECT_NE(s.find("verify: clean"), std::string::npos) << s;
  EXPECT_NE(s.find("path types match the host's"), std::string::npos) << s;
  EXPECT_NE(s.find("PIX"), std::string::npos) << s;
}

}  // namespace
}  // namespace gdrproxy::demo
