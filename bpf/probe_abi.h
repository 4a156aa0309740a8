// Map keys, values and events shared by the BPF programs and the C++ loader.
// Plain fixed-size types only: this header is compiled by clang -target bpf and by C++.
#pragma once

#include <linux/types.h>

// Default bound of every per-cgroup map; the loader may change it before load.
#define STATLET_BPF_MAX_CGROUPS 4096

// Run-queue latency buckets: slot i counts waits in [2^i, 2^(i+1)) microseconds; slot 0
// also holds waits under 1 us and the last slot everything from 2^(SLOTS-1) us (~67 s) up.
#define STATLET_RUNQ_SLOTS 27

struct statlet_runq_hist {
  __u64 slots[STATLET_RUNQ_SLOTS];
  __u64 sum_ns;
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
