// Reading the NVIDIA ioctl captures in tests/fixtures/nvidia/ (format in its README): each call's
// request, argument and parameter bytes before and after the call. Shared by the fixture tests,
// the kernel-ALLOW tests and the decode bench.
#pragma once

#include <zlib.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "proxy/mem/memory_reader.h"

namespace gdrproxy::proxy::testing_capture {

struct Region {
  uint64_t addr = 0;
  std::vector<uint8_t> pre, post;
};

struct Record {
  uint32_t kind = 0;  // 1 frontend, 2 uvm
  uint32_t cmd = 0;
  uint64_t arg = 0;
  int32_t ret = 0;
  int32_t err = 0;
  std::vector<Region> regions;

  // The caller's memory before the call: every region's bytes at its address.
  BufferMemory before() const {
    BufferMemory m;
    for (const Region& g : regions) m.map(g.addr, g.pre);
    return m;
  }
};

inline std::vector<uint8_t> gunzip(const std::string& path) {
  std::vector<uint8_t> out;
  gzFile f = gzopen(path.c_str(), "rb");
  if (f == nullptr) return out;
  uint8_t buf[65536];
  int n;
  while ((n = gzread(f, buf, sizeof buf)) > 0) out.insert(out.end(), buf, buf + n);
  gzclose(f);
  return out;
}

// The records of tests/fixtures/nvidia/<name>; stops at the first short record, empty when the
// file is missing or not a capture.
inline std::vector<Record> load(const std::string& name) {
  const auto data = gunzip(GDRPROXY_SOURCE_DIR "/tests/fixtures/nvidia/" + name);
  std::vector<Record> recs;
  if (data.size() < 8 || std::memcmp(data.data(), "NVIOCAP1", 8) != 0) return recs;
  size_t off = 8;
  auto take = [&](void* dst, size_t n) {
    if (data.size() - off < n) return false;
    std::memcpy(dst, data.data() + off, n);
    off += n;
    return true;
  };
  while (off < data.size()) {
    Record r;
    uint32_t nregions;
    if (!take(&r.kind, 4) || !take(&r.cmd, 4) || !take(&r.arg, 8) || !take(&r.ret, 4) ||
        !take(&r.err, 4) || !take(&nregions, 4) || nregions > 2)
      break;
    for (uint32_t i = 0; i < nregions; ++i) {
      Region g;
      uint32_t len;
      if (!take(&g.addr, 8) || !take(&len, 4)) return recs;
      g.pre.resize(len);
      g.post.resize(len);
      if (!take(g.pre.data(), len) || !take(g.post.data(), len)) return recs;
      r.regions.push_back(std::move(g));
    }
    recs.push_back(std::move(r));
  }
  return recs;
}

}  // namespace gdrproxy::proxy::testing_capture
