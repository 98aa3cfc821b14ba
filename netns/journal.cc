// Journal write/read with fsync and validation (see journal.h).
#include "netns/journal.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/error.h"
#include "base/unique_fd.h"

namespace gdrproxy::netns {
namespace {

std::string read_first_line(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

void write_all_fsync(const std::string& path, const std::string& data) {
  UniqueFd fd(::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600));
  if (!fd) throw_errno("cannot create journal " + path, errno);
  size_t off = 0;
  while (off < data.size()) {
    ssize_t n = ::write(fd.get(), data.data() + off, data.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw_errno("cannot write journal " + path, errno);
    off += static_cast<size_t>(n);
  }
  if (::fsync(fd.get()) != 0) throw_errno("cannot fsync journal " + path, errno);
}

void fsync_dir(const std::string& dir) {
  UniqueFd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!fd) throw_errno("cannot open journal directory " + dir, errno);
  if (::fsync(fd.get()) != 0) throw_errno("cannot fsync journal directory " + dir, errno);
}

}  // namespace

Json host_identity() {
  char host[256] = {};
  gethostname(host, sizeof(host) - 1);
  return Json{{"hostname", host},
              {"machine_id", read_first_line("/etc/machine-id")},
              {"boot_id", read_first_line("/proc/sys/kernel/random/boot_id")}};
}

std::string journal_checksum(const Json& doc) {
  Json body = doc;
  body.erase("checksum");
  std::string text = body.dump();
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : text) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

void write_journal(const std::string& path, Json doc) {
  doc["checksum"] = journal_checksum(doc);
  std::string tmp = path + ".tmp";
  write_all_fsync(tmp, doc.dump(2) + "\n");
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw_errno("cannot rename " + tmp + " to " + path, errno);
  std::filesystem::path dir = std::filesystem::absolute(path).parent_path();
  fsync_dir(dir.string());
}

Json load_journal(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw_errno("cannot read journal " + path, errno);
  Json doc;
  try {
    doc = Json::parse(in);
  } catch (const std::exception& e) {
    throw Error("journal " + path + " is corrupt (not JSON): " + e.what());
  }
  if (doc.is_object() && doc.value("format", "") == kJournalFormatWithoutIdentity)
    throw Error("journal " + path + " is a " + kJournalFormatWithoutIdentity +
                " journal: it records the interfaces' names and MACs only, which a tenant can "
                "copy onto a link of its own, and no identity to tell the rail from it; restore "
                "refuses it rather than match by those. Give the interfaces back by hand (ip "
                "link set DEV netns 1, from the namespace that holds them) and remove it");
  if (!doc.is_object() || doc.value("format", "") != kJournalFormat)
    throw Error("journal " + path + " is not a " + std::string(kJournalFormat) + " journal");
  if (doc.value("checksum", "") != journal_checksum(doc))
    throw Error("journal " + path + " is corrupt: checksum mismatch");
  Json here = host_identity();
  const Json& then = doc.at("host");
  if (then.value("machine_id", "") != here["machine_id"] ||
      then.value("hostname", "") != here["hostname"])
    throw Error("journal " + path + " was written on another host (" + then.value("hostname", "?") +
                ", machine-id " + then.value("machine_id", "?") + "); this is " +
                here["hostname"].get<std::string>());
  if (then.value("boot_id", "") != here["boot_id"])
    throw Error("journal " + path + " was written before a reboot (boot " +
                then.value("boot_id", "?") +
                "): the interfaces and namespaces it describes no longer exist");
  return doc;
}

std::string done_path(const std::string& journal_path) {
  return journal_path + ".done";
}

}  // namespace gdrproxy::netns
