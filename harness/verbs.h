// The harness's verbs, each a function of its context and arguments that returns the exit
// status or throws Failure / UsageError (output.h). The CLI (cli.cc) only parses and prints.
#pragma once

#include <sys/types.h>
#include <ostream>
#include <string>
#include <vector>

#include "harness/lifecycle.h"

namespace gdrproxy::harness {

// Chooses the node's rails (netns select), writes the plan and, where the rails have PCI RDMA
// devices, the synthetic sysfs; prints the summary and the doctor's verdict on `out`.
int prepare(const Context& c, std::ostream& out);

// What is prepared and running on this node, on `out`. Needs no root.
int status(const Context& c, std::ostream& out);

struct AttachArgs {
  std::string key;
  pid_t owner = 0;
  bool prepare = false;  // prepare a node without a plan first
};
// Holds the rails for `owner`; prints netns=, env=, sysfs_plan=, uverbs=, gdrproxy= lines.
int attach(const Context& c, const AttachArgs& a, std::ostream& out);
// Holder `key` leaves; the last gives the rails back.
int detach(const Context& c, const std::string& key);

// Stops live runs, gives back what dead ones left, removes the state directory.
int teardown(const Context& c);

// Runs `cmd` in a fresh container of this node holding the plan's rails; CMD's status.
int run(const Context& c, const std::vector<std::string>& cmd);

}  // namespace gdrproxy::harness
