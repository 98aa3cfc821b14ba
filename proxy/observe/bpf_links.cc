// libbpf's print hook and link teardown shared by the BPF loaders (see bpf_links.h).
#include "proxy/observe/bpf_links.h"

#include <bpf/libbpf.h>

#include <cstdarg>
#include <system_error>
#include <thread>

namespace gdrproxy::proxy {
namespace {

int silent_print(enum libbpf_print_level, const char*, va_list) {
  return 0;
}

}  // namespace

void silence_libbpf() {
  libbpf_set_print(silent_print);
}

void destroy_links_side_by_side(std::vector<bpf_link*>& links) {
  std::vector<std::thread> detach;
  for (bpf_link* l : links) {
    try {
      detach.emplace_back([l] { bpf_link__destroy(l); });
    } catch (const std::system_error&) {
      bpf_link__destroy(l);  // no thread to spare: one after the other
    }
  }
  for (std::thread& t : detach) t.join();
  links.clear();
}

}  // namespace gdrproxy::proxy
