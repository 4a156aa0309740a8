// ExitWatcher: catches containers as their cgroup empties and reads their final counters
// before the runtime removes the cgroup, so that a container living less than a scrape
// interval is still reported (collector/exit_records.h keeps what it read).
//
// The kernel signals a cgroup v2 directory emptying by rewriting its `cgroup.events`
// (`populated 0`, cgroup-v2.rst "Un-populated Notification") and inotify reports that
// write as IN_MODIFY. The unified hierarchy has that file with or without controllers, so
// a hybrid host (v1 controllers plus a cgroup2 mount) gets the same notification and the
// final read takes every hierarchy's files. A v1-only host has no such notification
// (v1's release_agent is one host-wide program): there, no exit record is made and a
// container's series end with the last collection that saw it.
//
// One thread: inotify on every directory of the unified hierarchy under the subtrees (to
// see containers appear, even between collections), and each container's cgroup.events
// held open and polled (the kernel wakes a poller as the file changes; inotify's IN_MODIFY
// comes later, from a work item, often after a runtime removed the cgroup). A container
// holds its cgroup.events and the files whose loss would void its record (CPU time, memory
// peak: two to four fds) open while it lives, none after; those are read first, by pread,
// the rest of the read plan by name.
#pragma once

#include <pthread.h>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"
#include "collector/cgroup_hierarchies.h"
#include "collector/exit_records.h"

namespace statlet {

struct ExitWatcherOptions {
  std::string cgroup_mount = "/sys/fs/cgroup";
  std::string proc_root = "/proc";
  std::vector<std::string> subtrees;  // as CollectorOptions::subtrees; empty: the whole tree
  std::string hugepages_dir = "/sys/kernel/mm/hugepages";
  // Directory watches plus container fds at most (fs.inotify.max_user_watches is shared).
  size_t max_watches = 65536;
  // The watcher thread's nice value (setpriority; kept when the process may not raise it).
  // It runs only as containers come and go, and a final read must win the race against the
  // runtime's removal of the cgroup on a busy node: a wake-up waiting behind other work is
  // a lost record.
  int thread_nice = -10;
  // Run the thread SCHED_FIFO at the lowest real-time priority when the process may
  // (CAP_SYS_NICE, and on kernels with RT group scheduling a cgroup with real-time
  // runtime): a container's last exit then wakes it ahead of every ordinary thread, where
  // the nice value only weighs its share. Only the final reads run real-time (a few file
  // reads per emptied container; new directories are walked as an ordinary thread); a
  // wake-up whose final reads take more CPU than `realtime_budget_ns` puts the thread back
  // to the ordinary policy for good (the kernel's real-time throttling,
  // kernel.sched_rt_runtime_us, bounds it meanwhile).
  bool realtime = true;
  int64_t realtime_budget_ns = 50'000'000;
  // Later reads of the kept files (CPU time, memory peak) this long after the final read
  // (ascending), while the cgroup is still there (a runtime removes it after deleting the
  // task: 16 ms at the soonest measured, bench/RESULTS.md), and the record waits for the
  // last. The exiting task's last CPU time is charged after its cgroup empties: the kernel
  // adds a running task's time at ticks and switches, and the last of it at the task's
  // final switch, after it left the cgroup's task list; a real-time watcher woken by the
  // emptying runs ahead of it, and on a busy CPU the task may wait milliseconds for its
  // turn. The first read comes soon for runtimes that remove sooner, the second late
  // enough for a task that waited. A cgroup gone by then keeps what was read before.
  // Empty: no later read.
  std::vector<int64_t> settle_ns = {2'000'000, 12'000'000};
};

struct ExitWatcherStats {
  uint64_t exits = 0;           // final reads made
  uint64_t missed = 0;          // the cgroup was gone before its final read
  uint64_t missed_reading = 0;  // of those, gone while the final read ran (no CPU time read)
  uint64_t watches = 0;         // directory watches and container fds held now
  uint64_t over_budget = 0;     // directories or containers left unwatched (max_watches)
  uint64_t overflows = 0;       // inotify queue overflows (exits in between may be missed)
  uint64_t later_reads = 0;     // reads made after a final read (settle_ns)
  uint64_t settled = 0;         // later reads that found more CPU time than the reads before
  uint64_t settled_late = 0;    // of those, reads after the first later read
  uint64_t settled_max_ns = 0;  // the most CPU time one later read added to a record
  uint64_t settling = 0;        // final reads whose record waits for its later reads now
                                // (exits counts them; the records do once they are made)
  bool realtime = false;        // the thread runs SCHED_FIFO now
  int nice = 0;                 // the thread's nice value (what applies when not real-time)
};

class ExitWatcher {
 public:
  // Unavailable (an error) on a host without a cgroup2 mount, or without inotify.
  static StatusOr<std::unique_ptr<ExitWatcher>> Start(const ExitWatcherOptions& options, ExitRecords* records);
  ~ExitWatcher();
  ExitWatcher(const ExitWatcher&) = delete;
  ExitWatcher& operator=(const ExitWatcher&) = delete;

  ExitWatcherStats stats() const;
  // The watcher thread's CPU time so far (its clock, read from outside: nothing on its path).
  int64_t thread_cpu_ns() const;

 private:
  class Impl;
  explicit ExitWatcher(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
  std::thread thread_;
  pthread_t native_{};  // thread_'s, for its CPU clock
};

}  // namespace statlet
