// The sockets of a multi-process run (see sockets.h): this rank's address, the store client's
// sockets and the deadline on them.
#include "sockets.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>

namespace trainbench::dist_detail {

// Where this rank runs, as the others should name it: the IPv4 address of GLOO_SOCKET_IFNAME
// when set (the interface Gloo talks over), else the host name.
std::string host_address() {
  const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
  if (ifname && *ifname) {
    ifaddrs* list = nullptr;
    std::string found;
    if (getifaddrs(&list) == 0) {
      for (ifaddrs* a = list; a && found.empty(); a = a->ifa_next) {
        if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || ifname != std::string(a->ifa_name))
          continue;
        char text[INET_ADDRSTRLEN] = {0};
        const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
        if (inet_ntop(AF_INET, &in->sin_addr, text, sizeof(text))) found = text;
      }
      freeifaddrs(list);
    }
    if (!found.empty()) return found;
  }
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  return host;
}

// The connected TCP sockets of this process whose peer port is `port`.
std::set<int> sockets_to_port(int port) {
  std::set<int> out;
  DIR* dir = opendir("/proc/self/fd");
  if (!dir) return out;
  while (const dirent* e = readdir(dir)) {
    const int fd = std::atoi(e->d_name);
    if (e->d_name[0] < '0' || e->d_name[0] > '9' || fd == dirfd(dir)) continue;
    int type = 0;
    socklen_t len = sizeof(type);
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) != 0 || type != SOCK_STREAM) continue;
    sockaddr_storage peer{};
    len = sizeof(peer);
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&peer), &len) != 0) continue;
    const int p = peer.ss_family == AF_INET
                      ? ntohs(reinterpret_cast<const sockaddr_in*>(&peer)->sin_port)
                  : peer.ss_family == AF_INET6
                      ? ntohs(reinterpret_cast<const sockaddr_in6*>(&peer)->sin6_port)
                      : -1;
    if (p == port) out.insert(fd);
  }
  closedir(dir);
  return out;
}

// A bound on every send and receive on `fd`, and on unacknowledged data (TCP_USER_TIMEOUT).
void bound_socket(int fd, std::chrono::milliseconds limit) {
  timeval tv{};
  tv.tv_sec = static_cast<time_t>(limit.count() / 1000);
  tv.tv_usec = static_cast<suseconds_t>((limit.count() % 1000) * 1000);
  const unsigned int ms = static_cast<unsigned int>(limit.count());
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
  setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &ms, sizeof(ms));
}

}  // namespace trainbench::dist_detail
