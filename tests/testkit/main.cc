// gdrproxy-testkit: what the tests need beside the product, kept out of the shipped binary. It is
// built with the tests (never installed, never packaged) next to build/gdrproxy, so a test that
// gives a sandbox or a container the build directory gives it this tool too.
//
//   gdrproxy-testkit standin CMD [ARGS...]     CMD with stand-in device nodes
//   (demo/standin_devices.h) gdrproxy-testkit exercise uverbs PATH       a fixed sequence of uverbs
//   ioctls on PATH gdrproxy-testkit exercise nvidia CTL [UVM]  NVIDIA frontend (and UVM) ioctls
//   gdrproxy-testkit exercise cuda NIC          the CUDA dma-buf probe (cuda_dmabuf.h)
//   gdrproxy-testkit netns move|restore|...      `gdrproxy netns ...` with the fault points and
//                                                step traces of netns_steps.h
//
// The idea not to miss: `standin` owns every word after it (the command and its options, "--"
// included), so it is dispatched before any option parser sees them.
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "demo/device_exerciser.h"
#include "demo/standin_devices.h"
#include "netns/cli.h"
#include "tests/testkit/cuda_dmabuf.h"
#include "tests/testkit/netns_steps.h"

namespace {

int standin(int argc, char** argv) {
  if (argc < 1) {
    std::cerr << "gdrproxy-testkit standin: no command\n";
    return 125;
  }
  try {
    gdrproxy::demo::enter_standin_dev();
  } catch (const std::exception& e) {
    std::cerr << "gdrproxy-testkit standin: " << e.what() << "\n";
    return 125;
  }
  ::execvp(argv[0], argv);
  std::perror("gdrproxy-testkit standin: exec");
  return 127;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc > 1 && std::string_view(argv[1]) == "standin") return standin(argc - 2, argv + 2);
  CLI::App app{
      "gdrproxy-testkit: the tests' tool (stand-in devices, device exercisers, the CUDA "
      "probe); not part of the product"};
  app.require_subcommand(1);
  int exit_code = 0;
  app.add_subcommand("standin",
                     "Run CMD [ARGS...] with stand-in device nodes (every word after "
                     "`standin` is the command's)");
  auto* ex = app.add_subcommand("exercise", "Issue a fixed sequence of device ioctls");
  auto kind = std::make_shared<std::string>();
  auto paths = std::make_shared<std::vector<std::string>>();
  ex->add_option("kind", *kind, "uverbs PATH | nvidia CTL [UVM] | cuda NIC")
      ->required()
      ->check(CLI::IsMember({"uverbs", "nvidia", "cuda"}));
  ex->add_option("paths", *paths, "device paths")->required();
  ex->callback([kind, paths, &exit_code] {
    using namespace gdrproxy;
    if (*kind == "uverbs") {
      exit_code = demo::exercise_uverbs(paths->at(0), std::cout);
    } else if (*kind == "cuda") {
      exit_code = testkit::exercise_cuda_dmabuf(paths->at(0), std::cout);
    } else {
      exit_code =
          demo::exercise_nvidia(paths->at(0), paths->size() > 1 ? paths->at(1) : "", std::cout);
    }
  });
  // The rail launcher's own commands (the library's registration, as gdrproxy has them), watched
  // step by step as the environment asks.
  gdrproxy::netns::register_commands(app, exit_code);
  gdrproxy::testkit::watch_netns_steps_from_environment();
  CLI11_PARSE(app, argc, argv);
  return exit_code;
}
