// Keeping containers' seccomp listeners across an agent restart. Only the agent holds a
// container's listener (the runtime closes its copy), so an agent that dies takes every
// container's supervision with it. The idea not to miss: a tiny holder process of our own keeps
// a duplicate of each listener together with the container process state it came with, and hands
// them all to the next agent, which re-attaches them as if the runtime had just sent them. While
// no agent runs, the holder's copy keeps the listener attached: trapped calls wait for the next
// agent instead of failing with ENOSYS (the trade the operator opts into with --fd-store).
// Protocol on the holder's socket (AF_UNIX stream, root only), one request per connection:
//   "PUT <len>\n<state json>" with the listener as SCM_RIGHTS: keep it (several per container);
//   "DROP <container id>\n": close every listener kept for that container;
//   "GET\n": the holder sends each kept (state, listener) as "<len>\n<json>" + SCM_RIGHTS, then
//   closes the connection; it keeps them (the next agent may die too).
#pragma once

#include <string>
#include <vector>

namespace gdrproxy::proxy {

struct StoredListener {
  std::string state_json;  // the container process state as the runtime sent it
  int fd = -1;             // owned by the caller
};

class FdStoreClient {
 public:
  // Connects to the holder at `path`, starting one (a detached process of this binary's code)
  // when none answers. Throws gdrproxy::Error when neither works.
  static FdStoreClient connect_or_start(const std::string& path);

  // Every listener the holder keeps (the caller owns the fds).
  std::vector<StoredListener> take_all() const;
  void put(const std::string& state_json, int listener_fd) const;
  void drop(const std::string& container_id) const;
  const std::string& path() const { return path_; }

 private:
  explicit FdStoreClient(std::string path) : path_(std::move(path)) {}
  std::string path_;
};

}  // namespace gdrproxy::proxy
