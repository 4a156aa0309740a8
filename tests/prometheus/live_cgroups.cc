#include "tests/prometheus/live_cgroups.h"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <sstream>

namespace statlet::testing {

LiveCgroupTree::LiveCgroupTree(std::string root, std::string mount) : root_(std::move(root)), mount_(std::move(mount)) {
  for (const char* h : {"cpu", "cpuacct", "memory", "pids", "blkio", "unified"}) {
    std::string dir = mount_ + "/" + h;
    struct stat st;
    if (::stat((dir + "/cgroup.procs").c_str(), &st) == 0) hierarchies_.push_back(dir);
  }
  for (const std::string& h : hierarchies_) {
    std::string dir = h + root_;
    if (::mkdir(dir.c_str(), 0755) == 0) created_.push_back(dir);
  }
}

LiveCgroupTree::~LiveCgroupTree() {
  // Children before parents: remove in reverse creation order; move stragglers out first.
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    std::ifstream procs(*it + "/cgroup.procs");
    std::string hierarchy_root = it->substr(0, it->find(root_));
    for (std::string pid; std::getline(procs, pid);) {
      std::ofstream(hierarchy_root + "/cgroup.procs") << pid;
    }
    ::rmdir(it->c_str());
  }
}

bool LiveCgroupTree::Add(const std::string& child) {
  bool any = false;
  for (const std::string& h : hierarchies_) {
    std::string dir = h + root_ + "/" + child;
    if (::mkdir(dir.c_str(), 0755) == 0) {
      created_.push_back(dir);
      any = true;
    }
  }
  return any;
}

bool LiveCgroupTree::Move(const std::string& child, pid_t pid) {
  bool any = false;
  for (const std::string& h : hierarchies_) {
    std::ofstream procs(h + root_ + "/" + child + "/cgroup.procs");
    if (!procs) continue;
    procs << pid;
    procs.flush();
    any = any || procs.good();
  }
  return any;
}

bool LiveCgroupTree::Write(const std::string& hierarchy, const std::string& child, const std::string& file,
                           const std::string& value) {
  std::ofstream out(mount_ + "/" + hierarchy + root_ + "/" + child + "/" + file);
  if (!out) return false;
  out << value;
  out.flush();
  return out.good();
}

pid_t StartCpuBurner() {
  pid_t pid = ::fork();
  if (pid == 0) {
    volatile uint64_t x = 0;
    for (;;) x = x + 1;
  }
  return pid;
}

double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  size_t paren = text.rfind(')');
  if (paren == std::string::npos) return -1;
  std::istringstream fields(text.substr(paren + 2));
  std::string f;
  double utime = 0, stime = 0;
  for (int i = 3; i <= 15 && fields >> f; ++i) {
    if (i == 14) utime = std::stod(f);
    if (i == 15) stime = std::stod(f);
  }
  return (utime + stime) / static_cast<double>(::sysconf(_SC_CLK_TCK));
}

void KillAndReap(pid_t pid) {
  if (pid <= 0) return;
  ::kill(pid, SIGKILL);
  int status;
  ::waitpid(pid, &status, 0);
}

}  // namespace statlet::testing
