// libFuzzer target for the doctor's ELF dynamic-section reader (doctor/elf_dynamic.h).
// The bytes are a whole file: an image's library or a file a job has mapped, both chosen by the
// tenant.
//
// A bug is: any crash, sanitizer report or exception; a success whose strings hold a NUL (a
// string read past its terminator); a success whose class or machine is not the header's; a
// result that differs when the same bytes are read through the pread-style reader interface
// with a size limit of exactly the input (the two entry points must agree).
#include <elf.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>

#include "doctor/elf_dynamic.h"
#include "tests/fuzz/fuzz_check.h"

using namespace gdrproxy::doctor;
using gdrproxy::fuzz::fail;

namespace {

void no_nul(const std::string& s) {
  if (s.find('\0') != std::string::npos) fail("a string holds a NUL");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string error;
  auto a = parse_elf_dynamic(std::span<const uint8_t>(data, size), &error);
  ElfReader read = [&](uint64_t offset, size_t len, void* out) {
    if (offset > size || len > size - offset) return false;
    if (len) std::memcpy(out, data + offset, len);
    return true;
  };
  std::string error2;
  auto b = parse_elf_dynamic(read, size, &error2);
  if (a.has_value() != b.has_value() || error != error2) fail("entry points disagree");
  if (!a) {
    if (error.empty()) fail("failure without a message");
    return 0;
  }
  if (a->needed != b->needed || a->soname != b->soname || a->rpath != b->rpath ||
      a->runpath != b->runpath)
    fail("entry points disagree on contents");
  if (size < EI_NIDENT) fail("success on a file shorter than e_ident");
  if (a->is64 != (data[EI_CLASS] == ELFCLASS64)) fail("class differs from the header");
  const size_t machine_at = offsetof(Elf64_Ehdr, e_machine);
  uint16_t machine = 0;
  std::memcpy(&machine, data + machine_at, sizeof machine);
  if (a->machine != machine) fail("machine differs from the header");
  for (const auto& s : a->needed) no_nul(s);
  for (const auto& s : a->rpath) no_nul(s);
  for (const auto& s : a->runpath) no_nul(s);
  if (a->soname) no_nul(*a->soname);
  return 0;
}
