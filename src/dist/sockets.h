// The sockets of a multi-process run, private to src/dist (dist.cpp): the few socket calls the
// rendezvous needs beside c10d's own.
#pragma once

#include <chrono>
#include <set>
#include <string>

namespace trainbench::dist_detail {

// Where this rank runs, as the others should name it: the IPv4 address of GLOO_SOCKET_IFNAME
// when set (the interface Gloo talks over), else the host name.
std::string host_address();

// The connected TCP sockets of this process whose peer port is `port`.
std::set<int> sockets_to_port(int port);

// A bound on every send and receive on `fd`, and on unacknowledged data (TCP_USER_TIMEOUT).
void bound_socket(int fd, std::chrono::milliseconds limit);

}  // namespace trainbench::dist_detail
