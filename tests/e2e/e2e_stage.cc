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

// Starts the statlet daemon itself and waits until /readyz answers 200 (first collection
// done) and its CRI socket is there.
Status E2eStage::StartAgent(const StageOptions& options) {
  testing::DaemonOptions o;
  o.binary = options.agent_binary;
  o.dir = dir_;
  o.name = "agent";
  o.cgroup_subtree = options.whole_host ? "/" : cgroup_root_;
  o.serve_cri = true;
  o.cri_socket = dir_ + "/statlet-cri.sock";
  // The stage plays a v1.27 kubelet with Memory QoS on: the tests pass the unified
  // memory.min / memory.high such a kubelet would (no kubelet configuration file).
  o.flags = {"--runtime.endpoint=unix://" + dir_ + "/containerd.sock", "--log.level=warn",
             "--memory-qos.kubelet-version=v1.27.0", "--memory-qos.feature-gate=true", "--memory-qos.kubelet-config="};
  o.flags.insert(o.flags.end(), options.agent_flags.begin(), options.agent_flags.end());
  o.wait_until_ready = true;
  o.start_timeout = std::chrono::seconds(60);
  agent_ = std::make_unique<testing::Daemon>(o);
  if (!agent_->ok()) return Unavailable("the agent: " + agent_->error());
  statlet_channel_ = CriChannel(dir_ + "/statlet-cri.sock");
  statlet_ = v1::RuntimeService::NewStub(statlet_channel_);
  return Status::Ok();
}

E2eStage::~E2eStage() { Stop(); }

void E2eStage::Stop() {
  if (agent_) {
    agent_->Stop(std::chrono::seconds(10));
    agent_.reset();
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
