// The kernel's own struct tcp_info (linux/tcp.h), kept apart from glibc's (netinet/tcp.h):
// the two cannot share a file, and only the kernel's has tcpi_bytes_retrans.
#include <linux/tcp.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstddef>
#include <cstdint>

namespace statlet::testing {

bool SocketBytesRetransmitted(int fd, uint64_t* bytes) {
  tcp_info info{};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return false;
  // A kernel older than the field (4.19) returns a shorter struct.
  if (len < offsetof(tcp_info, tcpi_bytes_retrans) + sizeof(info.tcpi_bytes_retrans)) return false;
  *bytes = info.tcpi_bytes_retrans;
  return true;
}

}  // namespace statlet::testing
