// --collector.*: what a collection reads (CollectorOptions) and how long its snapshot serves
// scrapes.
#include "cmd/daemon_flags.h"

namespace statlet {

void RegisterCollectorFlags(FlagSet& flags, DaemonOptions* o) {
  CollectorOptions& c = o->collector;
  FlagGroup collector = flags.Group("collector");
  collector
      .Duration("max-age", &o->http.max_age, {},
                "Serve a snapshot younger than this instead of collecting again (0: collect per scrape; "
                "concurrent scrapes always share one collection).")
      .Example("2s");
  collector.String("cgroup-root", &c.cgroup_mount, "Where the cgroup hierarchies are mounted.");
  collector.String("proc-root", &c.proc_root, "Mount point of procfs.");
  collector
      .List("subtree", &c.subtrees, ListForm::kRepeated,
            "Only report cgroups under this path (relative to the hierarchy root); repeatable. Default: all.",
            AbsolutePath())
      .ConfigKey("subtrees")
      .Example("/kubepods");
  collector.Bool("include-empty", &c.include_empty,
                 "Also report cgroups with no processes that are not Kubernetes or runtime cgroups.");
  collector.Bool("network", &c.network, "Read network counters of each pod's namespace.");
  collector.Bool("process-fds", &c.process_fds,
                 "Count open file descriptors and sockets of every container process (/proc/<pid>/fd) and read the "
                 "first process's open-files ulimit, as cAdvisor's process metrics.");
  collector.Integer("max-kept-files", &c.max_kept_files, {},
                    "Cgroup files kept open between collections, at most (each costs ~5 KiB of kernel memory charged "
                    "to statlet's cgroup; the rest are opened and closed on every collection, up to ~8x the read "
                    "cost).");
  collector.Integer("read-threads", &c.read_threads, {1, 64},
                    "Threads reading cgroup files in a collection, the collecting one included (at most the CPUs "
                    "statlet may run on; 1: one thread). Two take ~25-33% off a large collection's latency for 9-33% "
                    "more CPU.");
  collector.Bool("watch-limits", &c.watch_limits,
                 "Serve the cgroup files only a write of their own changes (memory, CPU and pids limits) from memory "
                 "between inotify events instead of reading them on every collection.");
  collector
      .Duration("exit-retention", &o->exits.retention, {},
                "Keep the series of a container whose cgroup emptied, with their final values (read when the kernel "
                "reports it empty, before the runtime removes it), for this long (0: no exit records). Needs a cgroup2 "
                "mount (v2 or hybrid).")
      .Example("2m");
  collector.Integer("exit-records-max", &o->exits.max_records, {1, 1000000},
                    "Exit records held at most; the oldest goes first (statlet_container_exit_records_dropped_total).");
  collector.Bytes("exit-records-max-bytes", &o->exits.max_bytes, {4096, uint64_t{1} << 34},
                  "Memory the exit records may hold at most (estimated); the oldest goes first.");
  collector.Bool("exit-realtime", &o->exits.realtime,
                 "Run the exit watcher's final reads real-time (SCHED_FIFO at the lowest priority; needs "
                 "CAP_SYS_NICE), so that a busy node's runtime does not remove a cgroup before its final read; "
                 "otherwise, or when it may not, the thread runs at nice -10 (statlet_exit_watcher_realtime).");
  collector.Bool("per-cpu", &o->metrics.per_cpu,
                 "Expose container_cpu_usage_seconds_total per CPU (cpu=\"cpuNN\") instead of cpu=\"total\", as "
                 "cAdvisor's percpu metrics.");
}

}  // namespace statlet
