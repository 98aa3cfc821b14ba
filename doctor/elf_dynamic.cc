// ELF dynamic-section reader (see elf_dynamic.h). Only little-endian files are read: every
// platform NVIDIA GPUs and RDMA NICs run on is little-endian; a big-endian file is reported.
#include "doctor/elf_dynamic.h"

#include <elf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "base/unique_fd.h"

namespace gdrproxy::doctor {
namespace {

constexpr uint64_t kMaxPhnum = 4096;
constexpr uint64_t kMaxDynamicBytes = 1u << 20;
constexpr uint64_t kMaxStrtabBytes = 16u << 20;

struct Load {
  uint64_t offset, vaddr, filesz;
};

bool add_ok(uint64_t a, uint64_t b, uint64_t* out) {
  return !__builtin_add_overflow(a, b, out);
}

// The file offset of virtual address `v`, and how many bytes from there lie in the same segment.
bool vaddr_to_offset(const std::vector<Load>& loads, uint64_t v, uint64_t* off, uint64_t* avail) {
  for (const auto& l : loads) {
    uint64_t end = 0;
    if (!add_ok(l.vaddr, l.filesz, &end)) continue;
    if (v >= l.vaddr && v < end) {
      if (!add_ok(l.offset, v - l.vaddr, off)) return false;
      *avail = end - v;
      return true;
    }
  }
  return false;
}

std::vector<std::string> split_path_list(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start <= s.size()) {
    size_t end = s.find(':', start);
    if (end == std::string::npos) end = s.size();
    if (end > start) out.push_back(s.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

template <typename Ehdr, typename Phdr, typename Dyn>
std::optional<ElfDynamic> parse_class(const ElfReader& read, uint64_t size, std::string* error) {
  auto fail = [&](const char* why) -> std::optional<ElfDynamic> {
    if (error) *error = why;
    return std::nullopt;
  };
  Ehdr eh;
  if (size < sizeof eh || !read(0, sizeof eh, &eh)) return fail("truncated ELF header");
  if (eh.e_phentsize != sizeof(Phdr)) return fail("unexpected program header size");
  if (eh.e_phnum == 0 || eh.e_phnum > kMaxPhnum) return fail("no or too many program headers");
  uint64_t ph_end = 0;
  if (!add_ok(eh.e_phoff, uint64_t{eh.e_phnum} * sizeof(Phdr), &ph_end) || ph_end > size)
    return fail("program headers outside the file");
  std::vector<Load> loads;
  std::optional<Phdr> dynamic;
  for (uint64_t i = 0; i < eh.e_phnum; ++i) {
    Phdr ph;
    if (!read(eh.e_phoff + i * sizeof(Phdr), sizeof ph, &ph))
      return fail("unreadable program header");
    if (ph.p_type == PT_LOAD) loads.push_back({ph.p_offset, ph.p_vaddr, ph.p_filesz});
    if (ph.p_type == PT_DYNAMIC && !dynamic) dynamic = ph;
  }
  ElfDynamic out;
  out.is64 = sizeof(Ehdr) == sizeof(Elf64_Ehdr);
  out.machine = eh.e_machine;
  if (!dynamic) return out;  // a static object: nothing needed
  uint64_t dyn_end = 0;
  if (!add_ok(dynamic->p_offset, dynamic->p_filesz, &dyn_end) || dyn_end > size)
    return fail("PT_DYNAMIC outside the file");
  if (dynamic->p_filesz > kMaxDynamicBytes) return fail("PT_DYNAMIC too large");
  const uint64_t count = dynamic->p_filesz / sizeof(Dyn);
  std::vector<Dyn> dyns(count);
  if (count && !read(dynamic->p_offset, count * sizeof(Dyn), dyns.data()))
    return fail("unreadable PT_DYNAMIC");
  uint64_t strtab = 0, strsz = 0;
  bool has_strtab = false, has_strsz = false;
  std::vector<uint64_t> needed, rpath, runpath;
  std::optional<uint64_t> soname;
  for (const auto& d : dyns) {
    const uint64_t tag = static_cast<uint64_t>(d.d_tag);
    const uint64_t val = d.d_un.d_val;
    if (tag == DT_NULL) break;
    if (tag == DT_STRTAB) has_strtab = true, strtab = val;
    if (tag == DT_STRSZ) has_strsz = true, strsz = val;
    if (tag == DT_NEEDED) needed.push_back(val);
    if (tag == DT_SONAME) soname = val;
    if (tag == DT_RPATH) rpath.push_back(val);
    if (tag == DT_RUNPATH) runpath.push_back(val);
  }
  if (needed.empty() && !soname && rpath.empty() && runpath.empty()) return out;
  if (!has_strtab || !has_strsz) return fail("DT_STRTAB or DT_STRSZ missing");
  if (strsz == 0 || strsz > kMaxStrtabBytes) return fail("DT_STRSZ out of range");
  uint64_t off = 0, avail = 0;
  if (!vaddr_to_offset(loads, strtab, &off, &avail)) return fail("DT_STRTAB not in a PT_LOAD");
  uint64_t str_end = 0;
  if (strsz > avail || !add_ok(off, strsz, &str_end) || str_end > size)
    return fail("string table outside the file");
  std::string table(strsz, '\0');
  if (!read(off, strsz, table.data())) return fail("unreadable string table");
  bool bad = false;
  auto str = [&](uint64_t at) -> std::string {
    if (at >= table.size()) {
      bad = true;
      return "";
    }
    const size_t end = table.find('\0', at);
    if (end == std::string::npos) {
      bad = true;
      return "";
    }
    return table.substr(at, end - at);
  };
  for (uint64_t n : needed) out.needed.push_back(str(n));
  if (soname) out.soname = str(*soname);
  for (uint64_t r : rpath)
    for (auto& e : split_path_list(str(r))) out.rpath.push_back(std::move(e));
  for (uint64_t r : runpath)
    for (auto& e : split_path_list(str(r))) out.runpath.push_back(std::move(e));
  if (bad) return fail("a dynamic string lies outside the string table");
  return out;
}

}  // namespace

std::optional<ElfDynamic> parse_elf_dynamic(const ElfReader& read, uint64_t size,
                                            std::string* error) {
  unsigned char ident[EI_NIDENT];
  if (size < EI_NIDENT || !read(0, EI_NIDENT, ident)) {
    if (error) *error = "too short for ELF";
    return std::nullopt;
  }
  if (std::memcmp(ident, ELFMAG, SELFMAG) != 0) {
    if (error) *error = "not an ELF file";
    return std::nullopt;
  }
  if (ident[EI_DATA] != ELFDATA2LSB) {
    if (error) *error = "not a little-endian ELF file";
    return std::nullopt;
  }
  if (ident[EI_CLASS] == ELFCLASS64)
    return parse_class<Elf64_Ehdr, Elf64_Phdr, Elf64_Dyn>(read, size, error);
  if (ident[EI_CLASS] == ELFCLASS32)
    return parse_class<Elf32_Ehdr, Elf32_Phdr, Elf32_Dyn>(read, size, error);
  if (error) *error = "unknown ELF class";
  return std::nullopt;
}

std::optional<ElfDynamic> parse_elf_dynamic(std::span<const uint8_t> bytes, std::string* error) {
  ElfReader read = [&](uint64_t offset, size_t len, void* out) {
    if (offset > bytes.size() || len > bytes.size() - offset) return false;
    if (len) std::memcpy(out, bytes.data() + offset, len);
    return true;
  };
  return parse_elf_dynamic(read, bytes.size(), error);
}

std::optional<ElfDynamic> read_elf_dynamic(const std::string& path, std::string* error) {
  // Never open what is not a regular file: opening a device node can have effects (a watchdog
  // arms on open), and a FIFO blocks. Checked before the open, and the opened file must be the
  // one checked.
  struct stat before {};
  if (::stat(path.c_str(), &before) != 0 || !S_ISREG(before.st_mode)) {
    if (error) *error = "not a regular file";
    return std::nullopt;
  }
  UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
  if (!fd) {
    if (error) *error = "cannot open: " + std::string(std::strerror(errno));
    return std::nullopt;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_dev != before.st_dev ||
      st.st_ino != before.st_ino) {
    if (error) *error = "not a regular file";
    return std::nullopt;
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  ElfReader read = [&](uint64_t offset, size_t len, void* out) {
    if (offset > size || len > size - offset) return false;
    auto* p = static_cast<char*>(out);
    size_t done = 0;
    while (done < len) {
      ssize_t n = ::pread(fd.get(), p + done, len - done, static_cast<off_t>(offset + done));
      if (n <= 0) return false;
      done += static_cast<size_t>(n);
    }
    return true;
  };
  return parse_elf_dynamic(read, size, error);
}

}  // namespace gdrproxy::doctor
