// Helpers shared by the sysfs unit tests: temporary directories and fixture trees.
#pragma once

#include <string>

#include "sysfs/snapshot.h"

namespace gdrproxy::sysfs::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string operator/(const std::string& rel) const { return path_ + "/" + rel; }

 private:
  std::string path_;
};

// Runs tests/sysfs/prepare_fixture.sh NAME OUT; returns false if it failed.
bool prepare_fixture(const std::string& name, const std::string& out);
// The example node's snapshot (embedded in the library).
Snapshot example_snapshot();
// Small file helpers for test set-up.
void write_file(const std::string& path, const std::string& data);
std::string read_all(const std::string& path);

}  // namespace gdrproxy::sysfs::test
