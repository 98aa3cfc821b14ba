// See container_state.h. Every check throws a Refusal whose text is already one printable line;
// parse_container_process_state is the only place that catches, so no exception leaves it.
#include "proxy/oci/container_state.h"

#include <boost/uuid/detail/sha1.hpp>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <string>

#include "base/error.h"
#include "base/escape.h"

namespace gdrproxy::proxy {
namespace {

using json = nlohmann::json;

constexpr ContainerStatus kStatuses[] = {ContainerStatus::kCreating, ContainerStatus::kCreated,
                                         ContainerStatus::kRunning, ContainerStatus::kStopped};

// How much of a sender's string or value a message shows.
constexpr size_t kShownBytes = 64;

struct Refusal : Error {
  using Error::Error;
};

// A sender's string in a message: quoted, escaped, cut after kShownBytes.
std::string shown(std::string_view s) {
  if (s.size() <= kShownBytes) return quote_text(s);
  return quote_text(s.substr(0, kShownBytes)) + "... (" + std::to_string(s.size()) + " bytes)";
}

// What the sender gave in place of what was expected: its JSON type and its value, cut and
// escaped (a dump with ensure_ascii is ASCII already; printable() is the second line of defence).
// Arrays and objects are only counted: dump() recurses, and their nesting is the sender's.
std::string describe(const json* v) {
  if (v == nullptr) return "nothing";
  if (v->is_string()) return "string " + shown(v->get_ref<const std::string&>());
  if (v->is_array() || v->is_object())
    return std::string(v->type_name()) + " of " + std::to_string(v->size()) +
           (v->is_array() ? " elements" : " members");
  std::string text = v->dump(-1, ' ', /*ensure_ascii=*/true, json::error_handler_t::replace);
  if (text.size() > kShownBytes) text = text.substr(0, kShownBytes) + "...";
  return std::string(v->type_name()) + " " + printable(text);
}

// Builds the messages. Once the container's id is known every message names the container, so
// an operator can tell which container's runtime sent a bad state.
class Checker {
 public:
  void name_container(std::string_view id) { container_ = " (container " + shown(id) + ")"; }

  [[noreturn]] void expected(const std::string& field, const std::string& what,
                             const json* got) const {
    refuse(field, "expected " + what + ", got " + describe(got));
  }

  [[noreturn]] void refuse(const std::string& field, const std::string& reason) const {
    throw Refusal(field + ": " + reason + container_);
  }

 private:
  std::string container_;
};

const json* member(const json& object, const char* key) {
  const auto it = object.find(key);
  return it == object.end() ? nullptr : &*it;
}

const std::string& required_string(const Checker& check, const json& object, const char* key,
                                   const std::string& field) {
  const json* v = member(object, key);
  if (v == nullptr || !v->is_string()) check.expected(field, "a string", v);
  return v->get_ref<const std::string&>();
}

// A JSON integer from `min` to the largest pid_t; floats ("4422.0"), strings and numbers out of
// range are not one.
std::optional<pid_t> as_pid(const json* v, pid_t min) {
  if (v == nullptr || !v->is_number_integer()) return std::nullopt;
  constexpr auto kMax = std::numeric_limits<pid_t>::max();
  if (v->is_number_unsigned()) {
    const auto n = v->get<uint64_t>();
    if (n < static_cast<uint64_t>(min) || n > static_cast<uint64_t>(kMax)) return std::nullopt;
    return static_cast<pid_t>(n);
  }
  const auto n = v->get<int64_t>();
  if (n < min || n > kMax) return std::nullopt;
  return static_cast<pid_t>(n);
}

// `fds`: every fd that arrived is named, and "seccompFd" names exactly one of them.
void check_fds(const Checker& check, const json& doc, size_t fds_received,
               ContainerProcessState& out) {
  const json* fds = member(doc, "fds");
  if (fds == nullptr || !fds->is_array()) check.expected("fds", "an array of fd names", fds);
  std::optional<size_t> seccomp_at;
  for (size_t i = 0; i < fds->size(); ++i) {
    const json& name = (*fds)[i];
    const std::string field = "fds[" + std::to_string(i) + "]";
    if (!name.is_string()) check.expected(field, "a string (an fd name)", &name);
    out.fd_names.push_back(name.get<std::string>());
    if (out.fd_names.back() != kSeccompFdName) continue;
    if (seccomp_at)
      check.refuse(
          field, "\"seccompFd\" a second time (first at fds[" + std::to_string(*seccomp_at) + "])");
    seccomp_at = i;
  }
  if (!seccomp_at) check.expected("fds", "\"seccompFd\" among the names", fds);
  const auto count = [](size_t n) { return std::to_string(n) + (n == 1 ? " fd" : " fds"); };
  if (*seccomp_at >= fds_received)
    check.refuse("fds", "\"seccompFd\" is fds[" + std::to_string(*seccomp_at) + "] but " +
                            count(fds_received) + " arrived");
  if (fds->size() != fds_received)
    check.refuse("fds", "names " + count(fds->size()) + " but " + count(fds_received) +
                            " arrived (each fd that arrives must be named)");
  out.seccomp_fd_index = *seccomp_at;
}

// state.id: read first, so that every later message names the container.
std::string checked_id(const Checker& check, const json& state) {
  const json* id = member(state, "id");
  if (id == nullptr || !id->is_string() || id->get_ref<const std::string&>().empty() ||
      id->get_ref<const std::string&>().size() > kMaxContainerIdBytes)
    check.expected(
        "state.id",
        "a non-empty string of at most " + std::to_string(kMaxContainerIdBytes) + " bytes", id);
  return id->get<std::string>();
}

// `state`, runtime-spec runtime.md "State". Its id was read first, by checked_id.
// `unnamed`: the state of a process its runtime did not name (pid 0): crun's exec reports its
// bundle as "." (relative to nothing the agent knows), which is then left empty; the agent uses
// the served container's own bundle.
void check_runtime_state(const Checker& check, const json& state,
                         ContainerProcessState::RuntimeState& out, bool unnamed = false) {
  out.oci_version = required_string(check, state, "ociVersion", "state.ociVersion");

  const json* status = member(state, "status");
  bool known_status = false;
  for (const ContainerStatus s : kStatuses) {
    if (status != nullptr && status->is_string() &&
        status->get_ref<const std::string&>() == container_status_name(s)) {
      out.status = s;
      known_status = true;
    }
  }
  if (!known_status)
    check.expected("state.status", "one of creating, created, running, stopped", status);

  // Optional while the container is being created (runc omits a zero pid). Never compared with
  // the process's own pid: for an exec process they differ.
  if (const json* pid = member(state, "pid")) {
    const auto n = as_pid(pid, 0);
    if (!n) check.expected("state.pid", "an integer from 0 to 2147483647", pid);
    out.pid = *n;
  }

  if (const json* bundle = member(state, "bundle")) {
    const std::string* path =
        bundle->is_string() ? &bundle->get_ref<const std::string&>() : nullptr;
    const bool relative = path != nullptr && !path->empty() && path->front() != '/' &&
                          path->find('\0') == std::string::npos;
    if (!(unnamed && relative)) {  // else left empty
      if (path == nullptr || path->empty() || path->front() != '/' ||
          path->find('\0') != std::string::npos)
        check.expected("state.bundle", "an absolute path", bundle);
      out.bundle = *path;
    }
  }

  if (const json* annotations = member(state, "annotations")) {
    if (!annotations->is_object())
      check.expected("state.annotations", "an object of strings", annotations);
    for (auto it = annotations->begin(); it != annotations->end(); ++it) {
      if (!it.value().is_string())
        check.expected("state.annotations[" + shown(it.key()) + "]", "a string", &it.value());
      out.annotations.emplace(it.key(), it.value().get<std::string>());
    }
  }
}

ContainerProcessState check_document(const json& doc, size_t fds_received) {
  Checker check;
  if (!doc.is_object()) check.expected("container process state", "a JSON object", &doc);
  ContainerProcessState out;

  const json* state = member(doc, "state");
  if (state == nullptr || !state->is_object())
    check.expected("state", "an object (the container's state)", state);
  out.state.id = checked_id(check, *state);
  check.name_container(out.state.id);

  out.oci_version = required_string(check, doc, "ociVersion", "ociVersion");

  const json* pid = member(doc, "pid");
  // 0: the runtime did not name the process (crun's `exec` sends 0); the agent then binds the
  // listener to its first caller, and only into a container it serves already.
  const auto n = as_pid(pid, 0);
  if (!n) check.expected("pid", "an integer from 0 that fits pid_t", pid);
  out.pid = *n;

  check_fds(check, doc, fds_received, out);

  if (const json* metadata = member(doc, "metadata")) {
    if (!metadata->is_string()) check.expected("metadata", "a string", metadata);
    out.metadata = metadata->get<std::string>();
  }

  check_runtime_state(check, *state, out.state, out.pid == 0);
  return out;
}

// nlohmann's "[json.exception.parse_error.101] parse error at line 1, column 9: ...", without
// the bracketed prefix, cut, one printable line (it may quote the sender's bytes).
std::string parse_error_text(const char* what) {
  std::string_view text = what;
  if (!text.empty() && text.front() == '[') {
    const size_t end = text.find("] ");
    if (end != std::string_view::npos) text.remove_prefix(end + 2);
  }
  constexpr size_t kMax = 160;
  if (text.size() > kMax) return printable(text.substr(0, kMax)) + "...";
  return printable(text);
}

}  // namespace

const char* container_status_name(ContainerStatus status) {
  switch (status) {
    case ContainerStatus::kCreating:
      return "creating";
    case ContainerStatus::kCreated:
      return "created";
    case ContainerStatus::kRunning:
      return "running";
    case ContainerStatus::kStopped:
      return "stopped";
  }
  return "unknown";
}

std::optional<ContainerProcessState::RuntimeState> parse_runtime_state(std::string_view json_text,
                                                                       std::string& why) {
  json doc;
  try {
    doc = json::parse(json_text.begin(), json_text.end());
  } catch (const std::exception& e) {
    why = std::string("container state: not JSON: ") + parse_error_text(e.what());
    return std::nullopt;
  }
  try {
    Checker check;
    if (!doc.is_object()) check.expected("state", "a JSON object", &doc);
    ContainerProcessState::RuntimeState out;
    out.id = checked_id(check, doc);
    check.name_container(out.id);
    check_runtime_state(check, doc, out);
    return out;
  } catch (const Refusal& e) {
    why = e.what();
  } catch (const std::exception& e) {
    why = std::string("container state: ") + printable(e.what());
  }
  return std::nullopt;
}

std::optional<ContainerProcessState> parse_container_process_state(std::string_view json_text,
                                                                   size_t fds_received,
                                                                   std::string& why) {
  constexpr const char* kWhat = "container process state";
  json doc;
  try {
    doc = json::parse(json_text.begin(), json_text.end());
  } catch (const json::parse_error& e) {
    why = std::string(kWhat) + ": not JSON: " + parse_error_text(e.what());
    return std::nullopt;
  } catch (const std::exception& e) {
    why = std::string(kWhat) + ": " + printable(e.what());
    return std::nullopt;
  } catch (...) {
    why = std::string(kWhat) + ": parsing failed";
    return std::nullopt;
  }
  try {
    return check_document(doc, fds_received);
  } catch (const Refusal& e) {
    why = e.what();
  } catch (const std::exception& e) {
    why = std::string(kWhat) + ": " + printable(e.what());
  } catch (...) {
    why = std::string(kWhat) + ": checking failed";
  }
  return std::nullopt;
}

std::string container_file_name(const std::string& id) {
  const auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' ||
           c == '_' || c == '-';
  };
  bool is_plain = !id.empty() && id[0] != '.' && id.size() <= 128;
  for (char c : id) is_plain = is_plain && plain(c);
  if (is_plain) return id;
  boost::uuids::detail::sha1 sha;
  sha.process_bytes(id.data(), id.size());
  boost::uuids::detail::sha1::digest_type digest;
  sha.get_digest(digest);
  std::string out = "%";
  char word[9];
  for (const auto w : digest) {
    std::snprintf(word, sizeof word, "%08x", static_cast<unsigned>(w));
    out += word;
  }
  out += '-';
  for (size_t i = 0; i < id.size() && i < 64; ++i) out += plain(id[i]) ? id[i] : '_';
  return out;
}

}  // namespace gdrproxy::proxy
