// The hidden subcommands the demo, `doctor` and the tests use: `gdrproxy exercise` (a
// representative sequence of device calls) and `gdrproxy standin` (a command under stand-in
// device nodes). Test scaffolding, kept out of the production library (gdrproxy_proxy): it lives
// in gdrproxy_testing, which only the CLI binary links.
#include "proxy/exercise/cli_helpers.h"

#include <unistd.h>

#include <cstdio>
#include <iostream>
#include <memory>

#include "demo/device_exerciser.h"
#include "demo/standin_devices.h"
#include "proxy/exercise/cuda_dmabuf.h"

namespace gdrproxy::proxy {

void register_test_helpers(CLI::App& app, int& exit_code, const CommandTail& tail) {
  auto* ex = app.add_subcommand("exercise", "Issue a representative sequence of device ioctls");
  ex->group("");  // hidden: a tool for demo, doctor and tests
  auto kind = std::make_shared<std::string>();
  auto paths = std::make_shared<std::vector<std::string>>();
  ex->add_option("kind", *kind)->required()->check(CLI::IsMember({"uverbs", "nvidia", "cuda"}));
  ex->add_option("paths", *paths)->required();
  ex->callback([kind, paths, &exit_code] {
    if (*kind == "uverbs") {
      exit_code = demo::exercise_uverbs(paths->at(0), std::cout);
    } else if (*kind == "cuda") {
      exit_code = exercise_cuda_dmabuf(paths->at(0), std::cout);
    } else {
      exit_code =
          demo::exercise_nvidia(paths->at(0), paths->size() > 1 ? paths->at(1) : "", std::cout);
    }
  });
  auto* standin = app.add_subcommand("standin", "Run a command with stand-in device nodes");
  standin->group("");
  standin->prefix_command();  // everything after the subcommand is the command line
  standin->callback([standin, &tail, &exit_code] {
    // A prefix command: its words before "--" are the command, and the "--" was the command's.
    std::vector<std::string> words = standin->remaining();
    if (!words.empty() && tail.words) words.push_back("--");
    auto argv = std::make_shared<std::vector<std::string>>(command_words(words, tail));
    if (argv->empty()) {
      std::cerr << "gdrproxy standin: no command\n";
      exit_code = 125;
      return;
    }
    try {
      demo::enter_standin_dev();
    } catch (const std::exception& e) {
      std::cerr << "gdrproxy standin: " << e.what() << "\n";
      exit_code = 125;
      return;
    }
    std::vector<char*> a;
    for (auto& s : *argv) a.push_back(s.data());
    a.push_back(nullptr);
    ::execvp(a[0], a.data());
    std::perror("gdrproxy standin: exec");
    exit_code = 127;
  });
}

}  // namespace gdrproxy::proxy
