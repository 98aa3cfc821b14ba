// Raw ARP request/reply collection over AF_PACKET (see arp_probe.h).
#include "arp_probe.h"

#include <arpa/inet.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <net/if_arp.h>
#include <netinet/if_ether.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <stdexcept>

#include "netns/netns_fd.h"

namespace gdrproxy::netns::test {
namespace {

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

std::string mac_str(const unsigned char* m) {
  char buf[18];
  std::snprintf(buf, sizeof(buf), "%02x:%02x:%02x:%02x:%02x:%02x", m[0], m[1], m[2], m[3], m[4],
                m[5]);
  return buf;
}

}  // namespace

std::vector<std::string> arp_who_has(const std::string& netns_path, const std::string& ifname,
                                     const std::string& sender_ip, const std::string& target_ip,
                                     int window_ms) {
  NetnsFd ns = NetnsFd::open_path(netns_path);
  return ns.run_inside([&] {
    Fd s{socket(AF_PACKET, SOCK_RAW | SOCK_CLOEXEC, htons(ETH_P_ARP))};
    if (s.fd < 0) throw std::runtime_error("AF_PACKET socket: " + std::string(strerror(errno)));
    unsigned ifindex = if_nametoindex(ifname.c_str());
    if (!ifindex) throw std::runtime_error("no interface " + ifname + " in " + netns_path);
    ifreq ifr{};
    std::strncpy(ifr.ifr_name, ifname.c_str(), IFNAMSIZ - 1);
    if (ioctl(s.fd, SIOCGIFHWADDR, &ifr) != 0) throw std::runtime_error("SIOCGIFHWADDR " + ifname);
    sockaddr_ll ll{};
    ll.sll_family = AF_PACKET;
    ll.sll_protocol = htons(ETH_P_ARP);
    ll.sll_ifindex = static_cast<int>(ifindex);
    if (bind(s.fd, reinterpret_cast<sockaddr*>(&ll), sizeof(ll)) != 0)
      throw std::runtime_error("bind AF_PACKET");

    unsigned char frame[42] = {};
    std::memset(frame, 0xff, 6);  // broadcast destination
    std::memcpy(frame + 6, ifr.ifr_hwaddr.sa_data, 6);
    frame[12] = 0x08, frame[13] = 0x06;  // ethertype ARP
    auto* arp = reinterpret_cast<ether_arp*>(frame + 14);
    arp->arp_hrd = htons(ARPHRD_ETHER);
    arp->arp_pro = htons(ETH_P_IP);
    arp->arp_hln = 6;
    arp->arp_pln = 4;
    arp->arp_op = htons(ARPOP_REQUEST);
    std::memcpy(arp->arp_sha, ifr.ifr_hwaddr.sa_data, 6);
    inet_pton(AF_INET, sender_ip.c_str(), arp->arp_spa);
    inet_pton(AF_INET, target_ip.c_str(), arp->arp_tpa);
    ll.sll_halen = 6;
    std::memset(ll.sll_addr, 0xff, 6);
    if (sendto(s.fd, frame, sizeof(frame), 0, reinterpret_cast<sockaddr*>(&ll), sizeof(ll)) < 0)
      throw std::runtime_error("send ARP request: " + std::string(strerror(errno)));

    std::vector<std::string> macs;
    in_addr want{};
    inet_pton(AF_INET, target_ip.c_str(), &want);
    auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(window_ms);
    while (true) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
                      end - std::chrono::steady_clock::now())
                      .count();
      if (left <= 0) break;
      pollfd p{s.fd, POLLIN, 0};
      if (poll(&p, 1, static_cast<int>(left)) <= 0) continue;
      unsigned char buf[1500];
      ssize_t n = recv(s.fd, buf, sizeof(buf), 0);
      if (n < 42) continue;
      auto* r = reinterpret_cast<ether_arp*>(buf + 14);
      if (ntohs(r->arp_op) != ARPOP_REPLY || std::memcmp(r->arp_spa, &want, 4) != 0) continue;
      macs.push_back(mac_str(r->arp_sha));
    }
    return macs;
  });
}

}  // namespace gdrproxy::netns::test
