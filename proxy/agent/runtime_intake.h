// Runtime intake: how a runtime's listener reaches the agent. The idea not to miss: no handover
// is ever this agent's alone. With the fd store, its holder accepts runtimes and sends the agent a
// copy of each connection, whose state is only peeked at; the listener goes to the store (in
// place of the connection) as soon as the state is whole, before anything slow. A kill at any
// point leaves the next agent the connection or the listener. Each connection is read without
// waiting (handshakes.h: a total deadline, a cap on how many are read at once), and only root
// may hand over a listener.
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <functional>
#include <optional>
#include <string>

#include "proxy/agent/agent.h"
#include "proxy/agent/fd_store.h"
#include "proxy/agent/handover.h"
#include "proxy/agent/handshakes.h"
#include "proxy/agent/root_sockets.h"
#include "proxy/agent/state_socket.h"

namespace gdrproxy::proxy {

class RuntimeIntake {
 public:
  // A runtime's whole, checked state and its process's handover (listener, pidfd, id page and
  // fd-store entry), for the agent to adopt.
  using Adopt =
      std::function<void(const ContainerProcessState&, Handover, const std::string& json)>;

  // Takes the runtime socket back from the fd store (`store`, may be null), or binds it.
  RuntimeIntake(boost::asio::io_context& io, const AgentOptions& options, FdStoreClient* store,
                AgentLog log, Adopt adopt);

  // The listeners a previous agent left in the fd store, each adopted as if its runtime had just
  // handed it over (`previous_agent_stuck`: that agent cannot finish exiting, so the calls it had
  // received are failed, not handled again: received_ids.h).
  void reattach(bool previous_agent_stuck);
  // Starts (or resumes) taking runtimes: through the fd store's holder when one can, else on the
  // socket itself. Called again when a new holder runs.
  void serve();
  // Whether the holder accepts for this agent now.
  bool subscribed() const { return subscription_.has_value(); }

 private:
  LocalAcceptor open_runtime_socket();
  void read_subscription();
  void take_subscribed_connections();
  void on_connection(LocalSocket s);
  std::optional<pid_t> root_peer(LocalSocket& s);
  void read_state(LocalSocket s, pid_t pid, uint64_t conn_key);
  void forget_connection(uint64_t conn_key);
  void admit(ReceivedState rs, const std::string& who, uint64_t conn_key);

  boost::asio::io_context& io_;
  const AgentOptions& opts_;
  FdStoreClient* const store_;
  const AgentLog log_;
  const Adopt adopt_;
  LocalAcceptor acceptor_;
  Handshakes handshakes_;
  // The holder accepting runtimes for this agent, or this agent accepting them itself.
  std::optional<boost::asio::posix::stream_descriptor> subscription_;
  bool self_accepting_ = false;
};

}  // namespace gdrproxy::proxy
