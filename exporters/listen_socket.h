// A TCP listening socket held exclusively: SO_REUSEADDR (a restart may bind while old
// connections sit in TIME_WAIT) but never SO_REUSEPORT, so a second process on the same
// address fails to start instead of silently taking half the scrapes. The error names the
// address and says what to check.
#pragma once

#include <string>

#include "base/status.h"

namespace statlet {

// Parses "host:port", ":port" (all interfaces) or "[v6]:port".
Status ParseListenAddress(const std::string& address, std::string* host, int* port);

struct ListenSocket {
  int fd = -1;
  int family = 0;  // AF_INET or AF_INET6
  int port = 0;    // the bound port (the kernel's choice when 0 was asked for)
};

// Binds and listens on `address` (ParseListenAddress form) with an accept queue of
// `backlog` connections. The fd is non-blocking and close-on-exec; the caller owns it.
// `setting` names where the address came from (e.g. "--web.listen-address"), for errors.
StatusOr<ListenSocket> OpenListenSocket(const std::string& address, int backlog, const std::string& setting);

}  // namespace statlet
