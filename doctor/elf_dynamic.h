// The dynamic section of an ELF shared object: SONAME, DT_NEEDED, DT_RPATH, DT_RUNPATH, read the
// way ld.so reads them (program headers, PT_DYNAMIC, DT_STRTAB mapped through PT_LOAD).
//
// The idea not to miss: the file is tenant-controlled (a library inside an image, or mapped in a
// job's process). Every offset, size and count read from it is checked against the file's size
// and fixed limits before it is used, with overflow-safe arithmetic; a malformed file yields an
// error message, never a crash, an exception, or a read outside the bytes given.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

namespace gdrproxy::doctor {

struct ElfDynamic {
  bool is64 = false;
  uint16_t machine = 0;  // e_machine (EM_X86_64, EM_AARCH64, ...)
  std::optional<std::string> soname;
  std::vector<std::string> needed;
  std::vector<std::string> rpath;    // DT_RPATH entries (':'-split)
  std::vector<std::string> runpath;  // DT_RUNPATH entries
};

// Reads `len` bytes at `offset` into `out`; false if they are not all there.
using ElfReader = std::function<bool(uint64_t offset, size_t len, void* out)>;

// Parses through `read` (a file of `size` bytes). nullopt with `error` set on a bad file.
std::optional<ElfDynamic> parse_elf_dynamic(const ElfReader& read, uint64_t size,
                                            std::string* error);
std::optional<ElfDynamic> parse_elf_dynamic(std::span<const uint8_t> bytes, std::string* error);
// Opens `path` (following symlinks) and parses it with pread; only a regular file is opened.
std::optional<ElfDynamic> read_elf_dynamic(const std::string& path, std::string* error);

}  // namespace gdrproxy::doctor
