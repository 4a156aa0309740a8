// Runs a test server binary as a child process: started with a pipe on stdin (closing it
// tells the server to exit), considered up once it prints "ready", stopped by PID.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace statlet::testing {

class ServerProcess {
 public:
  ServerProcess() = default;
  ~ServerProcess();
  ServerProcess(const ServerProcess&) = delete;
  ServerProcess& operator=(const ServerProcess&) = delete;

  // Starts `argv` and waits (up to timeout_ms) for the "ready" line. False on failure,
  // with the reason in error().
  bool Start(const std::vector<std::string>& argv, int timeout_ms = 20000);
  // SIGTERM, then SIGKILL after a grace period; reaps the child. Idempotent.
  void Stop();
  pid_t pid() const { return pid_; }
  const std::string& error() const { return error_; }

 private:
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  std::string error_;
};

// A fresh directory under /tmp, removed with its content on destruction.
class ScratchDir {
 public:
  ScratchDir();
  ~ScratchDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace statlet::testing
