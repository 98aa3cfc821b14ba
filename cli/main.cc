// gdrproxy: one binary, one subcommand per component. Each component registers its own
// subcommands; this file only builds the root and runs the parser.
#include <CLI/CLI.hpp>

#include "cli/demo.h"
#include "netns/cli.h"
#include "proxy/cli.h"
#include "sysfs/cli.h"

int main(int argc, char** argv) {
  CLI::App app{
      "gdrproxy: RDMA (uverbs) and NVIDIA GPU devices for sandboxed containers.\n"
      "Brokers device opens, decodes/enforces/traces device ioctls, builds a synthetic sysfs,\n"
      "and moves RoCE rails into container network namespaces."};
  app.require_subcommand(1);
  int exit_code = 0;
  gdrproxy::proxy::register_commands(app, exit_code);
  gdrproxy::sysfs::register_commands(app, exit_code);
  gdrproxy::netns::register_commands(app, exit_code);
  gdrproxy::cli::register_demo(app, exit_code);
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
