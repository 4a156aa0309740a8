// Both ends of a TCP transfer for the network probe tests: a whole payload sent, and
// received to its end.
#pragma once

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace statlet::testing {

// The payload bytes the socket `fd` has sent more than once (tcpi_bytes_retrans); false
// when the kernel does not say (tests/bpf/tcp_retrans.cc).
bool SocketBytesRetransmitted(int fd, uint64_t* bytes);

// Connects to `to`, writes `payload` bytes, half-closes and reads until the peer closes
// (the peer closes once it has read everything, so every byte arrived), then takes the
// socket's TCP_INFO into *info (and, when asked, the bytes it retransmitted into *retrans).
// Returns 0, or a small error code: 4 connect, 5 write, 6 getsockopt.
inline int SendAndDrain(const sockaddr_in& to, size_t payload, tcp_info* info, uint64_t* retrans = nullptr) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(s, reinterpret_cast<const sockaddr*>(&to), sizeof(to)) != 0) {
    close(s);
    return 4;
  }
  std::vector<char> chunk(65536, 's');
  for (size_t sent = 0; sent < payload;) {
    ssize_t n = write(s, chunk.data(), std::min(chunk.size(), payload - sent));
    if (n <= 0) {
      close(s);
      return 5;
    }
    sent += static_cast<size_t>(n);
  }
  shutdown(s, SHUT_WR);
  char c;
  while (read(s, &c, 1) > 0) {
  }
  *info = tcp_info{};
  socklen_t len = sizeof(*info);
  int rc = getsockopt(s, IPPROTO_TCP, TCP_INFO, info, &len) == 0 ? 0 : 6;
  if (rc == 0 && retrans != nullptr && !SocketBytesRetransmitted(s, retrans)) rc = 6;
  close(s);
  return rc;
}

// Accepts one connection on the listening socket `ls`, reads it to EOF and closes it;
// the bytes read (0 when no connection came).
inline uint64_t AcceptAndDrain(int ls) {
  int s = accept(ls, nullptr, nullptr);
  if (s < 0) return 0;
  uint64_t total = 0;
  char buf[65536];
  for (ssize_t n; (n = read(s, buf, sizeof(buf))) > 0;) total += static_cast<uint64_t>(n);
  close(s);
  return total;
}

}  // namespace statlet::testing
