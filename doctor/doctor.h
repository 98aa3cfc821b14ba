// The doctor's check registry: every check family, in the order the report prints them.
//
// The idea not to miss: a family never stops the others. Whatever it throws becomes one WARN
// line naming the family (the doctor could not look, which is not the node failing), and the
// remaining families still run, so one unreadable file never hides the real finding.
#pragma once

#include <string>
#include <vector>

#include "doctor/context.h"
#include "doctor/report.h"

namespace gdrproxy::doctor {

struct Family {
  const char* name;  // "nccl", "rdma", ... (the prefix of its checks' ids)
  const char* what;  // one line for --help
  void (*run)(const Context&, Report&);
};

const std::vector<Family>& families();

// Runs the families named in `only` (every family when empty) into one report.
Report run_doctor(const Context& ctx, const std::vector<std::string>& only = {});

}  // namespace gdrproxy::doctor
