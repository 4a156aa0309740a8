// Child processes for live tests and benches: forked workloads that start only once they
// sit in their cgroup, idle "container" processes, binaries run as servers (statlet,
// prometheus, node_exporter) with their output in a log, and one-shot commands. Every
// child is killed and reaped by its owner, also when a test fails half way.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace statlet::testing {

class LiveCgroup;

class Child {
 public:
  enum Then { kStays, kExits };
  // Forks a child that waits for Start(), runs `body` and reports its value (Result), then
  // pauses until killed (kStays: its cgroup keeps it) or exits with the value's low 8
  // bits as its status (kExits).
  explicit Child(std::function<uint64_t()> body, Then then = kStays);
  // A child holding only stdio that sleeps until killed, as an idle container's process
  // would; it needs no Start().
  static Child Sleeper();
  Child(Child&& other) noexcept;
  Child& operator=(Child&&) = delete;
  ~Child();

  pid_t pid() const { return pid_; }
  bool Start();
  // Moves the child into `cg`, then starts it.
  bool StartIn(LiveCgroup& cg);
  // The body's value; none when the child died or `timeout` passed first.
  std::optional<uint64_t> Result(std::chrono::milliseconds timeout = std::chrono::seconds(30));
  // The wait status once the child exited; -1 (the child then killed) when `timeout`
  // passes first.
  int Wait(std::chrono::milliseconds timeout);
  // SIGKILL and reap; pid() stays as it was. Idempotent.
  void Kill();

 private:
  Child() = default;

  pid_t pid_ = -1;
  int go_fd_ = -1;
  int result_fd_ = -1;
  bool reaped_ = false;
};

// A binary run as a child process with stdout and stderr in `log_path`, stopped by pid.
// Starts `argv` (argv[0] looked up on PATH when it has no '/') with stdout and stderr
// appended to `log` and no signal blocked; its pid (-1 when fork failed). The caller waits.
pid_t SpawnLogged(const std::vector<std::string>& argv, const std::string& log, bool truncate = false);

class BinaryProcess {
 public:
  BinaryProcess(const std::vector<std::string>& argv, const std::string& log_path);
  ~BinaryProcess();
  BinaryProcess(const BinaryProcess&) = delete;
  BinaryProcess& operator=(const BinaryProcess&) = delete;

  pid_t pid() const { return pid_; }
  bool running();
  // SIGTERM, wait up to `grace`, then SIGKILL. The wait status as waitpid gives it.
  int Stop(std::chrono::milliseconds grace = std::chrono::seconds(5));

 private:
  pid_t pid_ = -1;
  int status_ = -1;
};

// A task's scheduler account (/proc/<pid>/schedstat, summed over its threads): time run,
// time spent waiting on a run queue, and the number of times it was put on a CPU.
struct SchedStat {
  uint64_t run_ns = 0, wait_ns = 0, arrivals = 0;
};
std::optional<SchedStat> ReadSchedStat(pid_t pid);
// Waits until every thread of `pid` sleeps (state S in /proc/<pid>/task/*/stat): from then
// on its scheduler account does not move until something wakes it.
bool WaitUntilSleeping(pid_t pid, std::chrono::milliseconds timeout);

// Runs a command (argv[0] looked up in PATH) with its output discarded; its exit code, or
// -1 when it did not exit normally.
int RunCommand(const std::vector<std::string>& argv);
// Runs argv (PATH searched) and returns what it wrote to stdout; "" when it failed.
std::string CommandOutput(const std::vector<std::string>& argv);

// CPU time of a live process in ns, summed over its threads' /proc/<pid>/task/*/schedstat
// (the scheduler's own account, ns precision; threads that exited are not counted).
uint64_t ProcessCpuNs(pid_t pid);

// A TCP port on 127.0.0.1 that was free a moment ago.
int FreeLoopbackPort();
std::string ReadWholeFile(const std::string& path);

}  // namespace statlet::testing
