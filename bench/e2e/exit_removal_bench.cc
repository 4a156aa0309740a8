// How soon a real runtime removes a finished container's cgroup: containerd and runc
// (tests/e2e's harness, no statlet agent), containers started over CRI as the kubelet does
// (pod sandboxes under the kubelet's cgroupfs layout, CreateContainer with the full sandbox
// config, StartContainer), each a single process (busybox usleep) that exits after
// 100-500 ms, started at a steady rate from a few threads. One thread (real-time when it
// may) times, on CLOCK_MONOTONIC, for each container:
//   exit      its process' pidfd turning readable (the kernel's exit_notify);
//   polled    a poller of the unified cgroup.events woken (EPOLLPRI) with it reading
//             `populated 0` (the kernel wakes pollers at once, as the exit watcher polls);
//   notified  an inotify IN_MODIFY of that file with it reading `populated 0` (the kernel
//             sends those from a workqueue);
//   removed   its cgroup directory leaving the pod's, in each hierarchy (inotify IN_DELETE,
//             queued inside rmdir itself).
// It sends no StopContainer or RemoveContainer before a container's cgroup is gone from
// every hierarchy (or --linger passes): what is removed before is removed on the task's
// exit. Printed: min/p1/p50/p99/max of removed - exit (the first hierarchy to lose it and
// the unified one), of polled - exit and notified - exit, how many notifications came
// after the removal,
// and the load average before and after.
//
//   bench_e2e_exit_removal [--containers N] [--pods P] [--spacing-ms S] [--launchers L]
//                          [--linger-ms M]
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tests/e2e/e2e_stage.h"
#include "tests/support/host_state.h"

namespace statlet::e2e {
namespace {

using testing::LoadAverage;
using testing::MonoNs;

struct Options {
  size_t containers = 200;
  size_t pods = 10;
  int spacing_ms = 60;  // ~17 containers a second, the live exit test's rate
  size_t launchers = 4;
  int linger_ms = 10000;
};

// What was seen of one container (0: not seen).
struct Record {
  int64_t exit_ns = 0;
  int64_t polled_ns = 0;
  int64_t notified_ns = 0;
  bool notified_after_removal = false;
  int64_t unified_removed_ns = 0;
  int64_t first_removed_ns = 0;
  size_t hierarchies_removed = 0;
  bool pid_seen = false;
};

class Monitor {
 public:
  Monitor(std::vector<std::string> mounts, std::string unified)
      : mounts_(std::move(mounts)), unified_(std::move(unified)) {
    inotify_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = 0;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, inotify_, &ev);
  }
  ~Monitor() {
    Stop();
    close(inotify_);
    close(epoll_);
  }

  bool ok() const { return inotify_ >= 0 && epoll_ >= 0; }

  // Watches the pod's directory in every hierarchy for its containers' directories.
  bool WatchPod(const std::string& cgroup_parent) {
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t m = 0; m < mounts_.size(); ++m) {
      const std::string dir = mounts_[m] + cgroup_parent;
      int wd = inotify_add_watch(inotify_, dir.c_str(), IN_CREATE | IN_DELETE | IN_ONLYDIR);
      if (wd < 0) {
        std::fprintf(stderr, "watch %s: %s\n", dir.c_str(), std::strerror(errno));
        return false;
      }
      dirs_[wd] = {m, dir};
    }
    return true;
  }

  // The container's process, by its pid in the host's namespace; false when it is gone
  // already (its exit then is not timed).
  bool WatchProcess(const std::string& id, pid_t pid) {
    const int fd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    if (fd < 0) return false;
    std::lock_guard<std::mutex> lock(mu_);
    pidfds_[fd] = id;
    records_[id].pid_seen = true;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = static_cast<uint64_t>(fd) + 1;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
    return true;
  }

  void Start() {
    thread_ = std::thread([this] { Run(); });
  }
  void Stop() {
    if (!thread_.joinable()) return;
    stop_ = true;
    thread_.join();
  }
  bool realtime() const { return realtime_; }

  std::map<std::string, Record> records() {
    std::lock_guard<std::mutex> lock(mu_);
    return records_;
  }

 private:
  void Run() {
    sched_param p{};
    p.sched_priority = sched_get_priority_min(SCHED_FIFO) + 1;
    realtime_ = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p) == 0;
    epoll_event evs[32];
    while (!stop_) {
      const int n = epoll_wait(epoll_, evs, 32, 100);
      const int64_t now = MonoNs();
      for (int i = 0; i < n; ++i) {
        if (evs[i].data.u64 == 0) {
          DrainInotify(now);
        } else if (evs[i].data.u64 & kPolled) {
          const int fd = static_cast<int>(evs[i].data.u64 & ~kPolled);
          char content[256] = {};
          const ssize_t got = pread(fd, content, sizeof content - 1, 0);
          std::lock_guard<std::mutex> lock(mu_);
          if (got > 0 && std::strstr(content, "populated 0") == nullptr) continue;  // populated 1
          if (got > 0) {
            Record& r = records_[polled_[fd]];
            if (r.polled_ns == 0) r.polled_ns = now;
          }
          epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
          close(fd);
          polled_.erase(fd);
        } else {
          const int fd = static_cast<int>(evs[i].data.u64 - 1);
          std::lock_guard<std::mutex> lock(mu_);
          Record& r = records_[pidfds_[fd]];
          if (r.exit_ns == 0) r.exit_ns = now;
          epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
          close(fd);
          pidfds_.erase(fd);
        }
      }
    }
  }

  void DrainInotify(int64_t now) {
    alignas(inotify_event) char buf[16384];
    for (;;) {
      const ssize_t len = read(inotify_, buf, sizeof buf);
      if (len <= 0) return;
      for (ssize_t off = 0; off < len;) {
        const auto* e = reinterpret_cast<const inotify_event*>(buf + off);
        off += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
        std::lock_guard<std::mutex> lock(mu_);
        if (auto d = dirs_.find(e->wd); d != dirs_.end() && e->len > 0) {
          const std::string name = e->name;
          const bool unified = mounts_[d->second.mount] == unified_;
          if ((e->mask & IN_CREATE) && unified) {
            const std::string events = d->second.path + "/" + name + "/cgroup.events";
            const int wd = inotify_add_watch(inotify_, events.c_str(), IN_MODIFY);
            if (wd >= 0) events_[wd] = {name, events};
            const int fd = open(events.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd >= 0) {
              char content[256];
              (void)pread(fd, content, sizeof content, 0);  // armed: a change from here wakes
              epoll_event ev{};
              ev.events = EPOLLPRI;
              ev.data.u64 = kPolled | static_cast<uint64_t>(fd);
              epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
              polled_[fd] = name;
            }
          } else if (e->mask & IN_DELETE) {
            Record& r = records_[name];
            if (r.first_removed_ns == 0) r.first_removed_ns = now;
            if (unified) r.unified_removed_ns = now;
            ++r.hierarchies_removed;
          }
        } else if (auto w = events_.find(e->wd); w != events_.end() && (e->mask & IN_MODIFY)) {
          Record& r = records_[w->second.id];
          if (r.notified_ns != 0) continue;
          // Read now: `populated 0` once the last task left; a file already gone means the
          // notification came after the directory was removed.
          char content[256] = {};
          const int fd = open(w->second.path.c_str(), O_RDONLY | O_CLOEXEC);
          const ssize_t got = fd >= 0 ? read(fd, content, sizeof content - 1) : -1;
          if (fd >= 0) close(fd);
          if (got < 0 || r.unified_removed_ns != 0) {
            r.notified_ns = now;
            r.notified_after_removal = true;
          } else if (std::strstr(content, "populated 0") != nullptr) {
            r.notified_ns = now;
          }
        }
      }
    }
  }

  struct Dir {
    size_t mount;
    std::string path;
  };
  struct EventsFile {
    std::string id;
    std::string path;
  };
  std::vector<std::string> mounts_;
  std::string unified_;
  int inotify_ = -1, epoll_ = -1;
  std::mutex mu_;
  std::map<int, Dir> dirs_;
  std::map<int, EventsFile> events_;
  std::map<int, std::string> pidfds_;
  std::map<int, std::string> polled_;  // cgroup.events fds, by container
  static constexpr uint64_t kPolled = uint64_t{1} << 40;
  std::map<std::string, Record> records_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> realtime_{false};
  std::thread thread_;
};

// min/p1/p50/p99/max in milliseconds (nearest rank).
std::string Quantiles(std::vector<double> v) {
  if (v.empty()) return "none";
  std::sort(v.begin(), v.end());
  auto q = [&](double p) {
    return v[std::min(v.size() - 1, size_t(std::max(0.0, std::ceil(p * double(v.size())) - 1)))];
  };
  char buf[200];
  std::snprintf(buf, sizeof buf, "min %.2f p1 %.2f p50 %.2f p99 %.2f max %.2f ms (n=%zu)", v.front(), q(0.01), q(0.5),
                q(0.99), v.back(), v.size());
  return buf;
}

std::string UnifiedMount(const std::vector<std::string>& mounts) {
  for (const std::string& m : mounts) {
    struct stat st {};
    if (stat((m + "/cgroup.events").c_str(), &st) == 0 || stat((m + "/cgroup.subtree_control").c_str(), &st) == 0)
      return m;
  }
  return "";
}

int Run(const Options& opt) {
  const std::vector<std::string> mounts = CgroupMounts();
  const std::string unified = UnifiedMount(mounts);
  if (unified.empty()) {
    std::fprintf(stderr, "no cgroup2 mount\n");
    return 1;
  }
  char tmpl[] = "/tmp/statlet-exit-removal-XXXXXX";
  if (mkdtemp(tmpl) == nullptr) return 1;
  const std::string dir = tmpl;
  const std::string root = "/statlet-exit-removal-" + std::to_string(getpid());
  const std::string harness = STATLET_E2E_HARNESS;
  const std::string image = "localhost/statlet/busybox:1";
  const std::string log = dir + ".harness.log";
  struct Cleanup {
    std::string harness, dir, log;
    ~Cleanup() {
      if (RunCommand({"/bin/bash", harness, "stop", dir}, log).ok()) unlink(log.c_str());
    }
  } cleanup{harness, dir, log};
  if (Status s = RunCommand({"/bin/bash", harness, "start", dir, root, image}, log); !s.ok()) {
    std::fprintf(stderr, "%s\n%s", s.ToString().c_str(), Tail(log, 30).c_str());
    return 1;
  }
  for (const std::string& mount : mounts) {
    std::string path = mount;
    for (const std::string& part : {root, std::string("/kubepods"), std::string("/besteffort")}) {
      path += part;
      if (mkdir(path.c_str(), 0755) != 0 && errno != EEXIST) return 1;
    }
  }
  CriDriver driver(dir + "/containerd.sock", root, image);
  if (Status s = driver.WaitForImage(std::chrono::seconds(20)); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  Monitor monitor(mounts, unified);
  if (!monitor.ok()) return 1;
  std::vector<Pod> pods;
  for (size_t p = 0; p < opt.pods; ++p) {
    PodSpec spec;
    spec.name = "exits-" + std::to_string(p);
    spec.namespace_ = "default";
    auto pod = driver.RunPod(spec);
    if (!pod.ok()) {
      std::fprintf(stderr, "RunPod: %s\n", pod.status().ToString().c_str());
      return 1;
    }
    if (!monitor.WatchPod(pod->cgroup_parent)) return 1;
    pods.push_back(*pod);
  }
  monitor.Start();
  const std::string load_before = LoadAverage();

  std::mutex mu;
  std::map<std::string, size_t> ids;  // container id -> its index
  std::atomic<size_t> next{0};
  std::atomic<size_t> failed{0};
  std::vector<int> live_us(opt.containers);
  std::mt19937 rng(35);
  for (int& us : live_us) us = std::uniform_int_distribution<int>(100000, 500000)(rng);
  const auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> launchers;
  for (size_t l = 0; l < opt.launchers; ++l) {
    launchers.emplace_back([&] {
      for (size_t i; (i = next++) < opt.containers;) {
        std::this_thread::sleep_until(t0 + std::chrono::milliseconds(opt.spacing_ms) * i);  // the launch rate
        const Pod& pod = pods[i % pods.size()];
        ContainerSpec spec;
        spec.name = "c" + std::to_string(i);
        spec.command = {"usleep", std::to_string(live_us[i])};
        auto id = driver.StartContainer(pod, spec);
        if (!id.ok()) {
          std::fprintf(stderr, "StartContainer: %s\n", id.status().ToString().c_str());
          ++failed;
          continue;
        }
        {
          std::lock_guard<std::mutex> lock(mu);
          ids[*id] = i;
        }
        std::ifstream procs(unified + pod.cgroup_parent + "/" + *id + "/cgroup.procs");
        pid_t pid = 0;
        if (procs >> pid) monitor.WatchProcess(*id, pid);
      }
    });
  }
  for (auto& t : launchers) t.join();
  const double launch_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  // Until every container's cgroup left every hierarchy, or --linger after the last start.
  const size_t hierarchies = mounts.size();
  const std::string left = Eventually(std::chrono::milliseconds(opt.linger_ms), [&] {
    const auto recs = monitor.records();
    size_t pending = 0;
    for (const auto& [id, _] : ids) {
      auto it = recs.find(id);
      if (it == recs.end() || it->second.hierarchies_removed < hierarchies) ++pending;
    }
    return pending == 0 ? std::string() : std::to_string(pending) + " containers' cgroups still there";
  });
  const std::string load_after = LoadAverage();
  monitor.Stop();
  const auto recs = monitor.records();

  std::vector<double> first_removed, unified_removed, polled, notified, removal_after_notified;
  size_t exits_timed = 0, removed_everywhere = 0, late_notifications = 0, unnotified = 0;
  for (const auto& [id, _] : ids) {
    auto it = recs.find(id);
    if (it == recs.end()) continue;
    const Record& r = it->second;
    if (r.hierarchies_removed >= hierarchies) ++removed_everywhere;
    if (r.notified_after_removal) ++late_notifications;
    if (r.notified_ns == 0) ++unnotified;
    if (r.exit_ns == 0) continue;
    ++exits_timed;
    if (r.first_removed_ns) first_removed.push_back(double(r.first_removed_ns - r.exit_ns) / 1e6);
    if (r.unified_removed_ns) unified_removed.push_back(double(r.unified_removed_ns - r.exit_ns) / 1e6);
    if (r.polled_ns) polled.push_back(double(r.polled_ns - r.exit_ns) / 1e6);
    if (r.notified_ns && !r.notified_after_removal) notified.push_back(double(r.notified_ns - r.exit_ns) / 1e6);
    if (r.notified_ns && r.unified_removed_ns && !r.notified_after_removal)
      removal_after_notified.push_back(double(r.unified_removed_ns - r.notified_ns) / 1e6);
  }
  std::printf("exit removal: %zu containers over CRI in %.1f s (%.1f/s, %zu pods), %zu failed to start; monitor %s\n",
              ids.size(), launch_s, double(ids.size()) / launch_s, opt.pods, failed.load(),
              monitor.realtime() ? "real-time" : "ordinary");
  std::printf("exit removal: load average before %s, after %s\n", load_before.c_str(), load_after.c_str());
  std::printf(
      "exit removal: removed on exit (no StopContainer/RemoveContainer sent) from all %zu hierarchies: %zu of "
      "%zu%s%s\n",
      hierarchies, removed_everywhere, ids.size(), left.empty() ? "" : "; ", left.c_str());
  std::printf("exit removal: exits timed by pidfd %zu\n", exits_timed);
  std::printf("exit removal: first hierarchy removed - exit: %s\n", Quantiles(first_removed).c_str());
  std::printf("exit removal: unified removed - exit: %s\n", Quantiles(unified_removed).c_str());
  std::printf("exit removal: populated 0 polled - exit: %s\n", Quantiles(polled).c_str());
  std::printf("exit removal: populated 0 notified (inotify) - exit: %s\n", Quantiles(notified).c_str());
  std::printf("exit removal: unified removed - populated 0 notified: %s\n", Quantiles(removal_after_notified).c_str());
  std::printf("exit removal: notifications after the removal %zu, none at all %zu\n", late_notifications, unnotified);

  // As the kubelet's garbage collection does later: the dead containers, then the pods.
  for (const auto& [id, _] : ids) (void)driver.RemoveContainer(id);
  for (const Pod& pod : pods) (void)driver.RemovePod(pod);
  return failed.load() == 0 && left.empty() ? 0 : 1;
}

}  // namespace
}  // namespace statlet::e2e

int main(int argc, char** argv) {
  statlet::e2e::Options opt;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long v = std::strtol(argv[i + 1], nullptr, 10);
    if (flag == "--containers") {
      opt.containers = size_t(v);
    } else if (flag == "--pods") {
      opt.pods = size_t(v);
    } else if (flag == "--spacing-ms") {
      opt.spacing_ms = int(v);
    } else if (flag == "--launchers") {
      opt.launchers = size_t(v);
    } else if (flag == "--linger-ms") {
      opt.linger_ms = int(v);
    } else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  return statlet::e2e::Run(opt);
}
