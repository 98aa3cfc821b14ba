#include "sysfs/cli.h"

namespace gdrproxy::sysfs {

void register_commands(CLI::App& app, int& exit_code) {
  (void)app;
  (void)exit_code;
}

}  // namespace gdrproxy::sysfs
