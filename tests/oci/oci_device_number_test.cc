// The numbers of OCI linux.devices entries: in range they are the device, out of range (where a
// runtime would truncate them to another device) or not integers they are refused, naming the
// entry escaped.
#include "proxy/oci/oci_device_number.h"

#include <gtest/gtest.h>
#include <sys/sysmacros.h>

#include "base/error.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

json entry(json major, json minor, const char* type = "c") {
  return {{"path", "/dev/infiniband/uverbs1"}, {"type", type}, {"major", major}, {"minor", minor}};
}

std::string refusal(const json& e) {
  try {
    oci_char_device_number(e, "b/config.json");
  } catch (const Error& err) {
    return err.what();
  }
  return "";
}

TEST(OciDeviceNumber, InRangeNumbersAreTheDevice) {
  EXPECT_EQ(oci_char_device_number(entry(231, 193), "x"), makedev(231, 193));
  EXPECT_EQ(oci_char_device_number(entry(4095, 1048575), "x"), makedev(4095, 1048575));
  EXPECT_EQ(oci_char_device_number(entry(231, 193, "u"), "x"), makedev(231, 193));
}

TEST(OciDeviceNumber, NumbersARuntimeWouldTruncateAreRefused) {
  // runc and crun pack major 231+4096 into a dev_t whose 32-bit form is 231:193.
  EXPECT_EQ(refusal(entry(231 + 4096, 193)),
            "b/config.json: linux.devices entry \"/dev/infiniband/uverbs1\": major 4327 is beyond "
            "4095, the kernel's limit; a runtime would make another device of it");
  EXPECT_NE(refusal(entry(231, 193 + (1 << 20))).find("minor 1048769 is beyond 1048575"),
            std::string::npos);
  EXPECT_NE(refusal(entry(uint64_t{1} << 40, 0)).find("major 1099511627776 is beyond"),
            std::string::npos);
}

TEST(OciDeviceNumber, NonIntegersAreRefusedNeverConverted) {
  EXPECT_NE(refusal(entry(-1, 193)).find("major -1 is not a non-negative integer"),
            std::string::npos);
  EXPECT_NE(refusal(entry(231.5, 193)).find("major 231.5 is not"), std::string::npos);
  EXPECT_NE(refusal(entry("231", 193)).find("major \"231\" is not"), std::string::npos);
  json e = entry(231 + 4096, 1);
  e["path"] = "/dev/\x1b[31mx\n";
  EXPECT_NE(refusal(e).find("entry \"/dev/\\x1b[31mx\\x0a\""), std::string::npos);
}

TEST(OciDeviceNumber, EntriesOfNoCharacterDeviceNameNone) {
  EXPECT_EQ(oci_char_device_number(entry(8, 0, "b"), "x"), std::nullopt);
  EXPECT_EQ(oci_char_device_number(entry(0, 0, "p"), "x"), std::nullopt);
  EXPECT_EQ(oci_char_device_number(json{{"path", "/dev/x"}, {"type", "c"}}, "x"), std::nullopt);
  EXPECT_EQ(oci_char_device_number(json::array(), "x"), std::nullopt);
}

}  // namespace
}  // namespace gdrproxy::proxy
