// Test fixtures for the doctor (see fixture.h).
#include "tests/doctor/fixture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <stdexcept>

namespace gdrproxy::doctor::testing {
namespace fs = std::filesystem;

TempTree::TempTree() {
  std::string tmpl = (fs::temp_directory_path() / "doctor-test-XXXXXX").string();
  if (!::mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
  root_ = tmpl;
}

TempTree::~TempTree() {
  std::error_code ec;
  fs::remove_all(root_, ec);
}

void TempTree::write(const std::string& rel, const std::string& contents) const {
  fs::path p = path(rel);
  fs::create_directories(p.parent_path());
  std::ofstream out(p, std::ios::binary | std::ios::trunc);
  out << contents;
  if (!out) throw std::runtime_error("cannot write " + p.string());
}

void TempTree::mkdir(const std::string& rel) const {
  fs::create_directories(path(rel));
}

void TempTree::symlink(const std::string& target, const std::string& rel) const {
  fs::path p = path(rel);
  fs::create_directories(p.parent_path());
  fs::create_symlink(target, p);
}

std::string ipv4_gid(const std::string& dotted) {
  unsigned a, b, c, d;
  if (std::sscanf(dotted.c_str(), "%u.%u.%u.%u", &a, &b, &c, &d) != 4)
    throw std::runtime_error("bad address " + dotted);
  char buf[64];
  std::snprintf(buf, sizeof buf, "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x", a, b, c, d);
  return buf;
}

void add_hca(const TempTree& t, const std::string& ibdev, const std::string& netdev,
             const std::vector<FakeGid>& gids, const std::string& link_layer) {
  const std::string dev = "sys/class/infiniband/" + ibdev;
  const std::string port = dev + "/ports/1";
  t.write(port + "/link_layer", link_layer + "\n");
  t.write(port + "/rate", "200 Gb/sec (4X HDR)\n");
  t.write(dev + "/fw_ver", "28.39.1002\n");
  for (const auto& g : gids) {
    t.write(port + "/gids/" + std::to_string(g.index), g.gid + "\n");
    t.write(port + "/gid_attrs/types/" + std::to_string(g.index), g.type + "\n");
    t.write(port + "/gid_attrs/ndevs/" + std::to_string(g.index), netdev + "\n");
  }
  t.mkdir(dev + "/device/net/" + netdev);
  t.mkdir("sys/class/net/" + netdev);
}

void build_so(const std::string& out, const std::string& soname,
              const std::vector<std::string>& link_with, const std::vector<std::string>& search,
              bool rpath_not_runpath, bool m32, const std::string& source) {
  fs::create_directories(fs::path(out).parent_path());
  const std::string src = out + ".c";
  {
    std::ofstream c(src);
    c << (source.empty() ? "int doctor_fixture_symbol(void) { return 42; }\n" : source);
  }
  // -nostdlib keeps the objects tiny and their DT_NEEDED exactly what the test asks for.
  std::string cmd = "gcc -shared -fPIC -nostdlib -o '" + out + "' '" + src + "'";
  if (m32) cmd += " -m32";
  if (!soname.empty()) cmd += " -Wl,-soname," + soname;
  cmd += rpath_not_runpath ? " -Wl,--disable-new-dtags" : " -Wl,--enable-new-dtags";
  for (const auto& s : search) cmd += " '-Wl,-rpath," + s + "'";
  cmd += " -Wl,--no-as-needed";
  for (const auto& l : link_with) cmd += " '" + l + "'";
  cmd += " 2>&1";
  const int rc = std::system(cmd.c_str());
  fs::remove(src);
  if (rc != 0) throw std::runtime_error("gcc failed: " + cmd);
}

Context tree_context(const TempTree& t) {
  Context c;
  c.sysfs_root = t.path("sys");
  c.proc_root = t.path("proc");
  c.dev_root = t.path("dev");
  c.etc_root = t.path("etc");
  c.ipv4_of = [](const std::string&) { return std::vector<std::string>{}; };
  c.probe_libraries.clear();  // no probe of this machine's libraries unless a test asks
  return c;
}

Check only_check(const Report& r, const std::string& id) {
  std::vector<Check> found;
  for (const auto& c : r.checks())
    if (c.id == id) found.push_back(c);
  EXPECT_EQ(found.size(), 1u) << "checks with id " << id << ":\n" << r.to_text();
  if (found.empty()) return Check{id, Status::Fail, "(missing)", ""};
  return found.front();
}

}  // namespace gdrproxy::doctor::testing
