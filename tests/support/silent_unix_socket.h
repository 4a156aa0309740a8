// A unix socket that listens and never accepts: connections wait in its backlog and get no
// answer. It stands for a runtime that hangs, or for something else serving a path.
#pragma once

#include <string>

namespace statlet::testing {

class SilentUnixSocket {
 public:
  // Binds <a fresh temporary directory>/<name>; ok() says whether it listens.
  explicit SilentUnixSocket(const std::string& name, int backlog = 64);
  ~SilentUnixSocket();
  SilentUnixSocket(const SilentUnixSocket&) = delete;
  SilentUnixSocket& operator=(const SilentUnixSocket&) = delete;

  bool ok() const { return fd_ >= 0; }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  int fd_ = -1;
};

}  // namespace statlet::testing
