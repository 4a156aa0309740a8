#include "tests/support/child_process.h"

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <thread>

#include "tests/support/live_cgroup.h"
#include "tests/support/wait_for.h"

namespace statlet::testing {

Child::Child(std::function<uint64_t()> body, Then then) {
  int go[2], res[2];
  if (::pipe2(go, O_CLOEXEC) != 0) return;
  if (::pipe2(res, O_CLOEXEC) != 0) {
    ::close(go[0]);
    ::close(go[1]);
    return;
  }
  pid_ = ::fork();
  if (pid_ == 0) {
    ::close(go[1]);
    ::close(res[0]);
    char c;
    if (::read(go[0], &c, 1) != 1) ::_exit(120);  // the parent gave up
    const uint64_t v = body();
    if (::write(res[1], &v, sizeof v) != sizeof v) ::_exit(121);
    if (then == kExits) ::_exit(static_cast<int>(v & 0xff));
    while (true) ::pause();
  }
  ::close(go[0]);
  ::close(res[1]);
  if (pid_ < 0) {
    ::close(go[1]);
    ::close(res[0]);
    return;
  }
  go_fd_ = go[1];
  result_fd_ = res[0];
}

Child Child::Sleeper() {
  Child c;
  c.pid_ = ::fork();
  if (c.pid_ == 0) {
    // Not the parent's sockets, pipes and kept files: only what a container's process has.
    ::syscall(SYS_close_range, 3u, ~0u, 0u);
    while (true) ::pause();
  }
  return c;
}

Child::Child(Child&& other) noexcept
    : pid_(other.pid_), go_fd_(other.go_fd_), result_fd_(other.result_fd_), reaped_(other.reaped_) {
  other.pid_ = -1;
  other.go_fd_ = other.result_fd_ = -1;
}

Child::~Child() {
  Kill();
  if (go_fd_ >= 0) ::close(go_fd_);
  if (result_fd_ >= 0) ::close(result_fd_);
}

bool Child::Start() {
  if (go_fd_ < 0) return false;
  const bool started = ::write(go_fd_, "g", 1) == 1;
  ::close(go_fd_);
  go_fd_ = -1;
  return started;
}

bool Child::StartIn(LiveCgroup& cg) { return pid_ > 0 && cg.Add(pid_) && Start(); }

std::optional<uint64_t> Child::Result(std::chrono::milliseconds timeout) {
  if (result_fd_ < 0) return std::nullopt;
  struct pollfd p = {result_fd_, POLLIN, 0};
  if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1) return std::nullopt;
  uint64_t v = 0;
  if (::read(result_fd_, &v, sizeof v) != sizeof v) return std::nullopt;  // died first
  return v;
}

int Child::Wait(std::chrono::milliseconds timeout) {
  if (pid_ <= 0 || reaped_) return -1;
  int status = -1;
  const bool exited = WaitFor([&] { return ::waitpid(pid_, &status, WNOHANG) == pid_; }, timeout);
  if (!exited) {
    Kill();
    return -1;
  }
  reaped_ = true;
  return status;
}

void Child::Kill() {
  if (pid_ <= 0 || reaped_) return;
  ::kill(pid_, SIGKILL);
  ::waitpid(pid_, nullptr, 0);
  reaped_ = true;
}

pid_t SpawnLogged(const std::vector<std::string>& argv, const std::string& log, bool truncate) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | (truncate ? O_TRUNC : O_APPEND) | O_CLOEXEC, 0644);
    if (fd >= 0) {
      ::dup2(fd, 1);
      ::dup2(fd, 2);
    }
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  return pid;
}

BinaryProcess::BinaryProcess(const std::vector<std::string>& argv, const std::string& log_path)
    : pid_(SpawnLogged(argv, log_path, /*truncate=*/true)) {}

BinaryProcess::~BinaryProcess() { Stop(std::chrono::seconds(2)); }

bool BinaryProcess::running() {
  if (pid_ <= 0) return false;
  int st;
  if (::waitpid(pid_, &st, WNOHANG) == pid_) {
    status_ = st;
    pid_ = -1;
    return false;
  }
  return true;
}

int BinaryProcess::Stop(std::chrono::milliseconds grace) {
  if (!running()) return status_;
  ::kill(pid_, SIGTERM);
  if (!WaitFor([&] { return !running(); }, grace)) {
    ::kill(pid_, SIGKILL);
    ::waitpid(pid_, &status_, 0);
    pid_ = -1;
  }
  return status_;
}

int RunCommand(const std::vector<std::string>& argv) {
  pid_t pid = ::fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      ::dup2(devnull, 1);
      ::dup2(devnull, 2);  // a failed first choice (e.g. netem) is expected on some kernels
    }
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string CommandOutput(const std::vector<std::string>& argv) {
  int out[2];
  if (::pipe2(out, O_CLOEXEC) != 0) return {};
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(out[0]);
    ::close(out[1]);
    return {};
  }
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::dup2(out[1], 1);
    int devnull = ::open("/dev/null", O_WRONLY);
    if (devnull >= 0) ::dup2(devnull, 2);
    ::execvp(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  std::string text;
  char buf[4096];
  for (ssize_t n; (n = ::read(out[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<size_t>(n));
  ::close(out[0]);
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return {};
  return text;
}

std::optional<SchedStat> ReadSchedStat(pid_t pid) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return std::nullopt;
  SchedStat total;
  bool any = false;
  while (const dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    std::ifstream f(dir + "/" + e->d_name + "/schedstat");
    SchedStat t;
    if (f >> t.run_ns >> t.wait_ns >> t.arrivals) {
      total.run_ns += t.run_ns;
      total.wait_ns += t.wait_ns;
      total.arrivals += t.arrivals;
      any = true;
    }
  }
  ::closedir(d);
  if (!any) return std::nullopt;
  return total;
}

bool WaitUntilSleeping(pid_t pid, std::chrono::milliseconds timeout) {
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  return WaitFor(
      [&] {
        DIR* d = ::opendir(dir.c_str());
        if (d == nullptr) return false;
        bool all = true, any = false;
        while (const dirent* e = ::readdir(d)) {
          if (e->d_name[0] == '.') continue;
          std::ifstream f(dir + "/" + e->d_name + "/stat");
          std::string stat((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
          const size_t paren = stat.rfind(')');  // "pid (comm) S ..."
          any = true;
          if (paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'S') all = false;
        }
        ::closedir(d);
        return any && all;
      },
      timeout);
}

uint64_t ProcessCpuNs(pid_t pid) {
  uint64_t total = 0;
  const std::string dir = "/proc/" + std::to_string(pid) + "/task";
  if (DIR* d = ::opendir(dir.c_str())) {
    while (const dirent* e = ::readdir(d)) {
      if (e->d_name[0] == '.') continue;
      std::ifstream f(dir + "/" + e->d_name + "/schedstat");
      uint64_t run = 0;  // field 1: time spent on the CPU, ns
      if (f >> run) total += run;
    }
    ::closedir(d);
  }
  return total;
}

int FreeLoopbackPort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

}  // namespace statlet::testing
