#include "tests/support/silent_unix_socket.h"

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdio>

namespace statlet::testing {

SilentUnixSocket::SilentUnixSocket(const std::string& name, int backlog) {
  char dir[] = "/tmp/statlet-silent-XXXXXX";
  if (::mkdtemp(dir) == nullptr) return;
  path_ = std::string(dir) + "/" + name;
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path_.c_str());
  if (fd_ < 0 || ::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || ::listen(fd_, backlog) != 0) {
    if (fd_ >= 0) ::close(fd_);
    fd_ = -1;
  }
}

SilentUnixSocket::~SilentUnixSocket() {
  if (fd_ >= 0) ::close(fd_);
  if (path_.empty()) return;
  ::unlink(path_.c_str());
  ::rmdir(path_.substr(0, path_.rfind('/')).c_str());
}

}  // namespace statlet::testing
