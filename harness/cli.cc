// The `gdrproxy harness` subcommands: option parsing, the teaching help and the one error
// boundary of the harness's verbs (verbs.h); the work is in lifecycle.cc and the verbs' files.
#include "harness/cli.h"

#include <iostream>
#include <memory>

#include "base/escape.h"
#include "harness/output.h"
#include "harness/run_dir.h"
#include "harness/verbs.h"

namespace gdrproxy::harness {
namespace {

constexpr const char* kMainHelp =
    R"(Prepare, attach, inspect and tear down one node of a multi-node NCCL/UCX/NIXL job whose
RoCE rails are moved into a container's network namespace. Rails are chosen by `gdrproxy netns
select`, moved by `gdrproxy netns move` (journal first, multirail ARP profile) and given back by
`gdrproxy netns restore`, all in this process; harness/gdr-harness runs the same verbs (and
`run`, which starts a command in the node's container). Every verb but status needs root.

Typical two-node session (as root on each node; `gdr-harness` = `gdrproxy harness`):
  nodeA# RDMA_IFACES=ens1f0,ens2f0,ens3f0 gdr-harness prepare
         ...  RDMA_PEER_IFACES=ens1f0,ens2f0,ens3f0
  nodeB# RDMA_IFACES=ens1f0,ens2f0,ens3f0 RDMA_PEER_IFACES=ens1f0,ens2f0,ens3f0 gdr-harness prepare
         ...  RDMA_PEER_IFACES=ens1f0,ens2f0          (nodeB lacks ens3f0)
  nodeA# RDMA_IFACES=ens1f0,ens2f0,ens3f0 RDMA_PEER_IFACES=ens1f0,ens2f0 gdr-harness prepare
  both#  gdr-harness run -- all_reduce_perf -b 8 -e 1G -f 2
  both#  gdr-harness teardown

Environment (each verb's --help says which it reads):
  RDMA_IFACES                  comma list of rails to use; wins over RDMA_EXCLUDE_REGEX
  RDMA_EXCLUDE_REGEX           drop matching netdev names (default ^eth[0-9]+$; empty disables)
  RDMA_AUTO_SKIP_NO_IPV4=1     skip rails without an IPv4 address (default: such a rail is an error)
  RDMA_PEER_IFACES             the other node's rails (its prepare prints the line): keep the
                               intersection, so both nodes end with the same set
  ALLOW_BOOTSTRAP_RDMA_IFACE=1 allow a rail that carries the default route / bootstrap address
  RDMA_PLAIN_RAILS=1           stand-in rigs without RDMA devices: every netdev of this namespace
                               (but lo) is a candidate rail, with `ibdev: none`
  GDR_HARNESS_STATE            state directory (default /run/gdr-harness/<node>)
  GDR_HARNESS_NODE             node name (default: SLURMD_NODENAME, else the host name)
  GDR_HARNESS_BOOTSTRAP_IFACE  bootstrap interface (default: the IPv4 default route's interface)
  GDR_HARNESS_BOOTSTRAP_ADDR   CIDR for the container's own bootstrap link (a macvlan)
  GDR_HARNESS_ARP_PROFILE      ARP profile for the moved rails (default multirail, configs/netns/)
  GDRPROXY                     the gdrproxy named to others (default: this binary)
  Launcher identity (shown in status and the plan): SLURM_PROCID, SLURM_LOCALID, SLURM_NODEID,
  SLURMD_NODENAME; OMPI_COMM_WORLD_RANK, OMPI_COMM_WORLD_LOCAL_RANK, OMPI_COMM_WORLD_NODE_RANK;
  PMIX_RANK. Without them the host name names the node.

Exit status: 0 success, 1 failure, 2 usage error, 3 prepare selected no rail; 125 attach could
not set the rails up.
Example: gdrproxy harness status)";

constexpr const char* kPrepareHelp = R"(Choose this node's rails and write the node's plan.

Rules (those of `gdrproxy netns select`, applied in this order; each dropped rail gets a line):
  1. candidates are netdevs backed by an RDMA device; a name in RDMA_IFACES that no RDMA device
     backs is accepted as a plain rail (`ibdev: none`), as is every netdev with RDMA_PLAIN_RAILS=1
  2. RDMA_EXCLUDE_REGEX (default ^eth[0-9]+$, empty disables) drops names not in RDMA_IFACES
  3. a non-empty RDMA_IFACES keeps only its names
  4. a netdev absent from this network namespace is skipped
  5. a rail without IPv4 is an error, or skipped with RDMA_AUTO_SKIP_NO_IPV4=1
  6. with RDMA_PEER_IFACES only names the peer also has stay
  7. the default-route / bootstrap interface is skipped (an error if RDMA_IFACES names it)
     unless ALLOW_BOOTSTRAP_RDMA_IFACE=1
Writes $GDR_HARNESS_STATE/plan.json (default /run/gdr-harness/<node>/plan.json) and, where a
rail has an RDMA device, the synthetic sysfs under .../sysfs (snapshot, tree with live ports,
mount plan); not where one is soft-RoCE (rxe: no PCI function to model, a line says so), whose
containers get a fresh sysfs. Ends with a summary (netdevs, ibdevs, GID index per HCA,
NCCL_IB_HCA) and the line RDMA_PEER_IFACES=... to give the other node's prepare, then runs
`gdrproxy doctor --json` with the plan's NCCL environment and keeps its report as
<state>/doctor.json (one verdict line here; `gdrproxy doctor` prints each finding and its fix).
Running prepare again replaces the plan (refused while a run holds the rails). With several
tasks per node only local rank 0 prepares.

Example: gdrproxy harness prepare
More:
  RDMA_IFACES=ens1f0,ens2f0 gdrproxy harness prepare
  RDMA_EXCLUDE_REGEX='^(eth|docker)[0-9]+$' RDMA_AUTO_SKIP_NO_IPV4=1 gdrproxy harness prepare
  RDMA_PEER_IFACES=ens1f0,ens2f0 gdrproxy harness prepare   # the line the other node printed
  srun --ntasks-per-node=1 gdrproxy harness prepare         # every node of a Slurm allocation

Reads: RDMA_IFACES RDMA_EXCLUDE_REGEX RDMA_AUTO_SKIP_NO_IPV4 RDMA_PEER_IFACES
ALLOW_BOOTSTRAP_RDMA_IFACE RDMA_PLAIN_RAILS GDR_HARNESS_STATE GDR_HARNESS_NODE
GDR_HARNESS_BOOTSTRAP_IFACE GDR_HARNESS_ARP_PROFILE GDRPROXY and the launcher's rank variables.
Exit status: 0 plan written, 1 failure, 2 usage error, 3 no rail selected.)";

constexpr const char* kStatusHelp = R"(What is prepared and running on this node.

Prints the node's identity (node name, launcher, ranks), the state directory, the plan's rails
(netdev, ibdev, GID index, IPv4), whether a holder of the rails is alive (by pid and start time:
a reused pid or a zombie is not), the rails a journal says are moved, and where each of them is
now. Exit status 0 (also when nothing is prepared). Needs no root.

Example: gdrproxy harness status
Reads: GDR_HARNESS_STATE GDR_HARNESS_NODE and the launcher's rank variables.)";

constexpr const char* kTeardownHelp =
    R"(Put this node back exactly as it was and remove the state directory.

Stops a run still alive (SIGTERM, then SIGKILL after 10 s), deletes the containers and stops the
agent a killed run left, stops processes left in the rail namespace, gives back the rails of a
journal left by a killed run (`gdrproxy netns restore`), unpins the container's network
namespace and removes the state directory. Running it again finds nothing to do. If a rail
cannot be given back the state directory is kept (with the journal) and the exit status is 1.

Example: gdrproxy harness teardown
Reads: GDR_HARNESS_STATE GDR_HARNESS_NODE.)";

constexpr const char* kAttachHelp =
    R"(Hold this node's rails for processes another program starts, and say where.

attach sets up what `run` sets up for a container (the pinned network namespace holding the
plan's rails, moved with the ARP profile; the bootstrap link with GDR_HARNESS_BOOTSTRAP_ADDR), or
joins it when other attached keys or per-rank runs hold it, and registers KEY as held by process
PID; with --prepare a node without a plan is prepared first (once, under a lock; its output
goes to stderr). It prints, on stdout, lines the caller acts on:
  netns=PATH            the network namespace the processes enter (setns)
  sysfs_plan=PATH       the plan's synthetic sysfs (its mount plan), for the processes' /sys
                        (`gdrproxy sysfs mount --plan PATH --at /sys`); absent without one
  uverbs=NODE           a uverbs node of the plan's RDMA devices, read after the move (one a line)
  gdrproxy=PATH         the gdrproxy to run for them (absolute)
  env=NAME=VALUE        NCCL_IB_HCA, NCCL_SOCKET_IFNAME and GDR_HARNESS_NODE for them
detach drops KEY; the last key to leave gives the rails back. If PID dies without a detach,
the next attach reclaims: when every owner recorded on the node (keys, ranks, a run) is dead,
checked by pid and start time so a reused pid does not count, and a zombie (killed, not yet
reaped) is dead, it gives their rails back and removes their containers first, saying so in one
line on stderr, then attaches as on a clean node; while a live owner remains it joins as usual.
`teardown` also gives them back. KEY: letters, digits, '.', '_' and '-' (the Slurm plugin uses
step-<job>.<step>).

Example: gdrproxy harness attach --prepare --key step-42.0 --owner $$)";

constexpr const char* kDetachHelp =
    R"(Drop KEY's hold on this node's rails; the last holder to leave gives them back.

Deletes KEY's container if it has one, removes its owner file and, when no other holder is
alive, stops the node's agent, deletes the bootstrap link, gives the rails back (`gdrproxy netns
restore`) and removes <state>/run. A KEY that holds nothing is a line and status 0. If a rail
cannot be given back the journal is kept (status 1; `teardown` tries again).

Example: gdrproxy harness detach --key step-42.0)";

// The one error boundary: a verb's failure is one line and its status.
template <typename Fn>
void guarded(int& exit_code, Fn fn) {
  try {
    exit_code = fn();
  } catch (const UsageError& e) {
    std::cerr << kProg << ": " << gdrproxy::printable(e.what()) << " (see " << kProg << " "
              << e.verb() << " --help)\n";
    exit_code = 2;
  } catch (const Failure& f) {
    std::cerr << kProg << ": error: " << gdrproxy::printable(f.what()) << "\n";
    exit_code = f.status();
  } catch (const std::exception& e) {
    std::cerr << kProg << ": error: " << gdrproxy::printable(e.what()) << "\n";
    exit_code = 1;
  }
}

void check_key(const std::string& key, bool run, const std::string& verb) {
  if (!valid_key(key) || (key == "node" && !run))
    throw UsageError("--key '" + key + "': letters, digits, '.', '_', '-' (and not 'node')", verb);
}

}  // namespace

void register_commands(CLI::App& app, int& exit_code) {
  auto* h = app.add_subcommand("harness", kMainHelp);
  h->require_subcommand(1);

  auto* prep = h->add_subcommand("prepare", kPrepareHelp);
  prep->callback([&exit_code] {
    guarded(exit_code, [] {
      const Context c = make_context(process_environment());
      return prepare(c, std::cout);
    });
  });

  auto* stat = h->add_subcommand("status", kStatusHelp);
  stat->callback([&exit_code] {
    guarded(exit_code, [] {
      const Identity id = identify(process_environment(), this_host());
      Context c;
      c.id = id;
      return status(c, std::cout);
    });
  });

  auto* tear = h->add_subcommand("teardown", kTeardownHelp);
  tear->callback([&exit_code] {
    guarded(exit_code, [] { return teardown(make_context(process_environment())); });
  });

  auto args = std::make_shared<AttachArgs>();
  auto owner = std::make_shared<std::string>();
  auto* att = h->add_subcommand("attach", kAttachHelp);
  att->add_option("--key", args->key, "The holder's name (step-<job>.<step>)")->required();
  att->add_option("--owner", *owner, "The pid of the process that holds the key")->required();
  att->add_flag("--prepare", args->prepare, "Prepare a node that has no plan first");
  att->add_flag("--run", args->run, "Held by a `gdr-harness run` (key node or rank-N)")->group("");
  att->callback([&exit_code, args, owner] {
    guarded(exit_code, [&] {
      check_key(args->key, args->run, "attach");
      if (owner->empty() || owner->find_first_not_of("0123456789") != std::string::npos ||
          (*owner)[0] == '0' || owner->size() > 9)
        throw UsageError("--owner needs the pid of the process that holds the key", "attach");
      args->owner = static_cast<pid_t>(std::stol(*owner));
      return attach(make_context(process_environment()), *args, std::cout);
    });
  });

  // For harness/gdr-harness's `run` (hidden): who this is, and the owner record of its agent.
  auto* ident = h->add_subcommand("identity", "Print node=, host=, state=, rank= lines");
  ident->group("");
  ident->callback([&exit_code] {
    guarded(exit_code, [] {
      const Identity id = identify(process_environment(), this_host());
      std::cout << "node=" << id.node << "\nhost=" << id.host << "\nstate=" << id.paths.state
                << "\nlauncher=" << id.launcher << "\nrank=" << id.rank
                << "\nlocal_rank=" << id.local_rank << "\n";
      return 0;
    });
  });
  auto owner_path = std::make_shared<std::string>();
  auto owner_pid = std::make_shared<int>(0);
  auto* own =
      h->add_subcommand("owner", "Status 0 when FILE names a live process; with --pid, write it");
  own->group("");
  own->add_option("file", *owner_path, "An owner file (pid and start time)")->required();
  own->add_option("--pid", *owner_pid, "Record this process in FILE");
  own->callback([&exit_code, owner_path, owner_pid] {
    guarded(exit_code, [&] {
      if (*owner_pid == 0) return owner_file_alive(*owner_path) ? 0 : 1;
      const auto r = owner_record_of(*owner_pid);
      if (!r) throw Failure("process " + std::to_string(*owner_pid) + " is not alive");
      write_owner_file(*owner_path, *r);
      return 0;
    });
  });

  auto key = std::make_shared<std::string>();
  auto run = std::make_shared<bool>(false);
  auto* det = h->add_subcommand("detach", kDetachHelp);
  det->add_option("--key", *key, "The holder's name")->required();
  det->add_flag("--run", *run, "Held by a `gdr-harness run` (key node or rank-N)")->group("");
  det->callback([&exit_code, key, run] {
    guarded(exit_code, [&] {
      check_key(*key, *run, "detach");
      return detach(make_context(process_environment()), *key);
    });
  });
}

}  // namespace gdrproxy::harness
