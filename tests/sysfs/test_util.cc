// Shared helpers of the sysfs unit tests; see test_util.h.
#include "tests/sysfs/test_util.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "base/file_io.h"
#include "demo/example_snapshot.h"

namespace gdrproxy::sysfs::test {

TempDir::TempDir() {
  const char* base = std::getenv("TMPDIR");
  std::string t = std::string(base && *base ? base : "/tmp") + "/gdrproxy-sysfs-test-XXXXXX";
  if (!::mkdtemp(t.data())) throw std::runtime_error("mkdtemp failed");
  path_ = t;
}

TempDir::~TempDir() {
  remove_tree(path_, nullptr);
}

bool prepare_fixture(const std::string& name, const std::string& out) {
  std::string cmd = std::string(GDRPROXY_SOURCE_DIR) + "/tests/sysfs/prepare_fixture.sh " + name +
                    " '" + out + "' >/dev/null";
  return std::system(cmd.c_str()) == 0;
}

Snapshot example_snapshot() {
  return snapshot_from_json(nlohmann::json::parse(demo::example_snapshot_json()));
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::trunc);
  out << data;
  if (!out) throw std::runtime_error("cannot write " + path);
}

std::string read_all(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace gdrproxy::sysfs::test
