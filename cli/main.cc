// gdrproxy: one binary, one subcommand per component. Each component registers its own
// subcommands; this file only builds the root and runs the parser.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <iostream>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/command_failure.h"
#include "cli/completion.h"
#include "demo/demo.h"
#include "doctor/cli.h"
#include "harness/cli.h"
#include "netns/cli.h"
#include "proxy/cli.h"
#include "proxy/oci/runtime_shim.h"
#include "sysfs/cli.h"

int main(int argc, char** argv) {
  // Everything after the first "--" is the command that `run`/`runtime` start: the parser never
  // sees it (see proxy::CommandTail).
  // Other subcommands get their "--" as CLI11 reads it.
  std::vector<std::string> own(argv, argv + argc);
  // Installed as gdrproxy-runtime (what a container engine calls as its OCI runtime): every
  // argument is the runtime's; the shim's own settings come from /etc/gdrproxy/runtime.json, or
  // the file a global option --gdrproxy-config=PATH names (podman: --runtime-flag
  // gdrproxy-config=PATH; taken out before the real runtime sees the arguments), or the file
  // GDRPROXY_RUNTIME_CONFIG names (engines that pass their environment on).
  // A link named gdrproxy-runtime-NAME (a second runtime handler, e.g. gdrproxy-runtime-rails)
  // reads runtime-NAME.json beside the file gdrproxy-runtime would read, unless told otherwise.
  const std::string self = own[0].substr(own[0].rfind('/') + 1);
  constexpr std::string_view kShimName = "gdrproxy-runtime";
  const bool shim_named = self.rfind(kShimName, 0) == 0;
  const std::string suffix = shim_named ? self.substr(kShimName.size()) : "";
  if (shim_named && gdrproxy::proxy::is_shim_link_suffix(suffix)) {
    std::vector<std::string> as_sub = {own[0], "runtime"};
    std::optional<std::string> config;
    if (const char* c = std::getenv("GDRPROXY_RUNTIME_CONFIG")) config = c;
    if (!suffix.empty())
      config = gdrproxy::proxy::suffixed_shim_config(
          config.value_or(gdrproxy::proxy::kRuntimeConfigPath), suffix);
    std::vector<std::string> args(own.begin() + 1, own.end());
    constexpr std::string_view kFlag = "--gdrproxy-config=";
    for (auto it = args.begin(); it != args.end() && it->rfind('-', 0) == 0;) {
      if (it->rfind(kFlag, 0) == 0) {
        config = it->substr(kFlag.size());
        it = args.erase(it);
      } else {
        ++it;
      }
    }
    // The runtime shim is on every container's start path: it goes straight to its work, not
    // through the whole command tree (whose construction costs a few milliseconds per call).
    if (!args.empty()) {
      gdrproxy::proxy::ShimOptions options;
      if (config) options.config_path = *config;
      return gdrproxy::proxy::run_runtime_shim(options, args);
    }
    if (config) {
      as_sub.push_back("--config");
      as_sub.push_back(*config);
    }
    as_sub.push_back("--");
    as_sub.insert(as_sub.end(), args.begin(), args.end());
    own = std::move(as_sub);
  }
  gdrproxy::proxy::CommandTail tail;
  const auto& runs = gdrproxy::proxy::kCommandSubcommands;
  const bool runs_command =
      own.size() > 1 && std::find(runs.begin(), runs.end(), own[1]) != runs.end();
  // `harness run [--] CMD...` takes a command too: CMD is the tail, with or without "--".
  const bool harness_run = own.size() > 2 && own[1] == "harness" && own[2] == "run";
  if (harness_run && own.size() > 3 && own[3] != "--" && own[3] != "-h" && own[3] != "--help")
    own.insert(own.begin() + 3, "--");
  if (runs_command || harness_run) {
    if (auto dd = std::find(own.begin() + 1, own.end(), "--"); dd != own.end()) {
      tail.words.emplace(dd + 1, own.end());
      own.erase(dd, own.end());
    }
  }
  CLI::App app{
      "gdrproxy: RDMA (uverbs) and NVIDIA GPU devices for sandboxed containers.\n"
      "Brokers device opens, decodes/enforces/traces device ioctls, builds a synthetic sysfs,\n"
      "and moves RoCE rails into container network namespaces."};
  app.require_subcommand(1);
  int exit_code = 0;
  gdrproxy::proxy::register_commands(app, exit_code, tail);
  gdrproxy::sysfs::register_commands(app, exit_code);
  gdrproxy::netns::register_commands(app, exit_code);
  gdrproxy::demo::register_demo(app, exit_code);
  gdrproxy::doctor::register_commands(app, exit_code);
  gdrproxy::harness::register_commands(app, exit_code, tail.words);
  gdrproxy::cli::register_completion(app, exit_code);
  try {
    std::vector<char*> args;
    for (auto& w : own) args.push_back(w.data());
    app.parse(static_cast<int>(args.size()), args.data());
  } catch (const CLI::ParseError& e) {
    // One exit-status scheme (README, "Exit status"): --help is 0; a usage error is 125 for a
    // subcommand that runs a command (its own statuses stay the command's), 2 for the others.
    const int rc = app.exit(e);
    if (rc == 0) return 0;
    return runs_command ? 125 : 2;
  } catch (const std::exception& e) {
    // A failure no subcommand reported itself: still one line, named after the subcommand, and
    // its failure status (125 where a command would have run, else 1).
    std::string who = "gdrproxy";
    for (const CLI::App* sub = &app; !sub->get_subcommands().empty();) {
      sub = sub->get_subcommands().front();
      who += " " + sub->get_name();
    }
    return gdrproxy::report_failure(who, e, runs_command ? 125 : 1);
  }
  return exit_code;
}
