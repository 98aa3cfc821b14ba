// What every BPF object gdrproxy embeds needs from libbpf and the kernel, in one place: opening
// and loading it, telling its programs which pid namespace to report ids in, attaching them, and
// taking them down. The idea not to miss: destroying a link detaches its program, and each detach
// waits for an RCU grace period in the kernel (40-55 ms each on a 2-vCPU VM); destroyed side by
// side the links share one, instead of adding their sum to every exit, and a process about to exit
// leaves them to a child (detach_bpf_after_exit) so that its exit status is not held back at all.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

struct bpf_link;
struct bpf_object;

namespace gdrproxy::proxy {

// libbpf prints nothing: every loader says in its own one line why it could not load.
void silence_libbpf();

// Opens the embedded object (`size` bytes at `bytes`), loads it into the kernel and writes this
// process's pid namespace into its "supervisor_pidns" map, which every program reads before it
// reports a caller's ids. On failure returns nullptr, with nothing left open, and sets `why` to
// one line: "<what> open|load|supervisor_pidns: <reason>" (`eperm_hint` follows a load refused
// with EPERM).
bpf_object* load_embedded_bpf(const void* bytes, size_t size, const std::string& what,
                              std::string& why, const char* eperm_hint = "");

// Attaches every program of `obj` (as LSM programs when `lsm`) and appends its link to `links`;
// false with `why` ("<what> attach <program>: <reason>") at the first that fails.
bool attach_every_program(bpf_object* obj, bool lsm, std::vector<bpf_link*>& links,
                          const std::string& what, std::string& why);

// Destroys every link (one thread each where threads can be had) and clears the list.
void destroy_links_side_by_side(std::vector<bpf_link*>& links);

// libbpf finds tracepoint ids through tracefs. Where this mount namespace has none mounted,
// `fn` (the object's load and attach) runs on a thread of its own, in a mount namespace of its
// own where tracefs is mounted: the host's mount table never changes, so two attaches at once (in
// one process or two) never take tracefs away from each other. Elsewhere `fn` runs here. What
// `fn` throws is thrown here.
void with_tracefs(const std::function<void()>& fn);

// For a process about to exit (the end of `gdrproxy run`): detaching programs waits for RCU grace
// periods in the kernel, about 0.45 s on a 32-CPU host, which would hold back the run's exit
// status. A child process keeps this process's BPF and perf-event fds (and no other fd, so no
// pipe of the caller stays open), waits until this process has exited, and exits, which detaches
// them. Destroying the loaders afterwards is then quick. Does nothing where no such fd is open.
void detach_bpf_after_exit();

}  // namespace gdrproxy::proxy
