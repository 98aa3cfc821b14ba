// The doctor's report: one Check per finding (PASS, WARN or FAIL, what was found, a one-line fix)
// and the node's facts that `--peer` compares across nodes.
//
// The idea not to miss: most of what a check prints is chosen by a tenant (environment values,
// file names inside an image, paths in a process's maps). Every string that enters a Check or the
// facts goes through gdrproxy::printable() on the way in, so a text line stays one printable line
// and the JSON writer never meets bytes that are not UTF-8.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace gdrproxy::doctor {

enum class Status { Pass, Warn, Fail };
const char* to_string(Status s);  // "PASS", "WARN", "FAIL"

struct Check {
  std::string id;  // "<family>.<check>", e.g. "nccl.ib_hca"
  Status status = Status::Pass;
  std::string found;  // what was found, one line
  std::string fix;    // one line; empty for PASS
};

class Report {
 public:
  void add(const std::string& id, Status status, const std::string& found,
           const std::string& fix = "");
  void pass(const std::string& id, const std::string& found) { add(id, Status::Pass, found); }
  void warn(const std::string& id, const std::string& found, const std::string& fix) {
    add(id, Status::Warn, found, fix);
  }
  void fail(const std::string& id, const std::string& found, const std::string& fix) {
    add(id, Status::Fail, found, fix);
  }

  const std::vector<Check>& checks() const { return checks_; }
  // The checks whose id starts with `prefix`.
  std::vector<Check> matching(const std::string& prefix) const;
  Status worst() const;
  // 0 all pass, 1 some warning, 2 some failure.
  int exit_code() const;

  // Facts for --peer: facts()["hcas"], ["rails"], ["libraries"], ["nccl_env"], ...
  nlohmann::json& facts() { return facts_; }
  const nlohmann::json& facts() const { return facts_; }

  std::string to_text() const;
  nlohmann::json to_json() const;

 private:
  std::vector<Check> checks_;
  nlohmann::json facts_ = nlohmann::json::object();
};

// A printable, JSON-safe copy of a tenant-controlled string (see the top of this file).
std::string clean(const std::string& s);
// `s` quoted and escaped: "mlx5_1" (for values a user typed or an image holds).
std::string quote_value(const std::string& s);

}  // namespace gdrproxy::doctor
