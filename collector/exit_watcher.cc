#include "collector/exit_watcher.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "base/log.h"
#include "collector/cgroup_files.h"
#include "collector/cgroup_path_classifier.h"

namespace statlet {
namespace {

int64_t NowNs(clockid_t clock) {
  timespec ts{};
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The whole file into `out`; false when it cannot be opened or read (errno says why).
bool ReadWhole(const std::string& path, std::string* out) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  out->clear();
  char buf[8192];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      errno = err;
      return n == 0;
    }
    out->append(buf, static_cast<size_t>(n));
  }
}

// The value of `key` in a flat-keyed file ("populated 1\nfrozen 0\n"), or -1.
int64_t FlatKey(std::string_view content, std::string_view key) {
  size_t pos = 0;
  while (pos < content.size()) {
    size_t end = content.find('\n', pos);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(pos, end - pos);
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ') {
      int64_t v = 0;
      for (char ch : line.substr(key.size() + 1)) {
        if (ch < '0' || ch > '9') break;
        v = v * 10 + (ch - '0');
      }
      return v;
    }
    pos = end + 1;
  }
  return -1;
}

// The files whose values a final read must not lose: CPU time (v2 cpu.stat; v1 per-CPU
// times, and the unified cpu.stat's user/system on a hybrid host) and the memory peak.
// Their fds are opened with the container, so the final read of them is a pread each,
// made first: a runtime may remove the cgroup as soon as it has reaped the last process.
bool KeptOpen(const CgroupFileReader& r) {
  const std::string_view name = r.name;
  if (r.hierarchy == kUnified) return name == "cpu.stat" || name == "memory.peak";
  if (r.hierarchy == kV1Cpuacct) return name == "cpuacct.usage_percpu";
  if (r.hierarchy == kV1Memory) return name == "memory.max_usage_in_bytes";
  return false;
}

// pread of the whole (small) file from its start into `out`; false when it is gone.
bool PreadWhole(int fd, std::string* out) {
  out->clear();
  char buf[8192];
  for (off_t off = 0;;) {
    const ssize_t n = ::pread(fd, buf, sizeof buf, off);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    if (n == 0) return true;
    out->append(buf, static_cast<size_t>(n));
    off += n;
  }
}

}  // namespace

class ExitWatcher::Impl {
 public:
  Impl(const ExitWatcherOptions& o, ExitRecords* records, CgroupHierarchies h)
      : opts_(o), records_(records), h_(std::move(h)), plan_(BuildReadPlan(h_, HugePageSizes(o.hugepages_dir))) {
    for (const CgroupFileReader* r : plan_) kept_per_container_ += KeptOpen(*r) && h_.has(r->hierarchy);
    settling_.resize(opts_.settle_ns.size());
  }
  ~Impl() {
    for (auto& [path, c] : containers_) CloseEvents(&c);
    for (auto& [path, c] : containers_) CloseKept(&c);
    for (auto& stage : settling_) {
      for (Settling& e : stage) CloseKept(&e.kept);
    }
    for (int fd : {inotify_fd_, stop_fd_, timer_fd_, epoll_fd_}) {
      if (fd >= 0) ::close(fd);
    }
  }

  Status Init() {
    inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (inotify_fd_ < 0) return Unavailable(std::string("inotify_init1: ") + strerror(errno));
    stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (stop_fd_ < 0) return Unavailable(std::string("eventfd: ") + strerror(errno));
    epoll_fd_ = epoll_create1(EPOLL_CLOEXEC);
    if (epoll_fd_ < 0) return Unavailable(std::string("epoll_create1: ") + strerror(errno));
    timer_fd_ = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
    if (timer_fd_ < 0) return Unavailable(std::string("timerfd_create: ") + strerror(errno));
    for (int fd : {inotify_fd_, stop_fd_, timer_fd_}) {
      epoll_event ev{};
      ev.events = EPOLLIN;
      ev.data.fd = fd;
      if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
        return Unavailable(std::string("epoll_ctl: ") + strerror(errno));
      }
    }
    WalkSubtrees();
    return Status::Ok();
  }

  void Run() {
    epoll_event ready[64];
    for (;;) {
      const int n = epoll_wait(epoll_fd_, ready, 64, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        log::Warn(std::string("exit watcher: epoll_wait: ") + strerror(errno));
        AddSettling();
        return;
      }
      // Emptied containers first: the runtime may remove their cgroups at any moment. Then
      // the second reads that are due (the runtime leaves them over 10 ms), in the same
      // real-time budget.
      const int64_t reads_from = realtime_ ? ThreadCpuNs() : 0;
      bool read_any = false, timer = false;
      for (int i = 0; i < n; ++i) {
        const int fd = ready[i].data.fd;
        if (fd == inotify_fd_ || fd == stop_fd_) continue;
        if (fd == timer_fd_) {
          timer = true;
          continue;
        }
        auto it = by_fd_.find(fd);
        if (it != by_fd_.end()) read_any |= Check(it->second);
      }
      if (timer) read_any |= SettleDue();
      if (realtime_ && read_any) CheckRealtimeBudget(ThreadCpuNs() - reads_from);
      for (int i = 0; i < n; ++i) {
        if (ready[i].data.fd == stop_fd_) {
          AddSettling();
          return;
        }
        if (ready[i].data.fd == inotify_fd_) {
          // New and removed directories (walks of whole new trees) are not the race the
          // real-time policy is for: they run as an ordinary thread.
          SetPolicy(SCHED_OTHER);
          DrainInotify();
          SetPolicy(SCHED_FIFO);
        }
      }
    }
  }

  static int64_t ThreadCpuNs() {
    timespec ts{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
  }

  // While real-time, between the policy of the final reads and the ordinary one. A return
  // to real-time the kernel refuses (the cgroup's real-time runtime taken away meanwhile)
  // leaves the thread ordinary, and says so.
  void SetPolicy(int policy) {
    if (!realtime_) return;
    sched_param p{};
    p.sched_priority = policy == SCHED_FIFO ? sched_get_priority_min(SCHED_FIFO) : 0;
    const int rc = pthread_setschedparam(pthread_self(), policy, &p);
    if (rc == 0 || policy != SCHED_FIFO) return;
    realtime_ = false;
    log::Warn(std::string("exit watcher: back to real-time refused (") + strerror(rc) + "): it runs at its nice value");
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.realtime = false;
  }

  // The final reads of one wake-up are a few file reads per emptied container: reads that
  // took more CPU than the budget must not hold a CPU ahead of every ordinary thread again.
  void CheckRealtimeBudget(int64_t used_ns) {
    if (used_ns <= opts_.realtime_budget_ns) return;
    SetPolicy(SCHED_OTHER);
    realtime_ = false;
    log::Warn("exit watcher: one wake-up's final reads took " + std::to_string(used_ns / 1000) +
              " us of CPU, over its real-time budget: it runs at its nice value from now on");
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.realtime = false;
  }

  void Stop() {
    const uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(stop_fd_, &one, sizeof one);
  }

  // On the watcher's own thread, before Run: its nice value, then the real-time policy.
  void SetScheduling() {
    const auto tid = static_cast<id_t>(::gettid());
    // Per thread on Linux: PRIO_PROCESS with the thread's id sets this thread's nice only.
    if (setpriority(PRIO_PROCESS, tid, opts_.thread_nice) != 0) {
      log::Warn(std::string("exit watcher: cannot set its nice value: ") + strerror(errno));
    }
    const int nice = getpriority(PRIO_PROCESS, tid);
    if (opts_.realtime) {
      sched_param p{};
      p.sched_priority = sched_get_priority_min(SCHED_FIFO);
      const int rc = pthread_setschedparam(pthread_self(), SCHED_FIFO, &p);
      if (rc == 0) {
        realtime_ = true;
      } else {
        log::Warn(std::string("exit watcher: not real-time (SCHED_FIFO: ") + strerror(rc) + "), at nice " +
                  std::to_string(nice) + ": a busy node may remove some cgroups before their final read");
      }
    }
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.realtime = realtime_;
    stats_.nice = nice;
  }

  ExitWatcherStats stats() const {
    std::lock_guard<std::mutex> lock(stats_mu_);
    return stats_;
  }

 private:
  struct Container {
    std::string path;
    int events_fd = -1;  // cgroup.events, polled; -1 once its final read is made
    bool seen_populated = false;
    uint64_t cgroup_id = 0;
    int64_t created_ns = 0;
    // Fds of the plan's KeptOpen files, by plan index (-1: not open).
    std::vector<std::pair<size_t, int>> kept;
  };

  std::string Full(const std::string& path) const {
    return path == "/" ? h_.mount[kUnified] : h_.mount[kUnified] + path;
  }

  void WalkSubtrees() {
    if (opts_.subtrees.empty()) {
      Walk("/");
      return;
    }
    for (const std::string& s : opts_.subtrees) Walk(s);
  }

  bool UnderBudget() {
    if (dir_wd_.size() + by_fd_.size() * (1 + kept_per_container_) < opts_.max_watches) return true;
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.over_budget;
    return false;
  }

  void CountWatches() {
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.watches = dir_wd_.size() + by_fd_.size() * (1 + kept_per_container_);
  }

  // Watches `path` and every directory below it, down to containers (what runs inside a
  // container's cgroup is the container's).
  void Walk(const std::string& path) {
    if (ClassifyCgroupPath(path).kind == CgroupKind::kContainer) {
      AddContainer(path);
      return;
    }
    const std::string full = Full(path);
    if (dir_wd_.find(path) == dir_wd_.end()) {
      if (!UnderBudget()) return;
      const int wd = inotify_add_watch(inotify_fd_, full.c_str(), IN_CREATE | IN_DELETE | IN_ONLYDIR);
      if (wd < 0) return;
      dir_wd_[path] = wd;
      dir_of_wd_[wd] = path;
      CountWatches();
    }
    DIR* d = ::opendir(full.c_str());
    if (d == nullptr) return;
    while (const dirent* e = ::readdir(d)) {
      if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
      Walk(path == "/" ? "/" + std::string(e->d_name) : path + "/" + e->d_name);
    }
    ::closedir(d);
  }

  // The kernel wakes a poller of cgroup.events at once when it changes (inotify's event
  // comes later, from a work item): the final read starts as the last process leaves.
  void AddContainer(const std::string& path) {
    if (containers_.count(path) != 0 || !UnderBudget()) return;
    struct stat st;
    if (::stat(Full(path).c_str(), &st) != 0) return;
    const int fd = ::open((Full(path) + "/cgroup.events").c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return;
    epoll_event ev{};
    ev.events = EPOLLPRI;
    ev.data.fd = fd;
    if (epoll_ctl(epoll_fd_, EPOLL_CTL_ADD, fd, &ev) != 0) {
      ::close(fd);
      return;
    }
    auto [it, inserted] = containers_.emplace(path, Container{});
    Container& c = it->second;
    c.path = path;
    c.events_fd = fd;
    c.cgroup_id = st.st_ino;
    c.created_ns = int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
    for (size_t i = 0; i < plan_.size(); ++i) {
      const CgroupFileReader& r = *plan_[i];
      if (!KeptOpen(r) || !h_.has(r.hierarchy)) continue;
      const int kfd = ::open((h_.mount[r.hierarchy] + path + "/" + r.name).c_str(), O_RDONLY | O_CLOEXEC);
      if (kfd >= 0) c.kept.emplace_back(i, kfd);
    }
    by_fd_[fd] = &c;
    CountWatches();
    // Its processes may have come and gone before the fd was open.
    Check(&c);
  }

  void CloseKept(Container* c) { CloseKept(&c->kept); }
  static void CloseKept(std::vector<std::pair<size_t, int>>* kept) {
    for (auto& [i, fd] : *kept) ::close(fd);
    kept->clear();
  }

  void CloseEvents(Container* c) {
    if (c->events_fd < 0) return;
    epoll_ctl(epoll_fd_, EPOLL_CTL_DEL, c->events_fd, nullptr);
    by_fd_.erase(c->events_fd);
    ::close(c->events_fd);
    c->events_fd = -1;
    CountWatches();
  }

  void DrainInotify() {
    alignas(inotify_event) char buf[65536];
    for (;;) {
      const ssize_t n = ::read(inotify_fd_, buf, sizeof buf);
      if (n <= 0) return;
      for (ssize_t off = 0; off < n;) {
        const auto* ev = reinterpret_cast<const inotify_event*>(buf + off);
        Handle(*ev);
        off += static_cast<ssize_t>(sizeof(inotify_event) + ev->len);
      }
    }
  }

  void Handle(const inotify_event& ev) {
    if (ev.mask & IN_Q_OVERFLOW) {
      {
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++stats_.overflows;
      }
      WalkSubtrees();
      return;
    }
    auto it = dir_of_wd_.find(ev.wd);
    if (it == dir_of_wd_.end()) return;
    if (ev.mask & IN_IGNORED) {
      dir_wd_.erase(it->second);
      dir_of_wd_.erase(it);
      CountWatches();
      return;
    }
    if (!(ev.mask & IN_ISDIR) || ev.len == 0) return;
    const std::string& parent = it->second;
    const std::string child = parent == "/" ? "/" + std::string(ev.name) : parent + "/" + ev.name;
    if (ev.mask & IN_CREATE) Walk(child);
    if (ev.mask & IN_DELETE) RemoveSubtree(child);
  }

  // `path` was removed: its watches and those below it go (the kernel's IN_IGNORED does
  // not come while another process keeps a file of the directory open).
  void RemoveSubtree(const std::string& path) {
    const std::string prefix = path + "/";
    auto under = [&](const std::string& p) { return p == path || p.compare(0, prefix.size(), prefix) == 0; };
    for (auto it = containers_.lower_bound(path); it != containers_.end() && under(it->first);) {
      // A final read still due: the cgroup went before it could be made.
      if (it->second.events_fd >= 0 && it->second.seen_populated) Check(&it->second);
      CloseEvents(&it->second);
      CloseKept(&it->second);
      it = containers_.erase(it);
    }
    for (auto it = dir_wd_.lower_bound(path); it != dir_wd_.end() && under(it->first);) {
      inotify_rm_watch(inotify_fd_, it->second);
      dir_of_wd_.erase(it->second);
      it = dir_wd_.erase(it);
    }
    CountWatches();
  }

  // Reads the container's cgroup.events: on `populated 0` after it held processes, the
  // final read.
  // Reads `c` once its cgroup emptied; true when that was its final read (made or missed).
  bool Check(Container* c) {
    if (c->events_fd < 0) return false;
    char buf[256];
    const ssize_t n = ::pread(c->events_fd, buf, sizeof buf - 1, 0);
    if (n <= 0) {  // removed (ENODEV): nothing more to read
      if (c->seen_populated) CountMissed();
      CloseEvents(c);
      CloseKept(c);
      return false;
    }
    const int64_t populated = FlatKey(std::string_view(buf, static_cast<size_t>(n)), "populated");
    if (populated == 1) {
      c->seen_populated = true;
      return false;
    }
    if (populated != 0) return false;
    if (!c->seen_populated) {
      // Watched only after its processes left? Then it has used CPU time.
      if (!ReadWhole(Full(c->path) + "/cpu.stat", &buf_) || FlatKey(buf_, "usage_usec") <= 0) return false;
    }
    const int64_t exit_ns = NowNs(CLOCK_REALTIME);
    CgroupStats s;
    const bool read = ReadFinal(*c, &s);
    CloseEvents(c);
    if (!read) {
      CloseKept(c);
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.missed;
      ++stats_.missed_reading;
      return true;
    }
    ExitInfo e;
    e.exit_ns = exit_ns;
    if (c->created_ns > 0 && exit_ns >= c->created_ns) e.lifetime_ns = exit_ns - c->created_ns;
    const MemoryEvents& ev = s.memory.events;
    const MemoryEvents& local = s.memory.events_local;
    if ((ev.oom_kill && *ev.oom_kill > 0) || (local.oom_kill && *local.oom_kill > 0)) {
      e.reason = ExitReason::kOomKilled;
    }
    s.exit = e;
    {
      std::lock_guard<std::mutex> lock(stats_mu_);
      ++stats_.exits;
    }
    if (settling_.empty() || c->kept.empty()) {
      CloseKept(c);
      records_->Add(std::move(s), NowNs(CLOCK_MONOTONIC));
      return true;
    }
    // The record waits for its later reads; the kept fds go with it.
    const int64_t read_ns = NowNs(CLOCK_MONOTONIC);
    settling_[0].push_back(Settling{std::move(s), std::move(c->kept), read_ns, read_ns + opts_.settle_ns[0]});
    c->kept.clear();
    CountSettling();
    ArmTimer();
    return true;
  }

  // A record read at an exit, waiting for its later reads (ExitWatcherOptions::settle_ns).
  struct Settling {
    CgroupStats stats;
    std::vector<std::pair<size_t, int>> kept;
    int64_t final_ns = 0;  // CLOCK_MONOTONIC of the final read
    int64_t due_ns = 0;    // of the next read
  };

  void CountSettling() {
    size_t n = 0;
    for (const auto& stage : settling_) n += stage.size();
    std::lock_guard<std::mutex> lock(stats_mu_);
    stats_.settling = n;
  }

  // Due when the earliest of the stages' first records is (each stage is in due order: its
  // records came in the order of their final reads, all after the same delay); disarmed
  // when none waits.
  void ArmTimer() {
    int64_t due_ns = 0;
    for (const auto& stage : settling_) {
      if (!stage.empty() && (due_ns == 0 || stage.front().due_ns < due_ns)) due_ns = stage.front().due_ns;
    }
    itimerspec t{};
    t.it_value.tv_sec = static_cast<time_t>(due_ns / 1'000'000'000);
    t.it_value.tv_nsec = static_cast<long>(due_ns % 1'000'000'000);
    timerfd_settime(timer_fd_, TFD_TIMER_ABSTIME, &t, nullptr);  // 0 disarms
  }

  // Every read that is due, the earlier stages first; true when there was one.
  bool SettleDue() {
    uint64_t expirations;
    [[maybe_unused]] ssize_t n = ::read(timer_fd_, &expirations, sizeof expirations);
    const int64_t now = NowNs(CLOCK_MONOTONIC);
    bool any = false;
    for (size_t k = 0; k < settling_.size(); ++k) {
      while (!settling_[k].empty() && settling_[k].front().due_ns <= now) {
        Settle(k, /*read_again=*/true);
        any = true;
      }
    }
    CountSettling();
    ArmTimer();
    return any;
  }

  // When the thread ends: records waiting for later reads keep what was read so far.
  void AddSettling() {
    for (size_t k = 0; k < settling_.size(); ++k) {
      while (!settling_[k].empty()) Settle(k, /*read_again=*/false);
    }
    CountSettling();
  }

  // Reads the kept files again into a copy of the record (by name those that could not be
  // kept: a hierarchy's directory made after the unified one was watched) and keeps the copy
  // when it has a CPU time no smaller (the counters only grow; a cgroup gone by now fails
  // the reads and what was read before stands). Then the front of stage k moves to the next
  // stage, or, after the last, its record is added.
  void Settle(size_t k, bool read_again) {
    Settling* e = &settling_[k].front();
    const bool last = !read_again || k + 1 == settling_.size();
    if (read_again) {
      CgroupStats again = e->stats;
      again.cpu.usage_ns.reset();  // recomputed from the per-CPU times where those are the source
      bool read_cpu = false;
      std::vector<bool> done(plan_.size());
      auto apply = [&](size_t i) {
        ApplyReader(*plan_[i], buf_, &again);
        read_cpu |= plan_[i]->name == std::string_view("cpu.stat") || plan_[i]->hierarchy == kV1Cpuacct;
      };
      for (const auto& [i, fd] : e->kept) {
        done[i] = true;
        if (PreadWhole(fd, &buf_)) apply(i);
      }
      for (size_t i = 0; i < plan_.size(); ++i) {
        const CgroupFileReader& r = *plan_[i];
        if (done[i] || !KeptOpen(r) || !h_.has(r.hierarchy)) continue;
        if (ReadWhole(h_.mount[r.hierarchy] + e->stats.id.cgroup_path + "/" + r.name, &buf_)) apply(i);
      }
      FinishCgroupStats(&again);
      const CpuStats& first = e->stats.cpu;
      const bool kept = read_cpu && again.cpu.usage_ns && first.usage_ns && *again.cpu.usage_ns >= *first.usage_ns;
      const uint64_t added = kept ? *again.cpu.usage_ns - *first.usage_ns : 0;
      {
        std::lock_guard<std::mutex> lock(stats_mu_);
        ++stats_.later_reads;
        if (added > 0) {
          ++stats_.settled;
          if (k > 0) ++stats_.settled_late;
          stats_.settled_max_ns = std::max(stats_.settled_max_ns, added);
        }
      }
      if (kept) e->stats = std::move(again);
    }
    if (!last) {
      e->due_ns = e->final_ns + opts_.settle_ns[k + 1];
      settling_[k + 1].push_back(std::move(*e));
      settling_[k].pop_front();
      return;
    }
    CloseKept(&e->kept);
    records_->Add(std::move(e->stats), NowNs(CLOCK_MONOTONIC));
    settling_[k].pop_front();
  }

  void CountMissed() {
    std::lock_guard<std::mutex> lock(stats_mu_);
    ++stats_.missed;
  }

  // Every file of the read plan, from each hierarchy the cgroup is in. False when the
  // cgroup was gone before its CPU time could be read.
  bool ReadFinal(const Container& c, CgroupStats* s) {
    const PathClass cls = ClassifyCgroupPath(c.path);
    s->id.cgroup_path = c.path;
    s->id.cgroup_id = c.cgroup_id;
    s->id.kind = cls.kind;
    s->id.qos = cls.qos;
    s->id.runtime = cls.runtime;
    s->id.driver = cls.driver;
    s->id.container_id = cls.container_id;
    s->id.pod_uid = cls.pod_uid;
    s->id.parent_path = cls.pod_path;
    if (c.created_ns > 0) s->id.created_ns = c.created_ns;
    // The kept files first (a pread each), then the rest of the plan by name.
    std::vector<bool> done(plan_.size());
    for (const auto& [i, fd] : c.kept) {
      done[i] = true;
      if (PreadWhole(fd, &buf_)) ApplyReader(*plan_[i], buf_, s);
    }
    for (size_t i = 0; i < plan_.size(); ++i) {
      const CgroupFileReader* r = plan_[i];
      if (done[i] || !h_.has(r->hierarchy)) continue;
      if (!ReadWhole(h_.mount[r->hierarchy] + c.path + "/" + r->name, &buf_)) continue;
      ApplyReader(*r, buf_, s);
    }
    FinishCgroupStats(s);  // what the files imply (v1: usage from the per-CPU times)
    return s->cpu.usage_ns.has_value();
  }

  const ExitWatcherOptions opts_;
  ExitRecords* records_;
  const CgroupHierarchies h_;
  const std::vector<const CgroupFileReader*> plan_;
  size_t kept_per_container_ = 0;  // fds a container holds beside its cgroup.events
  int inotify_fd_ = -1;
  int stop_fd_ = -1;
  int epoll_fd_ = -1;
  int timer_fd_ = -1;  // due when the earliest later read is (ArmTimer)
  std::string buf_;
  // One queue per later read (ExitWatcherOptions::settle_ns), each in due order.
  std::vector<std::deque<Settling>> settling_;
  // The watcher thread's own (after Init): directory watches, containers, their fds.
  std::map<std::string, int> dir_wd_;
  std::unordered_map<int, std::string> dir_of_wd_;
  std::map<std::string, Container> containers_;
  std::unordered_map<int, Container*> by_fd_;
  mutable std::mutex stats_mu_;
  ExitWatcherStats stats_;  // guarded by stats_mu_
  bool realtime_ = false;   // the thread runs SCHED_FIFO (its own; read only on it)
};

StatusOr<std::unique_ptr<ExitWatcher>> ExitWatcher::Start(const ExitWatcherOptions& options, ExitRecords* records) {
  for (size_t k = 0; k < options.settle_ns.size(); ++k) {
    if (options.settle_ns[k] <= 0 || (k > 0 && options.settle_ns[k] <= options.settle_ns[k - 1])) {
      return InvalidArgument("exit watcher: the later reads' delays must be positive and ascending");
    }
  }
  auto h = DetectHierarchies(options.cgroup_mount, options.proc_root);
  if (!h.ok()) return h.status();
  if (!h->has(kUnified)) {
    return Unavailable("no cgroup2 mount: exits are not watched (cgroup v1 only has no populated notification)");
  }
  auto impl = std::make_unique<Impl>(options, records, std::move(*h));
  Status s = impl->Init();
  if (!s.ok()) return s;
  return std::unique_ptr<ExitWatcher>(new ExitWatcher(std::move(impl)));
}

ExitWatcher::ExitWatcher(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {
  thread_ = std::thread([this] {
    pthread_setname_np(pthread_self(), "statlet-exits");  // as `top -H` and /proc/<pid>/task show it
    impl_->SetScheduling();
    impl_->Run();
  });
  native_ = thread_.native_handle();
}

ExitWatcher::~ExitWatcher() {
  impl_->Stop();
  if (thread_.joinable()) thread_.join();
}

ExitWatcherStats ExitWatcher::stats() const { return impl_->stats(); }

int64_t ExitWatcher::thread_cpu_ns() const {
  clockid_t clock;
  timespec ts{};
  if (pthread_getcpuclockid(native_, &clock) != 0 || clock_gettime(clock, &ts) != 0) return -1;
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

}  // namespace statlet
