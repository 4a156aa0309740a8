#include "base/unix_socket.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

namespace statlet {

StatusOr<std::string> ParseUnixEndpoint(const std::string& endpoint) {
  std::string path;
  if (endpoint.rfind("unix://", 0) == 0) {
    path = endpoint.substr(7);
  } else if (endpoint.rfind("unix:", 0) == 0) {
    path = endpoint.substr(5);
  } else if (endpoint.find("://") != std::string::npos) {
    return InvalidArgument("endpoint \"" + endpoint + "\": only unix:// endpoints are supported");
  } else {
    path = endpoint;
  }
  if (path.empty() || path[0] != '/') {
    return InvalidArgument("endpoint \"" + endpoint + "\": the socket path must be absolute");
  }
  if (path.size() >= sizeof(sockaddr_un{}.sun_path)) {
    return InvalidArgument("endpoint \"" + endpoint + "\": socket path longer than " +
                           std::to_string(sizeof(sockaddr_un{}.sun_path) - 1) + " bytes");
  }
  return path;
}

bool SocketIsLive(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, path.c_str(), sizeof(addr.sun_path) - 1);
  bool live = connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
  close(fd);
  return live;
}

namespace {

Status MakeParents(const std::string& path) {
  auto slash = path.rfind('/');
  if (slash == 0 || slash == std::string::npos) return Status::Ok();
  std::string dir = path.substr(0, slash);
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {
    return S_ISDIR(st.st_mode) ? Status::Ok() : InvalidArgument(dir + " exists and is not a directory");
  }
  if (Status s = MakeParents(dir); !s.ok()) return s;
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus(errno, "mkdir " + dir);
  return Status::Ok();
}

}  // namespace

Status PrepareListenPath(const std::string& path) {
  if (Status s = MakeParents(path); !s.ok()) return s;
  struct stat st;
  if (lstat(path.c_str(), &st) != 0) {
    if (errno == ENOENT) return Status::Ok();
    return ErrnoStatus(errno, "stat " + path);
  }
  if (!S_ISSOCK(st.st_mode)) {
    return InvalidArgument(path + " exists and is not a socket; refusing to replace it");
  }
  if (SocketIsLive(path)) {
    return Unavailable(path + " is in use: another process accepts connections on it");
  }
  if (unlink(path.c_str()) != 0 && errno != ENOENT) return ErrnoStatus(errno, "unlink stale socket " + path);
  return Status::Ok();
}

}  // namespace statlet
