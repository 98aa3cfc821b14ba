#include "netns/cli.h"

namespace gdrproxy::netns {

void register_commands(CLI::App& app, int& exit_code) {
  (void)app;
  (void)exit_code;
}

}  // namespace gdrproxy::netns
