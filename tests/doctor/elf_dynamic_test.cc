// The ELF dynamic-section reader on objects gcc builds here, and on broken copies of them.
#include <gtest/gtest.h>

#include <elf.h>
#include <sys/stat.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "doctor/elf_dynamic.h"
#include "tests/doctor/fixture.h"

namespace gdrproxy::doctor {
namespace {
using testing::build_so;
using testing::TempTree;

std::vector<uint8_t> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), {}};
}

TEST(ElfDynamic, ReadsSonameNeededRunpathAndRpath) {
  TempTree t;
  build_so(t.path("a/libucp.so.0"), "libucp.so.0");
  build_so(t.path("a/libfabric.so.1"), "libfabric.so.1");
  build_so(t.path("p/libplugin_UCX.so"), "", {t.path("a/libucp.so.0"), t.path("a/libfabric.so.1")},
           {"$ORIGIN/..", "/opt/ucx/lib"});
  std::string err;
  auto e = read_elf_dynamic(t.path("p/libplugin_UCX.so"), &err);
  ASSERT_TRUE(e) << err;
  EXPECT_TRUE(e->is64);
  EXPECT_EQ(e->machine, EM_X86_64);
  EXPECT_FALSE(e->soname);
  EXPECT_EQ(e->needed, (std::vector<std::string>{"libucp.so.0", "libfabric.so.1"}));
  EXPECT_EQ(e->runpath, (std::vector<std::string>{"$ORIGIN/..", "/opt/ucx/lib"}));
  EXPECT_TRUE(e->rpath.empty());

  build_so(t.path("q/libold.so.3"), "libold.so.3", {}, {"/usr/old"}, true, true);
  auto o = read_elf_dynamic(t.path("q/libold.so.3"), &err);
  ASSERT_TRUE(o) << err;
  EXPECT_FALSE(o->is64);
  EXPECT_EQ(o->soname, "libold.so.3");
  EXPECT_EQ(o->rpath, (std::vector<std::string>{"/usr/old"}));
}

TEST(ElfDynamic, BrokenFilesGiveErrorsNotCrashes) {
  TempTree t;
  build_so(t.path("libx.so.1"), "libx.so.1", {}, {"/opt/x"});
  const auto good = bytes_of(t.path("libx.so.1"));
  ASSERT_GT(good.size(), sizeof(Elf64_Ehdr));
  std::string err;
  ASSERT_TRUE(parse_elf_dynamic(good, &err)) << err;
  // Every truncation either parses (the tail was not needed) or names an error.
  for (size_t n = 0; n < good.size(); n += 7) {
    std::vector<uint8_t> cut(good.begin(), good.begin() + static_cast<long>(n));
    err.clear();
    auto r = parse_elf_dynamic(cut, &err);
    if (!r) {
      EXPECT_FALSE(err.empty()) << n;
    }
  }
  // A string-table size pointing past the file is refused.
  auto bad = good;
  Elf64_Ehdr eh;
  std::memcpy(&eh, bad.data(), sizeof eh);
  bool patched = false;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Elf64_Phdr ph;
    std::memcpy(&ph, bad.data() + eh.e_phoff + i * sizeof ph, sizeof ph);
    if (ph.p_type != PT_DYNAMIC) continue;
    for (uint64_t off = ph.p_offset; off + sizeof(Elf64_Dyn) <= ph.p_offset + ph.p_filesz;
         off += sizeof(Elf64_Dyn)) {
      Elf64_Dyn d;
      std::memcpy(&d, bad.data() + off, sizeof d);
      if (d.d_tag == DT_STRSZ) {
        d.d_un.d_val = 0xffffffff;
        std::memcpy(bad.data() + off, &d, sizeof d);
        patched = true;
      }
    }
  }
  ASSERT_TRUE(patched);
  EXPECT_FALSE(parse_elf_dynamic(bad, &err));
  EXPECT_EQ(err, "DT_STRSZ out of range");
  const std::vector<uint8_t> text = {'h', 'e', 'l', 'l', 'o'};
  EXPECT_FALSE(parse_elf_dynamic(text, &err));
  EXPECT_EQ(err, "too short for ELF");
  EXPECT_FALSE(read_elf_dynamic(t.path("missing.so"), &err));
}

TEST(ElfDynamic, OnlyRegularFilesAreOpened) {
  TempTree t;
  ASSERT_EQ(::mkfifo(t.path("fifo.so").c_str(), 0600), 0);
  std::string err;
  // A FIFO would block an open for reading; it is refused before any open.
  EXPECT_FALSE(read_elf_dynamic(t.path("fifo.so"), &err));
  EXPECT_EQ(err, "not a regular file");
  t.symlink("/dev/null", "null.so");
  EXPECT_FALSE(read_elf_dynamic(t.path("null.so"), &err));
  EXPECT_EQ(err, "not a regular file");
}

}  // namespace
}  // namespace gdrproxy::doctor
