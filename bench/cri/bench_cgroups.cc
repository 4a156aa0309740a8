#include "bench/cri/bench_cgroups.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <fstream>

namespace statlet::bench {
namespace {

using Clock = std::chrono::steady_clock;

// rmdir, retried while the cgroup is busy: a killed process leaves it a moment after
// waitpid.
void RemoveCgroupDir(const std::string& dir) {
  auto deadline = Clock::now() + std::chrono::seconds(5);
  while (::rmdir(dir.c_str()) != 0 && errno == EBUSY && Clock::now() < deadline) ::usleep(1000);
}

void WriteStr(const std::string& path, const std::string& v) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) {
    (void)!::write(fd, v.data(), v.size());
    ::close(fd);
  }
}

std::string PodUid(size_t i) {
  char b[48];
  std::snprintf(b, sizeof b, "%08x-0000-4000-8000-%012zx", static_cast<unsigned>(::getpid()), i);
  return b;
}

std::string ContainerId(size_t i) {
  char b[65];
  unsigned long long x = (static_cast<unsigned long long>(::getpid()) << 32) ^ i;
  for (int w = 0; w < 4; ++w) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // a bijection: distinct ids
    std::snprintf(b + 16 * w, 17, "%016llx", x);
  }
  return b;
}

}  // namespace

const CgroupHierarchies& Hier() {
  static CgroupHierarchies h = *DetectHierarchies("/sys/fs/cgroup", "/proc");
  return h;
}

KubeletTree::KubeletTree(std::string root, size_t containers, size_t per_pod) : root_(std::move(root)) {
  for (int h = 0; h < kNumHierarchies; ++h) {
    if (Hier().has(static_cast<Hierarchy>(h))) mounts_.push_back(Hier().mount[h]);
  }
  Mkdir(root_);
  Mkdir(root_ + "/kubepods");
  Mkdir(root_ + "/kubepods/burstable");
  std::string pod;
  for (size_t i = 0; i < containers; ++i) {
    if (i % per_pod == 0) {
      pod = root_ + "/kubepods/burstable/pod" + PodUid(i / per_pod);
      Mkdir(pod);
      ++pods_;
    }
    std::string c = pod + "/" + ContainerId(i);
    Mkdir(c);
    pid_t p = ::fork();
    if (p == 0) {
      // A container's process holds few fds; not the bench's sockets and kept files.
      ::syscall(SYS_close_range, 3u, ~0u, 0u);
      while (true) ::pause();
    }
    pids_.push_back(p);
    for (const std::string& m : mounts_) WriteStr(m + c + "/cgroup.procs", std::to_string(p));
  }
}

KubeletTree::~KubeletTree() {
  for (pid_t p : pids_) ::kill(p, SIGKILL);
  for (pid_t p : pids_) ::waitpid(p, nullptr, 0);
  for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) RemoveCgroupDir(*it);
}

void KubeletTree::Mkdir(const std::string& rel) {
  for (const std::string& m : mounts_) {
    std::string d = m + rel;
    if (::mkdir(d.c_str(), 0755) == 0) dirs_.push_back(d);
  }
}

ServerCgroup::ServerCgroup(const std::string& rel) {
  if (Hier().has(kV1Cpuacct)) {
    dir_ = Hier().mount[kV1Cpuacct] + rel;
    cpuacct_ = true;
  } else if (Hier().has(kUnified)) {
    dir_ = Hier().mount[kUnified] + rel;
  }
  if (!dir_.empty() && ::mkdir(dir_.c_str(), 0755) != 0) dir_.clear();
}

ServerCgroup::~ServerCgroup() {
  if (!dir_.empty()) RemoveCgroupDir(dir_);
}

bool ServerCgroup::Move(pid_t pid) {
  if (dir_.empty()) return false;
  std::ofstream out(dir_ + "/cgroup.procs");
  out << pid << std::flush;
  return static_cast<bool>(out);
}

double ServerCgroup::CpuMs() const {
  if (dir_.empty()) return -1;
  if (cpuacct_) {
    std::ifstream in(dir_ + "/cpuacct.usage");
    double ns = -1;
    return in >> ns ? ns / 1e6 : -1;
  }
  std::ifstream in(dir_ + "/cpu.stat");
  std::string key;
  double v = 0;
  while (in >> key >> v) {
    if (key == "usage_usec") return v / 1e3;
  }
  return -1;
}

}  // namespace statlet::bench
