// The agent's start count (proxy/agent/agent_start_count.h): each start counts the ones before
// it, and a record someone else could have planted (a link, a file not ours, garbage, a
// directory others may write) is not believed.
#include "proxy/agent/agent_start_count.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "base/file_io.h"

namespace gdrproxy::proxy {
namespace {

class AgentStartCount : public ::testing::Test {
 protected:
  void SetUp() override {
    char t[] = "/tmp/gdrproxy-starts.XXXXXX";
    ASSERT_NE(::mkdtemp(t), nullptr);
    dir_ = t;
  }
  void TearDown() override { remove_tree(dir_, nullptr); }
  std::string file() const { return dir_ + "/" + kAgentStartsFile; }
  static void write(const std::string& path, const std::string& text) {
    FILE* f = std::fopen(path.c_str(), "we");
    ASSERT_NE(f, nullptr);
    std::fputs(text.c_str(), f);
    std::fclose(f);
  }
  std::string dir_;
};

TEST_F(AgentStartCount, EachStartCountsTheOnesBeforeIt) {
  for (uint64_t n = 0; n < 3; ++n) {
    const AgentStarts s = record_agent_start(dir_);
    EXPECT_EQ(s.before, n);
    EXPECT_EQ(s.note, "");
  }
  EXPECT_EQ(read_text(file()), "3\n");
  struct stat st {};
  ASSERT_EQ(::stat(file().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(list_dir(dir_).size(), 1u) << "a temporary file was left behind";
}

TEST_F(AgentStartCount, GarbageStartsTheCountAgainAndSaysSo) {
  for (const char* bad : {"", "x\n", "12", "12\n\n", "-1\n", " 4\n", "99999999999999999999999\n"}) {
    write(file(), bad);
    const AgentStarts s = record_agent_start(dir_);
    EXPECT_EQ(s.before, 0u) << bad;
    EXPECT_NE(s.note.find("does not hold a count"), std::string::npos) << bad;
    EXPECT_EQ(read_text(file()), "1\n") << bad;
  }
}

TEST_F(AgentStartCount, ALinkIsNeitherBelievedNorWrittenThrough) {
  const std::string target = dir_ + "/elsewhere";
  write(target, "41\n");
  ASSERT_EQ(::symlink(target.c_str(), file().c_str()), 0);
  const AgentStarts s = record_agent_start(dir_);
  EXPECT_EQ(s.before, 0u);
  EXPECT_NE(s.note.find("not a regular file of ours"), std::string::npos) << s.note;
  EXPECT_EQ(read_text(target), "41\n") << "the link's target was written";
  EXPECT_FALSE(is_symlink(file()));
  EXPECT_EQ(read_text(file()), "1\n");
}

TEST_F(AgentStartCount, ADirectoryOthersMayWriteIsNotTrusted) {
  write(file(), "5\n");
  ASSERT_EQ(::chmod(dir_.c_str(), 0777), 0);
  const AgentStarts s = record_agent_start(dir_);
  EXPECT_EQ(s.before, 0u);
  EXPECT_NE(s.note.find("restarts are not counted"), std::string::npos) << s.note;
  EXPECT_EQ(read_text(file()), "5\n") << "written in a directory others may write";
  const AgentStarts gone = record_agent_start(dir_ + "/missing");
  EXPECT_EQ(gone.before, 0u);
  EXPECT_FALSE(gone.note.empty());
}

}  // namespace
}  // namespace gdrproxy::proxy
