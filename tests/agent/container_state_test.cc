// The container process states runc and crun send with a seccomp listener, parsed; and every way
// a state can be wrong, refused with one printable line that starts with the field's name. The
// sender is whoever can connect to the agent's socket: its bytes reach `why` only escaped.
#include <gtest/gtest.h>

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "proxy/oci/container_state.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

// runc 1.2 for a container's init process: json.Marshal of specs.ContainerProcessState, one
// line, sent with one fd.
constexpr char kRuncInit[] =
    R"({"ociVersion":"1.2.0","fds":["seccompFd"],"pid":4422,"metadata":"MKNOD=/dev/null",)"
    R"("state":{"ociVersion":"1.2.0","id":"oci-container1","status":"creating","pid":4422,)"
    R"("bundle":"/containers/redis","annotations":{"a":"b"}}})";

// runc for a `runc exec` process: status "running", the exec process's pid beside the init
// process's, no metadata (omitempty).
constexpr char kRuncExec[] =
    R"({"ociVersion":"1.2.0","fds":["seccompFd"],"pid":5120,"state":{"ociVersion":"1.2.0",)"
    R"("id":"oci-container1","status":"running","pid":4422,"bundle":"/containers/redis"}})";

// crun: yajl-beautified, ociVersion hard-coded to "0.2.0", no metadata, no annotations.
constexpr char kCrun[] = R"({
    "ociVersion": "0.2.0",
    "fds": [
        "seccompFd"
    ],
    "pid": 31337,
    "state": {
        "ociVersion": "0.2.0",
        "id": "7c1e3b0a",
        "status": "creating",
        "pid": 31337,
        "bundle": "/run/containers/storage/overlay-containers/7c1e3b0a/userdata"
    }
})";

bool one_printable_line(const std::string& s) {
  for (const unsigned char c : s)
    if (c < 0x20 || c >= 0x7f) return false;
  return !s.empty();
}

ContainerProcessState parsed(const std::string& text, size_t fds_received = 1) {
  std::string why;
  auto state = parse_container_process_state(text, fds_received, why);
  EXPECT_TRUE(state) << why;
  return state.value_or(ContainerProcessState{});
}

std::string refusal(const std::string& text, size_t fds_received = 1) {
  std::string why;
  std::optional<ContainerProcessState> state;
  EXPECT_NO_THROW(state = parse_container_process_state(text, fds_received, why));
  EXPECT_FALSE(state) << text;
  EXPECT_TRUE(one_printable_line(why)) << why;
  return why;
}

bool starts_with(const std::string& s, const std::string& prefix) {
  return s.compare(0, prefix.size(), prefix) == 0;
}

TEST(ContainerState, RuncInitProcess) {
  const ContainerProcessState s = parsed(kRuncInit);
  EXPECT_EQ(s.oci_version, "1.2.0");
  EXPECT_EQ(s.fd_names, std::vector<std::string>{"seccompFd"});
  EXPECT_EQ(s.seccomp_fd_index, 0u);
  EXPECT_EQ(s.pid, 4422);
  EXPECT_EQ(s.metadata, "MKNOD=/dev/null");
  EXPECT_EQ(s.state.oci_version, "1.2.0");
  EXPECT_EQ(s.state.id, "oci-container1");
  EXPECT_EQ(s.state.status, ContainerStatus::kCreating);
  EXPECT_EQ(s.state.pid, 4422);
  EXPECT_EQ(s.state.bundle, "/containers/redis");
  EXPECT_EQ(s.state.annotations, (std::map<std::string, std::string>{{"a", "b"}}));
}

TEST(ContainerState, RuncExecProcessIsRunningWithItsOwnPid) {
  const ContainerProcessState s = parsed(kRuncExec);
  EXPECT_EQ(s.state.status, ContainerStatus::kRunning);
  EXPECT_EQ(s.pid, 5120);
  EXPECT_EQ(s.state.pid, 4422);
  EXPECT_EQ(s.metadata, "");
  EXPECT_TRUE(s.state.annotations.empty());
}

TEST(ContainerState, CrunStateWithItsHardCodedVersion) {
  const ContainerProcessState s = parsed(kCrun);
  EXPECT_EQ(s.oci_version, "0.2.0");
  EXPECT_EQ(s.state.oci_version, "0.2.0");
  EXPECT_EQ(s.state.id, "7c1e3b0a");
  EXPECT_EQ(s.state.status, ContainerStatus::kCreating);
  EXPECT_EQ(s.pid, 31337);
  EXPECT_EQ(s.metadata, "");
}

TEST(ContainerState, ListenerIsFoundByNameNotPosition) {
  json doc = json::parse(kRuncInit);
  doc["fds"] = {"pidFd", "seccompFd"};
  const ContainerProcessState s = parsed(doc.dump(), 2);
  EXPECT_EQ(s.seccomp_fd_index, 1u);
  EXPECT_EQ(s.fd_names, (std::vector<std::string>{"pidFd", "seccompFd"}));
}

TEST(ContainerState, OptionalFieldsAbsentAndUnknownKeysIgnored) {
  json doc = json::parse(kRuncInit);
  doc.erase("metadata");
  doc["state"].erase("pid");
  doc["state"].erase("bundle");
  doc["state"].erase("annotations");
  doc["futureField"] = {{"nested", {1, 2, 3}}};
  doc["state"]["futureField"] = nullptr;
  const ContainerProcessState s = parsed(doc.dump());
  EXPECT_EQ(s.metadata, "");
  EXPECT_EQ(s.state.pid, 0);
  EXPECT_EQ(s.state.bundle, "");
  EXPECT_TRUE(s.state.annotations.empty());
}

// crun 1.8's `exec` names no process ("pid": 0): parsed as 0, for the agent to bind the listener
// to its first caller (agent.e2e's crun_exec_* cases attack that binding).
TEST(ContainerState, AProcessTheRuntimeDoesNotNameIsPidZero) {
  json doc = json::parse(kRuncExec);
  doc["pid"] = 0;
  EXPECT_EQ(parsed(doc.dump()).pid, 0);
}

TEST(ContainerState, EveryStatusAndTheBoundsAreAccepted) {
  for (const auto status : {ContainerStatus::kCreating, ContainerStatus::kCreated,
                            ContainerStatus::kRunning, ContainerStatus::kStopped}) {
    json doc = json::parse(kRuncInit);
    doc["state"]["status"] = container_status_name(status);
    EXPECT_EQ(parsed(doc.dump()).state.status, status);
  }
  json doc = json::parse(kRuncInit);
  doc["pid"] = 2147483647;
  doc["state"]["pid"] = 0;
  doc["state"]["id"] = std::string(kMaxContainerIdBytes, 'x');
  const ContainerProcessState s = parsed(doc.dump());
  EXPECT_EQ(s.pid, 2147483647);
  EXPECT_EQ(s.state.id.size(), kMaxContainerIdBytes);
}

struct Refused {
  const char* what;
  std::function<void(json&)> edit;
  size_t fds_received;
  const char* field;  // the message starts with "<field>:"
};

TEST(ContainerState, EveryRefusalNamesItsField) {
  const std::string long_id(kMaxContainerIdBytes + 1, 'x');
  const Refused cases[] = {
      {"ociVersion missing", [](json& d) { d.erase("ociVersion"); }, 1, "ociVersion"},
      {"ociVersion a number", [](json& d) { d["ociVersion"] = 1; }, 1, "ociVersion"},
      {"pid missing", [](json& d) { d.erase("pid"); }, 1, "pid"},
      {"pid negative", [](json& d) { d["pid"] = -1; }, 1, "pid"},
      {"pid too wide", [](json& d) { d["pid"] = 2147483648LL; }, 1, "pid"},
      {"pid a float", [](json& d) { d["pid"] = 4422.0; }, 1, "pid"},
      {"pid a string", [](json& d) { d["pid"] = "4422"; }, 1, "pid"},
      {"fds missing", [](json& d) { d.erase("fds"); }, 1, "fds"},
      {"fds a string", [](json& d) { d["fds"] = "seccompFd"; }, 1, "fds"},
      {"fd name a number",
       [](json& d) {
         d["fds"] = {"seccompFd", 3};
       },
       2, "fds[1]"},
      {"fds empty", [](json& d) { d["fds"] = json::array(); }, 0, "fds"},
      {"no seccompFd", [](json& d) { d["fds"] = {"pidFd"}; }, 1, "fds"},
      {"seccompFd twice",
       [](json& d) {
         d["fds"] = {"seccompFd", "seccompFd"};
       },
       2, "fds[1]"},
      {"no fd arrived", [](json&) {}, 0, "fds"},
      {"seccompFd past the fds that arrived",
       [](json& d) {
         d["fds"] = {"pidFd", "seccompFd"};
       },
       1, "fds"},
      {"more names than fds",
       [](json& d) {
         d["fds"] = {"seccompFd", "pidFd"};
       },
       1, "fds"},
      {"more fds than names", [](json&) {}, 2, "fds"},
      {"metadata a number", [](json& d) { d["metadata"] = 7; }, 1, "metadata"},
      {"metadata null", [](json& d) { d["metadata"] = nullptr; }, 1, "metadata"},
      {"state missing", [](json& d) { d.erase("state"); }, 1, "state"},
      {"state an array", [](json& d) { d["state"] = json::array(); }, 1, "state"},
      {"id missing", [](json& d) { d["state"].erase("id"); }, 1, "state.id"},
      {"id empty", [](json& d) { d["state"]["id"] = ""; }, 1, "state.id"},
      {"id too long", [&](json& d) { d["state"]["id"] = long_id; }, 1, "state.id"},
      {"id a number", [](json& d) { d["state"]["id"] = 12; }, 1, "state.id"},
      {"state ociVersion missing", [](json& d) { d["state"].erase("ociVersion"); }, 1,
       "state.ociVersion"},
      {"status missing", [](json& d) { d["state"].erase("status"); }, 1, "state.status"},
      {"status unknown", [](json& d) { d["state"]["status"] = "paused"; }, 1, "state.status"},
      {"status capitalised", [](json& d) { d["state"]["status"] = "Creating"; }, 1, "state.status"},
      {"state pid negative", [](json& d) { d["state"]["pid"] = -1; }, 1, "state.pid"},
      {"state pid a string", [](json& d) { d["state"]["pid"] = "1"; }, 1, "state.pid"},
      {"state pid a float", [](json& d) { d["state"]["pid"] = 1.5; }, 1, "state.pid"},
      {"bundle relative", [](json& d) { d["state"]["bundle"] = "containers/redis"; }, 1,
       "state.bundle"},
      {"bundle empty", [](json& d) { d["state"]["bundle"] = ""; }, 1, "state.bundle"},
      {"bundle with a NUL", [](json& d) { d["state"]["bundle"] = std::string("/a\0b", 4); }, 1,
       "state.bundle"},
      {"bundle a number", [](json& d) { d["state"]["bundle"] = 5; }, 1, "state.bundle"},
      {"annotations an array",
       [](json& d) {
         d["state"]["annotations"] = {"a", "b"};
       },
       1, "state.annotations"},
      {"annotation not a string", [](json& d) { d["state"]["annotations"]["n"] = 1; }, 1,
       "state.annotations[\"n\"]"},
  };
  for (const Refused& c : cases) {
    json doc = json::parse(kRuncInit);
    c.edit(doc);
    const std::string why = refusal(doc.dump(), c.fds_received);
    EXPECT_TRUE(starts_with(why, std::string(c.field) + ": ")) << c.what << ": " << why;
  }
}

TEST(ContainerState, RefusalsSayWhatWasExpectedAndWhatCame) {
  json doc = json::parse(kRuncInit);
  doc["fds"] = {"seccompFd", "pidFd"};
  EXPECT_EQ(refusal(doc.dump(), 1),
            "fds: names 2 fds but 1 fd arrived (each fd that arrives must be named) (container "
            "\"oci-container1\")");
  doc = json::parse(kRuncInit);
  doc["pid"] = -7;
  EXPECT_EQ(refusal(doc.dump()),
            "pid: expected an integer from 0 that fits pid_t, got number -7 (container "
            "\"oci-container1\")");
  doc = json::parse(kRuncInit);
  doc.erase("state");
  EXPECT_EQ(refusal(doc.dump()), "state: expected an object (the container's state), got nothing");
}

TEST(ContainerState, NotAJsonObject) {
  for (const std::string& text :
       {std::string(""), std::string("{"), std::string("[1, 2]"), std::string("null"),
        std::string("{} {}"), std::string("{\"a\": \"\xff\xfe\"}"), std::string(1, '\0'),
        std::string("{\"ociVersion\": \"\x1b[2J\n\"}")}) {
    const std::string why = refusal(text);
    EXPECT_TRUE(starts_with(why, "container process state: ")) << why;
  }
}

TEST(ContainerState, HostileIdIsEscapedInEveryMessage) {
  // JSON escapes (\n, \u001b) carry any byte but invalid UTF-8 into a string.
  json doc = json::parse(kRuncInit);
  doc["state"]["id"] = "evil\n[pid 1] ok\x1b[2J\"";
  doc["state"]["status"] = "paused";
  const std::string why = refusal(doc.dump());
  EXPECT_NE(why.find("(container \"evil\\n[pid 1] ok\\x1b[2J\\\"\")"), std::string::npos) << why;

  // Too long to accept: shown cut, still escaped.
  doc = json::parse(kRuncInit);
  doc["state"]["id"] = "\x1b]0;title\x07" + std::string(kMaxContainerIdBytes, '\n');
  const std::string too_long = refusal(doc.dump());
  EXPECT_TRUE(starts_with(too_long, "state.id: ")) << too_long;
  EXPECT_NE(too_long.find("\\x1b]0;title\\x07\\n"), std::string::npos) << too_long;
  EXPECT_NE(too_long.find("(1034 bytes)"), std::string::npos) << too_long;
  EXPECT_LT(too_long.size(), 400u);

  // A hostile annotation key in a refusal, and a hostile value of the wrong type.
  doc = json::parse(kRuncInit);
  doc["state"]["annotations"]["k\r\n"] = {{"x", "\x1b[31m"}};
  EXPECT_TRUE(starts_with(refusal(doc.dump()), "state.annotations[\"k\\r\\n\"]: "));
  doc = json::parse(kRuncInit);
  doc["metadata"] = {"\x1b[31m\n"};
  EXPECT_TRUE(starts_with(refusal(doc.dump()), "metadata: expected a string, got array"));
}

TEST(ContainerState, DeepNestingNeitherThrowsNorOverflows) {
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  refusal(deep);
  json doc = json::parse(kRuncInit);
  std::string text = doc.dump();
  text.insert(text.size() - 1, ",\"x\":" + deep);
  EXPECT_EQ(parsed(text).state.id, "oci-container1");
  text = doc.dump();
  text.replace(text.find("\"MKNOD=/dev/null\""), 17, deep);
  EXPECT_TRUE(starts_with(refusal(text), "metadata: expected a string, got array of 1 elements"));
}

// One name per id. The name of an id that is not plain was once itself a plain id, so a container
// could be given another's trace file and rail state directory by taking that name as its id.
TEST(ContainerFileName, NoIdIsGivenAnothersName) {
  EXPECT_EQ(container_file_name("4f3a9c0d2e"), "4f3a9c0d2e");
  for (const std::string& victim : std::vector<std::string>{
           "team/a", "..", ".", "", std::string(300, 'a'), std::string("a\0b", 3), "a b\n"}) {
    const std::string name = container_file_name(victim);
    EXPECT_NE(container_file_name(name), name) << name;  // the name taken as an id
    EXPECT_EQ(name[0], '%') << name;
    EXPECT_EQ(name.find('/'), std::string::npos) << name;
    EXPECT_LE(name.size(), 170u);
  }
  EXPECT_NE(container_file_name("a/b"), container_file_name("a_b"));
  EXPECT_NE(container_file_name("a/b"), container_file_name("a?b"));
  EXPECT_NE(container_file_name(std::string(129, 'x')), container_file_name(std::string(130, 'x')));
  // The SHA-1 of "a/b", as sha1sum(1) gives it.
  EXPECT_EQ(container_file_name("a/b"), "%3ec69c85a4ff96830024afeef2d4e512181c8f7b-a_b");
}

}  // namespace
}  // namespace gdrproxy::proxy
