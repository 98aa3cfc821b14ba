// The JSON trace writer's gathering: while records keep coming it takes them in batches (no
// wake-up per push), yet a record pushed to an idle writer is taken at once, a flush writes what
// is queued within a bound, and finish() loses nothing the file takes. Real files, real threads.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "proxy/trace/json_trace_writer.h"

namespace gdrproxy::proxy {
namespace {

class JsonTraceWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gdrproxy-json-writer-XXXXXX";
    const int fd = ::mkstemp(tmpl);
    ASSERT_GE(fd, 0);
    path_ = tmpl;
    file_ = UniqueFd(fd);
  }
  void TearDown() override { ::unlink(path_.c_str()); }

  size_t lines() const {
    std::ifstream in(path_);
    size_t n = 0;
    for (std::string l; std::getline(in, l);) n += !l.empty();
    return n;
  }
  // Waits up to `limit` for the file to hold `want` lines; returns what it holds then.
  size_t wait_for_lines(size_t want, std::chrono::milliseconds limit) const {
    const auto end = std::chrono::steady_clock::now() + limit;
    size_t n = lines();
    while (n < want && std::chrono::steady_clock::now() < end) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      n = lines();
    }
    return n;
  }
  static TraceRecord record(uint64_t seq) {
    TraceRecord r;
    r.seq = seq;
    r.syscall = "ioctl";
    r.device = "uverbs0";
    r.decision = "allow";
    return r;
  }

  std::string path_;
  UniqueFd file_;
};

TEST_F(JsonTraceWriterTest, AFlushWritesARecordPushedToAnIdleWriter) {
  JsonTraceWriter w(std::move(file_));
  // Let the writer go idle (waiting without a deadline), then push one record and flush.
  std::this_thread::sleep_for(JsonTraceWriter::kGather * 3);
  w.push(record(1));
  w.flush();
  EXPECT_EQ(wait_for_lines(1, std::chrono::milliseconds(500)), 1u);
  EXPECT_EQ(w.dropped(), 0u);
}

TEST_F(JsonTraceWriterTest, RecordsKeptComingAreAllWrittenAtFinish) {
  constexpr uint64_t kRecords = 3 * JsonTraceWriter::kBatch + 17;  // full batches and a rest
  JsonTraceWriter w(std::move(file_));
  for (uint64_t i = 1; i <= kRecords; ++i) w.push(record(i));
  w.finish(std::chrono::seconds(5));
  EXPECT_EQ(lines(), kRecords);
  EXPECT_EQ(w.dropped(), 0u);
}

TEST_F(JsonTraceWriterTest, ARecordPushedAfterFinishIsCountedNotWritten) {
  JsonTraceWriter w(std::move(file_));
  w.push(record(1));
  w.finish(std::chrono::seconds(5));
  w.push(record(2));
  EXPECT_EQ(lines(), 1u);
  EXPECT_EQ(w.dropped(), 1u);
}

TEST_F(JsonTraceWriterTest, ItsThreadIsNamedForPsAndPerf) {
  JsonTraceWriter w(std::move(file_));
  // The thread names itself as it starts: looked for until it has (bounded).
  bool found = false;
  for (int i = 0; i < 200 && !found; ++i) {
    for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
      std::ifstream comm(task.path() / "comm");
      std::string name;
      std::getline(comm, name);
      found = found || name == "gdrproxy-json";
    }
    if (!found) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  EXPECT_TRUE(found) << "no thread named gdrproxy-json in /proc/self/task";
}

}  // namespace
}  // namespace gdrproxy::proxy
