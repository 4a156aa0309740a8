#include "tests/support/statlet_daemon.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>

#include "tests/support/http_client.h"
#include "tests/support/wait_for.h"

#ifndef STATLET_BINARY
#error "STATLET_BINARY must name the statlet binary of this tree"
#endif

namespace statlet::testing {
namespace {

uint64_t StatusKib(const std::string& status, const char* key) {
  size_t p = status.find(key);
  return p == std::string::npos ? 0 : std::strtoull(status.c_str() + p + std::strlen(key), nullptr, 10);
}

int CountInotifyWatches(pid_t pid) {
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  int watches = 0;
  DIR* d = ::opendir(fd_dir.c_str());
  if (d == nullptr) return 0;
  while (dirent* e = ::readdir(d)) {
    if (e->d_name[0] == '.') continue;
    char target[256];
    ssize_t n = ::readlinkat(dirfd(d), e->d_name, target, sizeof target - 1);
    if (n <= 0) continue;
    target[n] = '\0';
    if (std::strcmp(target, "anon_inode:inotify") != 0) continue;
    std::ifstream info("/proc/" + std::to_string(pid) + "/fdinfo/" + e->d_name);
    for (std::string line; std::getline(info, line);) {
      if (line.rfind("inotify wd:", 0) == 0) ++watches;
    }
  }
  ::closedir(d);
  return watches;
}

// The last `n` lines of `text`.
std::string LastLines(const std::string& text, size_t n) {
  size_t at = text.size();
  for (size_t lines = 0; at > 0 && lines <= n;) {
    if (text[--at] == '\n') ++lines;
  }
  return at == 0 ? text : text.substr(at + 1);
}

}  // namespace

std::string StatletBinary() {
  const char* env = std::getenv("STATLET_TEST_BINARY");
  return env != nullptr && *env != '\0' ? env : STATLET_BINARY;
}

ProcessCost CostOf(pid_t pid) {
  ProcessCost c;
  const std::string base = "/proc/" + std::to_string(pid);
  const std::string status = ReadWholeFile(base + "/status");
  c.rss_kib = StatusKib(status, "VmRSS:");
  c.peak_rss_kib = StatusKib(status, "VmHWM:");
  c.threads = static_cast<int>(StatusKib(status, "Threads:"));
  if (DIR* d = ::opendir((base + "/fd").c_str())) {
    while (dirent* e = ::readdir(d)) c.fds += e->d_name[0] != '.';
    ::closedir(d);
  }
  c.inotify_watches = CountInotifyWatches(pid);
  c.cpu_ns = ProcessCpuNs(pid);
  return c;
}

int AcceptedConnections(pid_t pid, int port) {
  std::set<std::string> inodes;  // "socket:[N]" -> N
  const std::string fd_dir = "/proc/" + std::to_string(pid) + "/fd";
  if (DIR* d = ::opendir(fd_dir.c_str())) {
    while (dirent* e = ::readdir(d)) {
      char target[64];
      const ssize_t n = ::readlinkat(::dirfd(d), e->d_name, target, sizeof target - 1);
      if (n <= 8) continue;
      target[n] = '\0';
      if (std::strncmp(target, "socket:[", 8) == 0) inodes.emplace(target + 8, n - 9);
    }
    ::closedir(d);
  }
  int count = 0;
  for (const char* table : {"/net/tcp", "/net/tcp6"}) {
    std::istringstream in(ReadWholeFile("/proc/" + std::to_string(pid) + table));
    std::string line;
    std::getline(in, line);  // header
    while (std::getline(in, line)) {
      // sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
      std::istringstream f(line);
      std::string sl, local, remote, state, queues, timer, retr, uid, timeout, inode;
      if (!(f >> sl >> local >> remote >> state >> queues >> timer >> retr >> uid >> timeout >> inode)) continue;
      const size_t colon = local.rfind(':');
      if (colon == std::string::npos || std::stoi(local.substr(colon + 1), nullptr, 16) != port) continue;
      if (state == "0A") continue;  // the listener
      count += inodes.count(inode) > 0;
    }
  }
  return count;
}

bool ResetPeakRss(pid_t pid) {
  int fd = ::open(("/proc/" + std::to_string(pid) + "/clear_refs").c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, "5", 1) == 1;
  ::close(fd);
  return ok;
}

Daemon::Daemon(DaemonOptions options) {
  if (options.dir.empty()) {
    char dir[] = "/tmp/statlet-daemon-XXXXXX";
    if (::mkdtemp(dir) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    dir_ = dir;
    own_dir_ = true;
  } else {
    dir_ = options.dir;
  }
  log_path_ = dir_ + "/" + options.name + ".log";
  port_ = FreeLoopbackPort();
  std::string subtree =
      options.cgroup_subtree.empty() ? "/statlet-test-none-" + std::to_string(::getpid()) : options.cgroup_subtree;
  if (options.serve_cri) cri_socket_ = options.cri_socket.empty() ? dir_ + "/cri.sock" : options.cri_socket;
  std::vector<std::string> argv = {options.binary.empty() ? StatletBinary() : options.binary,
                                   "--web.listen-address=127.0.0.1:" + std::to_string(port_),
                                   "--collector.subtree=" + subtree,
                                   "--cri.listen=" + cri_socket_,
                                   "--runtime.endpoint=none",
                                   "--bpf=off"};
  argv.insert(argv.end(), options.flags.begin(), options.flags.end());
  process_ = std::make_unique<BinaryProcess>(argv, log_path_);
  pid_ = process_->pid();
  WaitStarted(options);
}

void Daemon::WaitStarted(const DaemonOptions& o) {
  auto fail = [&](const std::string& what) {
    error_ = "statlet did not " + what + (process_->running() ? "" : " (it exited)") + "; its log ends:\n" +
             LastLines(log(), 30);
  };
  if (!o.wait_until_serving) return;
  if (!WaitServing(o.start_timeout)) return fail("serve /healthz");
  if (o.wait_until_ready && !WaitReady(o.start_timeout)) return fail("answer /readyz with 200");
  if (o.serve_cri &&
      !WaitFor([&] { return ::access(cri_socket_.c_str(), F_OK) == 0 || !process_->running(); }, o.start_timeout)) {
    return fail("make its CRI socket " + cri_socket_);
  }
  if (!process_->running()) fail("keep running");
}

Daemon::~Daemon() {
  if (process_) process_->Stop(std::chrono::seconds(10));
  if (own_dir_) {
    ::unlink(log_path_.c_str());
    if (!cri_socket_.empty()) ::unlink(cri_socket_.c_str());
    ::rmdir(dir_.c_str());
  }
}

std::string Daemon::log() const { return log_path_.empty() ? "" : ReadWholeFile(log_path_); }

bool HealthzAnswers(int port) { return TimedGet(port, "/healthz", "", Millis(500)).response.has_value(); }

bool Daemon::WaitServing(std::chrono::milliseconds timeout) {
  return WaitFor(
             [&] {
               if (!process_->running()) return true;  // checked below
               return HealthzAnswers(port_);
             },
             timeout) &&
         process_->running();
}

bool Daemon::WaitReady(std::chrono::milliseconds timeout) {
  return WaitFor(
             [&] {
               if (!process_->running()) return true;  // checked below
               TimedResponse r = TimedGet(port_, "/readyz", "", Millis(500));
               return r.response && r.response->status == 200;
             },
             timeout) &&
         process_->running();
}

}  // namespace statlet::testing
