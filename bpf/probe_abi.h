// Map keys, values and events shared by the BPF programs and the C++ loader.
// Plain fixed-size types only: this header is compiled by clang -target bpf and by C++.
#pragma once

#include <linux/types.h>

// Default bound of every per-cgroup map; the loader may change it before load.
#define STATLET_BPF_MAX_CGROUPS 4096

// Run-queue latency buckets: slot i counts waits in [2^i, 2^(i+1)) microseconds; slot 0
// also holds waits under 1 us and the last slot everything from 2^(SLOTS-1) us (~67 s) up.
#define STATLET_RUNQ_SLOTS 27

// What the sched_switch program counts for one cgroup on one CPU (the value of a slot of
// the per-CPU `counters` array). The cpu, faults and runqlat probes each own their fields.
struct statlet_sched_counters {
  __u64 cpu_ns;        // cpu: time the cgroup's tasks ran on this CPU
  __u64 minor_faults;  // faults: page faults of tasks switching out of this CPU
  __u64 major_faults;
  __u64 runq_sum_ns;   // runqlat: total wait of tasks switching in, and its histogram
  __u64 runq_slots[STATLET_RUNQ_SLOTS];
};

// Per-CPU state of the sched_switch program (one entry per CPU, never read by user space).
struct statlet_sched_cpu {
  // Slot cache: the last cgroup looked up on this CPU, valid while `epoch` is the loader's.
  __u64 cache_cgroup_id;
  __u32 cache_slot;
  __u32 cache_epoch;
  // The task switched in here (0: idle or unknown) and its counters then: it is the
  // `prev` of this CPU's next switch, which accounts its stay from the differences.
  __u64 running_task;
  __u64 running_exec_ns;    // se.sum_exec_runtime
  __u64 running_delay_ns;   // sched_info.run_delay, before this stay's wait was added
  __u64 running_min_flt;
  __u64 running_maj_flt;
};

// A TCP drop, counted per (socket's cgroup, kernel drop reason).
struct statlet_drop_key {
  __u64 cgroup_id;
  __u32 reason;  // enum skb_drop_reason value of the running kernel
  __u32 pad;
};

struct statlet_oom_event {
  __u64 boot_ns;        // CLOCK_BOOTTIME of the kill decision
  __u64 cgroup_id;      // the victim's cgroup v2 id
  __u32 pid;            // the victim process (tgid)
  __u32 tid;            // the victim thread chosen by the OOM killer
  __u32 constraint_memcg;  // 1: a memory cgroup at its limit; 0: global memory pressure
  __u32 pad;
  char comm[16];
};
