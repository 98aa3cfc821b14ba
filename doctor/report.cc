// The doctor's report and its text/JSON forms (see report.h).
#include "doctor/report.h"

#include <algorithm>

#include "base/escape.h"

namespace gdrproxy::doctor {

const char* to_string(Status s) {
  switch (s) {
    case Status::Pass:
      return "PASS";
    case Status::Warn:
      return "WARN";
    case Status::Fail:
      return "FAIL";
  }
  return "FAIL";
}

std::string clean(const std::string& s) {
  return gdrproxy::printable(s);
}
std::string quote_value(const std::string& s) {
  return gdrproxy::quote_text(s);
}

void Report::add(const std::string& id, Status status, const std::string& found,
                 const std::string& fix) {
  checks_.push_back({clean(id), status, clean(found), clean(fix)});
}

std::vector<Check> Report::matching(const std::string& prefix) const {
  std::vector<Check> out;
  for (const auto& c : checks_)
    if (c.id.compare(0, prefix.size(), prefix) == 0) out.push_back(c);
  return out;
}

Status Report::worst() const {
  Status w = Status::Pass;
  for (const auto& c : checks_) w = std::max(w, c.status);
  return w;
}

int Report::exit_code() const {
  switch (worst()) {
    case Status::Pass:
      return 0;
    case Status::Warn:
      return 1;
    case Status::Fail:
      return 2;
  }
  return 2;
}

std::string Report::to_text() const {
  size_t width = 0;
  for (const auto& c : checks_) width = std::max(width, c.id.size());
  std::string out;
  int counts[3] = {0, 0, 0};
  for (const auto& c : checks_) {
    ++counts[static_cast<int>(c.status)];
    out += to_string(c.status);
    out += "  " + c.id + std::string(width - c.id.size(), ' ') + "  " + c.found;
    if (!c.fix.empty()) out += "  -- fix: " + c.fix;
    out += "\n";
  }
  out += "doctor: " + std::to_string(counts[0]) + " pass, " + std::to_string(counts[1]) +
         " warn, " + std::to_string(counts[2]) + " fail\n";
  return out;
}

nlohmann::json Report::to_json() const {
  nlohmann::json checks = nlohmann::json::array();
  for (const auto& c : checks_)
    checks.push_back(
        {{"id", c.id}, {"status", to_string(c.status)}, {"found", c.found}, {"fix", c.fix}});
  return {{"schema", "gdrproxy.doctor"},
          {"version", 1},
          {"status", to_string(worst())},
          {"checks", checks},
          {"facts", facts_}};
}

}  // namespace gdrproxy::doctor
