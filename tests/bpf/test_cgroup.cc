#include "tests/bpf/test_cgroup.h"

#include <linux/magic.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

namespace statlet::testing {
namespace {

bool IsCgroup2(const std::string& path) {
  struct statfs st;
  return statfs(path.c_str(), &st) == 0 && st.f_type == CGROUP2_SUPER_MAGIC;
}

bool WriteFile(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  f << value;
  f.flush();
  return static_cast<bool>(f);
}

std::vector<pid_t> Procs(const std::string& dir) {
  std::vector<pid_t> out;
  std::ifstream f(dir + "/cgroup.procs");
  pid_t p;
  while (f >> p) out.push_back(p);
  return out;
}

// Kills the processes of `dir` and removes it, waiting (with a deadline) for them to go.
void KillAndRemove(const std::string& dir) {
  if (dir.empty()) return;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (rmdir(dir.c_str()) != 0 && errno == EBUSY && std::chrono::steady_clock::now() < deadline) {
    for (pid_t p : Procs(dir)) kill(p, SIGKILL);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // poll interval
  }
}

}  // namespace

std::string Cgroup2Root() {
  if (IsCgroup2("/sys/fs/cgroup")) return "/sys/fs/cgroup";
  if (IsCgroup2("/sys/fs/cgroup/unified")) return "/sys/fs/cgroup/unified";
  return "";
}

std::string UniqueName(const std::string& tag) {
  return "statlet-bpf-test-" + std::to_string(getpid()) + "-" + tag;
}

TestCgroup::TestCgroup(const std::string& name) {
  std::string root = Cgroup2Root();
  if (root.empty()) {
    error_ = "no cgroup2 mount";
    return;
  }
  std::string dir = root + "/" + name;
  if (mkdir(dir.c_str(), 0755) != 0) {
    error_ = "mkdir " + dir + ": " + strerror(errno);
    return;
  }
  struct stat st;
  stat(dir.c_str(), &st);
  id_ = st.st_ino;
  unified_dir_ = dir;
  if (root != "/sys/fs/cgroup" && access("/sys/fs/cgroup/memory/memory.limit_in_bytes", F_OK) == 0) {
    std::string v1 = "/sys/fs/cgroup/memory/" + name;
    if (mkdir(v1.c_str(), 0755) == 0) {
      memory_v1_dir_ = v1;
    } else {
      error_ = "mkdir " + v1 + ": " + strerror(errno);
      Destroy();
    }
  }
}

TestCgroup::~TestCgroup() { Destroy(); }

void TestCgroup::Destroy() {
  KillAndRemove(unified_dir_);
  KillAndRemove(memory_v1_dir_);
  unified_dir_.clear();
  memory_v1_dir_.clear();
}

bool TestCgroup::AddProcess(pid_t pid) {
  if (!ok()) return false;
  bool good = WriteFile(unified_dir_ + "/cgroup.procs", std::to_string(pid));
  if (!memory_v1_dir_.empty()) good = WriteFile(memory_v1_dir_ + "/cgroup.procs", std::to_string(pid)) && good;
  return good;
}

bool TestCgroup::SetMemoryLimit(uint64_t bytes) {
  if (!memory_v1_dir_.empty()) return WriteFile(memory_v1_dir_ + "/memory.limit_in_bytes", std::to_string(bytes));
  if (!ok()) return false;
  // Pure v2: the parent must delegate the memory controller.
  std::string parent = unified_dir_.substr(0, unified_dir_.rfind('/'));
  WriteFile(parent + "/cgroup.subtree_control", "+memory");
  if (!WriteFile(unified_dir_ + "/memory.max", std::to_string(bytes))) return false;
  WriteFile(unified_dir_ + "/memory.swap.max", "0");  // absent without swap accounting
  return true;
}

int64_t TestCgroup::CpuUsageUsec() const {
  std::ifstream f(unified_dir_ + "/cpu.stat");
  std::string key;
  int64_t value;
  while (f >> key >> value) {
    if (key == "usage_usec") return value;
  }
  return -1;
}

}  // namespace statlet::testing
