// Unix socket endpoints: parsing `unix:///path` and preparing a path to listen on.
#pragma once

#include <string>

#include "base/status.h"

namespace statlet {

// "unix:///run/x.sock", "unix:/run/x.sock" or "/run/x.sock" -> "/run/x.sock". Other
// schemes (tcp://, npipe://) and relative or over-long paths are INVALID_ARGUMENT.
StatusOr<std::string> ParseUnixEndpoint(const std::string& endpoint);

// Makes `path` ready for bind(): creates the parent directory (0755) if missing and
// removes a stale socket file — only a socket nobody accepts connections on. A live
// socket is UNAVAILABLE ("in use"), any other kind of file INVALID_ARGUMENT.
Status PrepareListenPath(const std::string& path);

// True when something accepts connections on the unix socket at `path`.
bool SocketIsLive(const std::string& path);

}  // namespace statlet
