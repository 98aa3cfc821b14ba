// Keeping containers' seccomp listeners across an agent restart. Only the agent holds a
// container's listener (the runtime closes its copy), so an agent that dies takes every
// container's supervision with it. The idea not to miss: a tiny holder process of our own keeps
// a duplicate of each process's listener together with the state it came with, the pidfd the
// agent verified that process through, and its received-id page (proxy/engine/received_ids.h),
// and hands them all to the next agent, which re-attaches them as if the runtime had just sent
// them, through that pidfd (never a pid looked up again: a pid is reused, a pidfd is not), and
// answers the calls the dead agent had received. One entry per process: the holder drops it
// when the process exits or its listener hangs up, so an entry never outlives its process. While
// no agent runs, the holder's copy keeps the listener attached: trapped calls wait for the next
// agent instead of failing with ENOSYS (the trade the operator opts into with --fd-store).
// The agent keeps its own copies of what it put (FdStoreClient::keep), so that a holder that is
// killed while the agent runs is replaced, with every live process's entry, within a second
// (replace_holder_if_gone): otherwise the next agent restart would lose every container. Where
// the holder is another process's to run (--fd-store-external: a container of the agent's pod,
// since the container runtime kills whatever the agent's container leaves), the agent never
// starts one: it waits for that holder, and puts every live entry in each new one that answers.
// The holder also keeps a copy of the agent's own runtime socket, listening: a killed agent's
// socket stays bound, so a runtime that connects while no agent runs waits in its backlog (its
// state and listener queued in the kernel) for the next agent, which takes the socket back,
// instead of being refused. And the agent puts each handed-over listener in the holder as soon as
// it has read it, before adopting it (FORGET when it refuses it): a kill during an adoption loses
// nothing, since the next agent adopts that entry again from the store. Before that, the holder
// itself accepts the runtime's connection and sends the agent a copy, and the agent only peeks
// at it until the state is whole: there is no moment at which a handover is the agent's alone,
// so a kill at any point leaves it (bytes, listener and all) to the next agent, which reads that
// connection again from its first byte.
// Protocol on the holder's socket (AF_UNIX seqpacket, root only), one request per connection:
//   "PUT\n<state json>" with SCM_RIGHTS [listener, pidfd, received-id page]: keep them; the
//   holder answers "KEPT <key>\n";
//   "FORGET <key>\n": close entry <key>'s fds (a re-attach that failed, a refused handover);
//   "GET\n": the holder sends each kept entry as "<key>\n<state json>" + the same three fds, then
//   closes the connection; it keeps them (the next agent may die too);
//   "SOCKET <dev> <ino>\n" with SCM_RIGHTS [runtime socket]: keep it (replacing any), bound at a
//   path that named that file;
//   "SOCKET?\n": the holder answers with the socket request it keeps and the socket, or "NONE\n";
//   "SUBSCRIBE\n": the connection stays open; the holder answers "SERVING <n>\n", sends the n
//   runtime connections it keeps (accepted for an agent that died before reading them whole),
//   then accepts runtimes on the runtime socket and sends each as "CONN <key>\n" with its fd,
//   keeping it until "PUT <key>\n<state json>" (the entry of the state read from it, in one
//   step) or "FORGET <key>\n". A new subscriber replaces the old; none: runtimes wait in the
//   backlog;
//   "CONN\n" with SCM_RIGHTS [a connection the agent accepted itself, with no subscription]:
//   kept the same way; answered "KEPT <key>\n".
#pragma once

#include <array>
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "base/unique_fd.h"
#include "proxy/agent/fd_store_records.h"

namespace gdrproxy::proxy {

struct StoredListener {
  uint64_t key = 0;        // the holder's name for the entry (FORGET)
  std::string state_json;  // the container process state as the runtime sent it
  UniqueFd listener;
  UniqueFd pidfd;  // the process the agent verified at adoption; empty from an older holder
  UniqueFd ids;    // its received-id page; empty from an older holder
};

// A runtime's connection, kept by the holder from its accept until its state was read whole:
// an agent that dies before leaves it to the next, which reads it again from its first byte
// (nothing was consumed from it).
struct StoredConnection {
  uint64_t key = 0;
  UniqueFd conn;
};

// The holder accepting runtimes for this agent (SUBSCRIBE).
struct Subscription {
  UniqueFd socket;    // each connection comes on it as "CONN <key>\n" with its fd
  uint64_t kept = 0;  // how many of the first are ones an earlier agent had not read whole
};

// How long an agent with an external holder waits for it at start: the pod's containers are
// started in order, but the holder's is not waited for.
inline constexpr std::chrono::milliseconds kExternalHolderWait{30000};

class FdStoreClient {
 public:
  // Connects to the holder at `path`, starting one (a detached process of this binary's code)
  // when none answers. Throws gdrproxy::Error when neither works, or when another agent uses the
  // store (one agent per store: a second would take the first's listeners; the line names the
  // first's pid).
  static FdStoreClient connect_or_start(const std::string& path);
  // Connects to the holder at `path` that another process runs (`gdrproxy agent fd-store PATH`),
  // waiting up to `wait` for it to answer; never starts one, now or later (replace_holder_if_gone
  // then waits for the next one). Throws gdrproxy::Error when none answers in time, or when
  // another agent uses the store.
  static FdStoreClient connect_external(const std::string& path, std::chrono::milliseconds wait);

  // The runtime socket the holder keeps, when the file at `path` is still the one it was bound
  // to (a listening AF_UNIX stream socket); else empty (none kept, the path removed or bound
  // again, an older holder). Asks first: it also tells whether the holder names entries.
  UniqueFd take_runtime_socket(const std::string& path);
  // Puts the agent's runtime socket `fd`, bound at `path`, in the holder, and keeps a copy for a
  // holder that has to be replaced.
  void keep_runtime_socket(int fd, const std::string& path);
  // Whether the holder answers a PUT with its key (one of this build, or one that answered
  // take_runtime_socket); false for an older holder, whose entries can only be put once adopted.
  bool names_entries() const { return names_entries_; }
  // Puts one entry [listener, pidfd, received-id page] in the holder, dropping connection entry
  // `replaces` (its state was read from it) in the same step; the key it answered with, nullopt
  // when none answered (no holder, an older one).
  std::optional<uint64_t> put(const std::string& state_json, const std::array<int, 3>& fds,
                              uint64_t replaces = 0) const;
  // Puts a runtime's accepted connection `conn`, its state not yet read, in the holder; its key,
  // nullopt when none answered (no holder, an older one).
  std::optional<uint64_t> keep_connection(int conn) const;
  // Every listener entry the holder keeps.
  std::vector<StoredListener> take_all() const;
  // Has the holder accept runtimes on the runtime socket for this agent and send it each
  // connection, those it kept from before first; nullopt when it does not (none answers, an
  // older one). The agent then accepts none itself: no connection is ever the agent's alone.
  std::optional<Subscription> subscribe() const;
  // The next connection on a subscription, without waiting; nullopt when none is there (or a
  // packet that is not one came), with `ended` set when the holder closed it.
  static std::optional<StoredConnection> next_connection(int subscription, bool& ended);
  // Keeps container `id`'s process entry here (`fds`: copies of its listener, pidfd and
  // received-id page, now this client's) and, unless `in_holder` (re-attached from it), puts it
  // in the holder. Copies of processes that have exited are closed first. False when no holder
  // answered (replace_holder_if_gone then starts one).
  bool keep(const std::string& id, const std::string& state_json, std::array<UniqueFd, 3> fds,
            bool in_holder);
  // Closes the copies kept for container `id` (its session ended: its processes are gone).
  void forget_copies_of(const std::string& id);
  // When no holder answers at the path (it was killed), starts a new one and puts in it every
  // kept entry whose process is alive; how many. nullopt when the holder answered. Throws
  // gdrproxy::Error when no holder can be started. An external store's holder is never started
  // here: the first check that finds none throws (later ones answer nullopt), and the entries go
  // into the next one that answers. A holder that answers on a socket other than the one this
  // client last knew (replaced between two checks) gets them too.
  std::optional<size_t> replace_holder_if_gone();
  void forget(uint64_t key) const;
  // A holder of a build before issue 29 names no entry: it closes every listener of container
  // `id` it keeps ("DROP\n<id>"), so that one refused is not kept waiting for ever.
  void forget_container_in_older_holder(const std::string& id) const;
  const std::string& path() const { return path_; }

 private:
  struct Copy {
    std::string id, state_json;
    std::array<UniqueFd, 3> fds;  // listener, pidfd, received-id page
  };
  FdStoreClient(std::string path, bool names_entries, UniqueFd lock, bool external);
  void forget_exited();
  void put_runtime_socket() const;  // the kept copy, into the holder
  std::string path_;
  bool names_entries_;
  std::vector<Copy> copies_;
  UniqueFd socket_copy_;  // the runtime socket, for a replacement holder
  SocketName socket_name_;
  UniqueFd lock_;  // PATH.lock, write-locked while this agent uses the store
  bool external_;  // the holder is another process's: never started here
  std::optional<SocketName> holder_name_;  // the holder's socket this client last put entries in
  bool holder_lost_ = false;               // an external holder is gone; none answered since
};

}  // namespace gdrproxy::proxy
