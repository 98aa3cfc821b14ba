// Tenant bytes printed by the supervisor: one printable line whatever they are, and a JSON trace
// record that never throws. These are the strings a hostile tenant picks (its comm, its paths).
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "base/escape.h"
#include "proxy/trace/trace_record.h"

namespace gdrproxy::proxy {
namespace {

bool one_printable_line(const std::string& s) {
  for (unsigned char c : s)
    if (c < 0x20 || c >= 0x7f) return false;
  return true;
}

TEST(Escape, EveryByteValueBecomesPrintable) {
  std::string all;
  for (int c = 1; c < 256; ++c) all += static_cast<char>(c);
  EXPECT_TRUE(one_printable_line(escape_text(all)));
  EXPECT_TRUE(one_printable_line(quote_text(all)));
  EXPECT_TRUE(one_printable_line(printable(all)));
  EXPECT_EQ(escape_text("a\nb\t\"\\\xff"), "a\\nb\\t\\\"\\\\\\xff");
  EXPECT_EQ(quote_text("/dev/x\n"), "\"/dev/x\\n\"");
  EXPECT_EQ(printable("say \"hi\"\x1b[2J"), "say \"hi\"\\x1b[2J");
}

TEST(Escape, HostileRecordsFormatWithoutThrowing) {
  for (const std::string& comm : {std::string(""), std::string("\xff\xfe\n[pid 1]"),
                                  std::string("\x1b]0;title\x07"), std::string(1, '\0')}) {
    TraceRecord r;
    r.who.comm = comm;
    r.syscall = "openat";
    r.device = quote_text(comm);
    r.call.name = "open";
    r.call.args = {{"path", quote_text("/tmp/" + comm)}};
    r.reason = "device " + comm;
    std::string text, json;
    EXPECT_NO_THROW(text = format_text(r));
    EXPECT_TRUE(one_printable_line(text)) << text;
    EXPECT_NO_THROW(json = format_json(r));
    EXPECT_TRUE(nlohmann::json::accept(json)) << json;
  }
}

}  // namespace
}  // namespace gdrproxy::proxy
