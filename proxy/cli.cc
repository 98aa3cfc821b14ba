#include "proxy/cli.h"

namespace gdrproxy::proxy {

void register_commands(CLI::App& app, int& exit_code) {
  (void)app;
  (void)exit_code;
}

}  // namespace gdrproxy::proxy
