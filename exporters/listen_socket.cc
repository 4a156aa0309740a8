#include "exporters/listen_socket.h"

#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace statlet {

Status ParseListenAddress(const std::string& address, std::string* host, int* port) {
  size_t colon = address.rfind(':');
  if (colon == std::string::npos) return InvalidArgument("listen address " + address + ": expected host:port");
  std::string h = address.substr(0, colon);
  std::string p = address.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  if (h.empty()) h = "0.0.0.0";
  char* end = nullptr;
  long v = std::strtol(p.c_str(), &end, 10);
  if (p.empty() || *end != '\0' || v < 0 || v > 65535) {
    return InvalidArgument("listen address " + address + ": bad port");
  }
  *host = h;
  *port = static_cast<int>(v);
  return Status::Ok();
}

StatusOr<ListenSocket> OpenListenSocket(const std::string& address, int backlog, const std::string& setting) {
  std::string host;
  int port = 0;
  if (Status s = ParseListenAddress(address, &host, &port); !s.ok())
    return InvalidArgument(setting + ": " + s.message());
  const std::string where = "cannot listen on " + address + " (" + setting + ")";
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  const std::string service = std::to_string(port);
  if (int rc = ::getaddrinfo(host.c_str(), service.c_str(), &hints, &found); rc != 0) {
    return InvalidArgument(where + ": " + ::gai_strerror(rc) + "; give a numeric address or a resolvable host name");
  }
  Status last = Unavailable(where + ": no usable address");
  for (addrinfo* ai = found; ai != nullptr; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
      last = ErrnoStatus(errno, "socket for " + address);
      continue;
    }
    int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
      const int err = errno;
      ::close(fd);
      if (err == EADDRINUSE) {
        last = Unavailable(where + ": address already in use: another statlet, or another program, serves it; " +
                           "stop it or choose another address");
      } else if (err == EACCES) {
        last = Unavailable(where + ": permission denied: ports below 1024 need privileges; choose a higher port");
      } else if (err == EADDRNOTAVAIL) {
        last = Unavailable(where + ": no interface of this host has that address; choose one it has, or :PORT for all");
      } else {
        last = ErrnoStatus(err, where + ": bind");
      }
      continue;
    }
    if (::listen(fd, backlog) != 0) {
      last = ErrnoStatus(errno, "listen on " + address);
      ::close(fd);
      continue;
    }
    sockaddr_storage bound{};
    socklen_t len = sizeof bound;
    ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &len);
    ListenSocket out;
    out.fd = fd;
    out.family = bound.ss_family;
    out.port = bound.ss_family == AF_INET6 ? ntohs(reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port)
                                           : ntohs(reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
    ::freeaddrinfo(found);
    return out;
  }
  ::freeaddrinfo(found);
  return last;
}

}  // namespace statlet
