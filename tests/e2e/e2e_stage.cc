#include "tests/e2e/e2e_stage.h"

#include "tests/support/child_process.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>

namespace statlet::e2e {
Status RunCommand(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = testing::SpawnLogged(argv, log);
  if (pid < 0) return ErrnoStatus(errno, "fork");
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return Status::Ok();
  return Internal(argv[0] + (argv.size() > 1 ? " " + argv[1] : std::string()) + " failed (status " +
                  std::to_string(status) + "), see " + log);
}

std::string Eventually(std::chrono::milliseconds timeout, const std::function<std::string()>& check) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (;;) {
    std::string why = check();
    if (why.empty() || std::chrono::steady_clock::now() >= deadline) return why;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));  // polling a condition
  }
}

std::string Tail(const std::string& path, size_t lines) {
  std::ifstream in(path);
  std::vector<std::string> all;
  std::string line;
  while (std::getline(in, line)) all.push_back(line);
  std::string out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) out += all[i] + "\n";
  return out;
}

StatusOr<std::unique_ptr<E2eStage>> E2eStage::Start(const StageOptions& options) {
  std::unique_ptr<E2eStage> stage(new E2eStage());
  char tmpl[] = "/tmp/statlet-e2e-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return ErrnoStatus(errno, "mkdtemp");
  stage->dir_ = tmpl;
  stage->cgroup_root_ = "/statlet-e2e-" + std::to_string(getpid());
  stage->harness_ = options.harness_script;
  stage->harness_started_ = true;  // stop cleans up whatever part of start ran
  if (Status s =
          RunCommand({"/bin/bash", options.harness_script, "start", stage->dir_, stage->cgroup_root_, options.image},
                     stage->dir_ + ".harness.log");
      !s.ok()) {
    return Internal(s.message() + "\n" + Tail(stage->dir_ + ".harness.log", 30));
  }
  // The kubelet creates its top-level and QoS cgroups in every hierarchy before any pod.
  for (const std::string& mount : CgroupMounts()) {
    std::string path = mount;
    for (const std::string& part : {stage->cgroup_root_, std::string("/kubepods"), std::string("/besteffort")}) {
      path += part;
      if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return ErrnoStatus(errno, "mkdir " + path);
    }
  }
  stage->driver_ = std::make_unique<CriDriver>(stage->dir_ + "/containerd.sock", stage->cgroup_root_, options.image);
  if (Status s = stage->driver_->WaitForImage(std::chrono::seconds(20)); !s.ok()) return s;
  if (Status s = stage->StartAgent(options); !s.ok()) return Internal(s.message() + "\n" + stage->Logs());
  return stage;
}

namespace {

// A loopback port nothing listens on now (the kernel's pick for an ephemeral bind).
StatusOr<int> FreeLoopbackPort() {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(errno, "socket");
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    Status s = ErrnoStatus(errno, "bind 127.0.0.1:0");
    close(fd);
    return s;
  }
  close(fd);
  return static_cast<int>(ntohs(a.sin_port));
}

}  // namespace

// Starts the statlet daemon itself and waits until /readyz answers 200 (first collection
// done) and its CRI socket accepts calls.
Status E2eStage::StartAgent(const StageOptions& options) {
  auto port = FreeLoopbackPort();
  if (!port.ok()) return port.status();
  metrics_port_ = *port;
  std::vector<std::string> argv = {
      options.agent_binary,
      "--cri.listen=" + dir_ + "/statlet-cri.sock",
      "--runtime.endpoint=unix://" + dir_ + "/containerd.sock",
      "--web.listen-address=127.0.0.1:" + std::to_string(metrics_port_),
      "--collector.subtree=" + cgroup_root_,
      "--bpf=off",
      "--log.level=warn",
      // The stage plays a v1.27 kubelet with Memory QoS on: the tests pass the unified
      // memory.min / memory.high such a kubelet would (no kubelet configuration file).
      "--memory-qos.kubelet-version=v1.27.0",
      "--memory-qos.feature-gate=true",
      "--memory-qos.kubelet-config=",
  };
  argv.insert(argv.end(), options.agent_flags.begin(), options.agent_flags.end());
  const std::string log = dir_ + "/agent.log";
  pid_t pid = testing::SpawnLogged(argv, log);
  if (pid < 0) return ErrnoStatus(errno, "fork");
  agent_pid_ = pid;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    int status = 0;
    if (waitpid(pid, &status, WNOHANG) == pid) {
      agent_pid_ = -1;
      return Unavailable("the agent exited before it was ready");
    }
    struct stat st;
    auto r = HttpGet(metrics_port_, "/readyz", std::chrono::milliseconds(500));
    if (r.ok() && r->status == 200 && stat((dir_ + "/statlet-cri.sock").c_str(), &st) == 0) break;
    if (std::chrono::steady_clock::now() > deadline) return Unavailable("the agent did not report ready");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));  // polling a condition, with a deadline
  }
  statlet_channel_ = CriChannel(dir_ + "/statlet-cri.sock");
  statlet_ = v1::RuntimeService::NewStub(statlet_channel_);
  return Status::Ok();
}

E2eStage::~E2eStage() { Stop(); }

void E2eStage::Stop() {
  if (agent_pid_ > 0) {
    kill(agent_pid_, SIGTERM);
    int status = 0;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (waitpid(agent_pid_, &status, WNOHANG) == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(agent_pid_, SIGKILL);
        waitpid(agent_pid_, &status, 0);
        break;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    agent_pid_ = -1;
  }
  statlet_.reset();
  driver_.reset();
  if (harness_started_) {
    harness_started_ = false;
    Status s = RunCommand({"/bin/bash", harness_, "stop", dir_}, dir_ + ".harness.log");
    if (s.ok()) unlink((dir_ + ".harness.log").c_str());
  }
}

std::vector<pid_t> E2eStage::ContainerdPids() const {
  std::vector<pid_t> pids;
  std::ifstream pidfile(dir_ + "/containerd.pid");
  pid_t main_pid = 0;
  if (pidfile >> main_pid) pids.push_back(main_pid);
  const std::string marker = "-address" + std::string(1, '\0') + dir_ + "/containerd.sock" + std::string(1, '\0');
  DIR* d = opendir("/proc");
  if (d == nullptr) return pids;
  while (dirent* e = readdir(d)) {
    char* end;
    long pid = std::strtol(e->d_name, &end, 10);
    if (*end != '\0' || pid <= 0 || pid == main_pid) continue;
    std::ifstream in(std::string("/proc/") + e->d_name + "/cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    if (cmdline.find(marker) != std::string::npos) pids.push_back(static_cast<pid_t>(pid));
  }
  closedir(d);
  return pids;
}

std::string E2eStage::Logs() const {
  return "--- agent.log\n" + Tail(dir_ + "/agent.log", 20) + "--- containerd.log\n" +
         Tail(dir_ + "/containerd.log", 20);
}

// ---------------------------------------------------------------------------- helpers
StatusOr<HttpResponse> HttpGet(int port, const std::string& path, std::chrono::milliseconds timeout) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus(errno, "socket");
  timeval tv{static_cast<time_t>(timeout.count() / 1000), static_cast<suseconds_t>((timeout.count() % 1000) * 1000)};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    Status s = ErrnoStatus(errno, "connect");
    close(fd);
    return s;
  }
  std::string req = "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n";
  if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(req.size())) {
    Status s = ErrnoStatus(errno, "send");
    close(fd);
    return s;
  }
  std::string raw;
  char buf[65536];
  for (;;) {
    ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n == 0) break;
    if (n < 0) {
      if (errno == EINTR) continue;
      Status s = ErrnoStatus(errno, "recv");
      close(fd);
      return s;
    }
    raw.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  size_t head_end = raw.find("\r\n\r\n");
  HttpResponse resp;
  if (head_end == std::string::npos || std::sscanf(raw.c_str(), "HTTP/1.%*d %d", &resp.status) != 1) {
    return Internal("malformed HTTP response");
  }
  std::string head = raw.substr(0, head_end);
  resp.body = raw.substr(head_end + 4);
  // Chunked bodies: join the chunks.
  for (char& c : head) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  if (head.find("transfer-encoding: chunked") != std::string::npos) {
    std::string joined;
    size_t pos = 0;
    for (;;) {
      size_t eol = resp.body.find("\r\n", pos);
      if (eol == std::string::npos) return Internal("truncated chunked body");
      size_t len = std::strtoul(resp.body.substr(pos, eol - pos).c_str(), nullptr, 16);
      if (len == 0) break;
      if (eol + 2 + len > resp.body.size()) return Internal("truncated chunk");
      joined.append(resp.body, eol + 2, len);
      pos = eol + 2 + len + 2;
    }
    resp.body = std::move(joined);
  } else if (size_t cl = head.find("content-length:"); cl != std::string::npos) {
    size_t len = std::strtoul(head.c_str() + cl + 15, nullptr, 10);
    if (resp.body.size() != len) return Internal("body shorter than Content-Length");
  }
  return resp;
}

StatusOr<std::vector<Sample>> ParseExposition(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  std::string line;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    auto bad = [&](const char* why) { return InvalidArgument("line " + std::to_string(lineno) + ": " + why); };
    Sample s;
    size_t i = 0;
    while (i < line.size() && line[i] != '{' && line[i] != ' ') ++i;
    s.name = line.substr(0, i);
    if (i < line.size() && line[i] == '{') {
      ++i;
      while (i < line.size() && line[i] != '}') {
        size_t eq = line.find('=', i);
        if (eq == std::string::npos || eq + 1 >= line.size() || line[eq + 1] != '"') return bad("label");
        std::string key = line.substr(i, eq - i), value;
        size_t j = eq + 2;
        for (; j < line.size() && line[j] != '"'; ++j) {
          if (line[j] == '\\' && j + 1 < line.size()) {
            ++j;
            value += line[j] == 'n' ? '\n' : line[j];
          } else {
            value += line[j];
          }
        }
        if (j >= line.size()) return bad("unterminated label value");
        s.labels[key] = value;
        i = j + 1;
        if (i < line.size() && line[i] == ',') ++i;
      }
      if (i >= line.size()) return bad("unterminated label set");
      ++i;
    }
    while (i < line.size() && line[i] == ' ') ++i;
    char* end;
    s.value = std::strtod(line.c_str() + i, &end);
    if (end == line.c_str() + i) return bad("value");
    out.push_back(std::move(s));
  }
  return out;
}

uint64_t ProcessCpuNs(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat;
  if (!std::getline(in, stat)) return 0;
  // Fields after the parenthesised comm: state is field 3, utime 14, stime 15.
  size_t close_paren = stat.rfind(')');
  if (close_paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(close_paren + 2));
  std::string f;
  uint64_t utime = 0, stime = 0;
  for (int n = 3; fields >> f; ++n) {
    if (n == 14) utime = std::strtoull(f.c_str(), nullptr, 10);
    if (n == 15) {
      stime = std::strtoull(f.c_str(), nullptr, 10);
      break;
    }
  }
  const uint64_t hz = static_cast<uint64_t>(sysconf(_SC_CLK_TCK));
  return (utime + stime) * 1000000000ULL / hz;
}

int CountFds(pid_t pid) {
  DIR* d = opendir(("/proc/" + std::to_string(pid) + "/fd").c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] != '.') ++n;
  }
  closedir(d);
  return n;
}

}  // namespace statlet::e2e
