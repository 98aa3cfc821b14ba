// What every BPF object gdrproxy embeds needs from libbpf, in one place. The idea not to miss:
// destroying a link detaches its program, and each detach waits for an RCU grace period in the
// kernel (40-55 ms each on a 2-vCPU VM); destroyed side by side the links share one, instead of
// adding their sum to every exit.
#pragma once

#include <vector>

struct bpf_link;

namespace gdrproxy::proxy {

// libbpf prints nothing: every loader says in its own one line why it could not load.
void silence_libbpf();

// Destroys every link (one thread each where threads can be had) and clears the list.
void destroy_links_side_by_side(std::vector<bpf_link*>& links);

}  // namespace gdrproxy::proxy
