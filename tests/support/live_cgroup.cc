#include "tests/support/live_cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <sstream>
#include <thread>

namespace statlet::testing {
namespace {

bool WriteFile(const std::string& path, const std::string& value) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  ::close(fd);
  return ok;
}

void KillProcs(const std::string& dir) {
  std::ifstream procs(dir + "/cgroup.procs");
  for (pid_t p; procs >> p;) ::kill(p, SIGKILL);
}

}  // namespace

const CgroupHierarchies& HostHierarchies() {
  static const CgroupHierarchies h = [] {
    auto r = DetectHierarchies("/sys/fs/cgroup", "/proc");
    return r.ok() ? *r : CgroupHierarchies{};
  }();
  return h;
}

std::vector<std::string> CgroupMounts() {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/mountinfo");
  for (std::string line; std::getline(in, line);) {
    // "… mount_point … - fstype source options": the type follows the " - " separator.
    const size_t sep = line.find(" - ");
    if (sep == std::string::npos) continue;
    std::istringstream tail(line.substr(sep + 3));
    std::string fstype;
    tail >> fstype;
    if (fstype != "cgroup" && fstype != "cgroup2") continue;
    std::istringstream head(line.substr(0, sep));
    std::string id, parent, devno, root, mount_point;
    head >> id >> parent >> devno >> root >> mount_point;
    out.push_back(mount_point);
  }
  return out;
}

int ProcessesIn(const std::string& path) {
  for (const std::string& mount : CgroupMounts()) {
    std::ifstream in(mount + path + "/cgroup.procs");
    if (!in) continue;
    int n = 0;
    for (std::string line; std::getline(in, line);) n += !line.empty();
    if (n > 0) return n;
  }
  return 0;
}

Status RemoveCgroupEverywhere(const std::string& path, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  for (const std::string& mount : CgroupMounts()) {
    const std::string dir = mount + path;
    while (::rmdir(dir.c_str()) != 0 && errno != ENOENT) {
      if (errno != EBUSY || std::chrono::steady_clock::now() >= deadline) return ErrnoStatus(errno, "rmdir " + dir);
      std::this_thread::sleep_for(std::chrono::milliseconds(20));  // retried until the killed task is gone
    }
  }
  return Status::Ok();
}

std::string NewUid() {
  static std::mt19937_64 rng{std::random_device{}()};
  uint64_t a = rng(), b = rng();
  a = (a & 0xffffffffffff0fffULL) | 0x0000000000004000ULL;  // version 4
  b = (b & 0x3fffffffffffffffULL) | 0x8000000000000000ULL;  // RFC 4122 variant
  char buf[40];
  std::snprintf(buf, sizeof buf, "%08x-%04x-%04x-%04x-%012llx", static_cast<unsigned>(a >> 32),
                static_cast<unsigned>((a >> 16) & 0xffff), static_cast<unsigned>(a & 0xffff),
                static_cast<unsigned>(b >> 48), static_cast<unsigned long long>(b & 0xffffffffffffULL));
  return buf;
}

std::string UniqueName(const std::string& prefix) {
  static std::atomic<int> n{0};
  return prefix + "-" + std::to_string(::getpid()) + "-" + std::to_string(n++);
}

LiveCgroup::LiveCgroup(std::string path, std::vector<Hierarchy> only) : path_(std::move(path)) {
  const CgroupHierarchies& h = HostHierarchies();
  std::vector<std::string> mounts;
  for (int i = 0; i < kNumHierarchies; ++i) {
    const Hierarchy hier = static_cast<Hierarchy>(i);
    if (!h.has(hier) || (!only.empty() && std::find(only.begin(), only.end(), hier) == only.end())) continue;
    hierarchies_.push_back(hier);
    // Co-mounted v1 controllers ("cpu,cpuacct") share one directory: make it once.
    if (std::find(mounts.begin(), mounts.end(), h.mount[i]) == mounts.end()) mounts.push_back(h.mount[i]);
  }
  if (hierarchies_.empty()) error_ = "no cgroup hierarchy to create " + path_ + " in";
  for (const std::string& base : mounts) {
    for (size_t next = path_.find('/', 1); error_.empty(); next = path_.find('/', next + 1)) {
      const std::string dir = base + path_.substr(0, next);
      if (::mkdir(dir.c_str(), 0755) == 0) {
        created_.push_back(dir);
      } else if (errno != EEXIST) {
        error_ = "mkdir " + dir + ": " + std::strerror(errno);
      }
      if (next == std::string::npos) break;
    }
  }
  struct stat st;
  if (error_.empty() && in(kUnified) && ::stat(Dir(kUnified).c_str(), &st) == 0) id_ = st.st_ino;
}

LiveCgroup::~LiveCgroup() { Destroy(); }

bool LiveCgroup::in(Hierarchy h) const {
  return std::find(hierarchies_.begin(), hierarchies_.end(), h) != hierarchies_.end();
}

std::string LiveCgroup::Dir(Hierarchy h) const { return HostHierarchies().mount[h] + path_; }

bool LiveCgroup::Add(pid_t pid) {
  if (!ok()) return false;
  bool moved = true;
  for (Hierarchy h : hierarchies_) moved = Write(h, "cgroup.procs", std::to_string(pid)) && moved;
  return moved;
}

bool LiveCgroup::Write(Hierarchy h, const std::string& file, const std::string& value) {
  return in(h) && WriteFile(Dir(h) + "/" + file, value);
}

std::string LiveCgroup::Read(Hierarchy h, const std::string& file) const {
  std::ifstream f(Dir(h) + "/" + file);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

bool LiveCgroup::SetMemoryLimit(uint64_t bytes) {
  const Hierarchy h = HostHierarchies().memory();
  if (h != kUnified) return Write(h, "memory.limit_in_bytes", std::to_string(bytes));
  if (!in(kUnified)) return false;
  const std::string dir = Dir(kUnified);
  WriteFile(dir.substr(0, dir.rfind('/')) + "/cgroup.subtree_control", "+memory");  // may be on already
  if (!Write(kUnified, "memory.max", std::to_string(bytes))) return false;
  Write(kUnified, "memory.swap.max", "0");  // absent without swap accounting
  return true;
}

int64_t LiveCgroup::CpuUsageNs() const {
  if (in(kV1Cpuacct)) {
    std::istringstream usage(Read(kV1Cpuacct, "cpuacct.usage"));
    int64_t ns = -1;
    return usage >> ns ? ns : -1;
  }
  if (!in(kUnified)) return -1;
  std::istringstream stat(Read(kUnified, "cpu.stat"));
  std::string key;
  int64_t value;
  while (stat >> key >> value) {
    if (key == "usage_usec") return value * 1000;
  }
  return -1;
}

LiveCgroup::CpuSplit LiveCgroup::CpuSplitNs() const {
  CpuSplit split;
  if (in(kUnified)) {
    std::istringstream stat(Read(kUnified, "cpu.stat"));
    std::string key;
    int64_t value;
    while (stat >> key >> value) {
      if (key == "user_usec") split.user_ns = value * 1000;
      if (key == "system_usec") split.system_ns = value * 1000;
    }
    return split;
  }
  if (in(kV1Cpuacct)) {
    std::istringstream user(Read(kV1Cpuacct, "cpuacct.usage_user"));
    std::istringstream sys(Read(kV1Cpuacct, "cpuacct.usage_sys"));
    if (!(user >> split.user_ns) || !(sys >> split.system_ns)) return {};
  }
  return split;
}

void LiveCgroup::KillAll() {
  for (Hierarchy h : hierarchies_) KillProcs(Dir(h));
}

void LiveCgroup::Destroy() {
  if (!created_.empty()) KillAll();
  for (auto it = created_.rbegin(); it != created_.rend(); ++it) {
    // A killed task leaves its cgroup a moment after it died: retry, with a deadline.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (::rmdir(it->c_str()) != 0 && errno == EBUSY && std::chrono::steady_clock::now() < deadline) {
      KillProcs(*it);
      std::this_thread::sleep_for(std::chrono::milliseconds(1));  // poll interval
    }
  }
  created_.clear();
}

}  // namespace statlet::testing
