// Child processes for live tests (statlet, prometheus, node_exporter): started with their
// output in a log file, stopped by PID with SIGTERM (then SIGKILL after a deadline).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace statlet::testing {

class ChildProcess {
 public:
  ChildProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~ChildProcess();
  pid_t pid() const { return pid_; }
  bool running();
  // SIGTERM, wait up to `grace`, then SIGKILL. Returns the exit status as waitpid gives it.
  int Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(5000));

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

// Polls `ready` every 50 ms until it is true or `deadline` passes.
bool WaitFor(const std::function<bool()>& ready, std::chrono::milliseconds deadline);
// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLoopbackPort();
std::string ReadWholeFile(const std::string& path);

}  // namespace statlet::testing
