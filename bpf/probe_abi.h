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
// the per-CPU `counters` array). The faults and runqlat probes each own their fields.
struct statlet_sched_counters {
  __u64 minor_faults;  // faults: page faults of tasks switching out of this CPU
  __u64 major_faults;
  __u64 runq_sum_ns;  // runqlat: total wait of tasks switching out, and its histogram
  __u64 runq_slots[STATLET_RUNQ_SLOTS];
};

// Per-CPU state of the sched_switch program (one entry per CPU, never read by user space):
// the last cgroup looked up on this CPU, valid while `epoch` is the loader's.
struct statlet_sched_cpu {
  __u64 cache_cgroup_id;
  __u32 cache_slot;
  __u32 cache_epoch;
};

// What the sched_switch program has already counted of one task (task local storage):
// its own counters as of its last accounted switch-out. Each switch-out the program sees
// adds the differences, so a switch the program does not see loses nothing.
struct statlet_task_marks {
  __u64 run_delay_ns;  // sched_info.run_delay
  __u64 arrivals;      // sched_info.pcount
  __u64 min_flt;
  __u64 maj_flt;
  __u64 seen;  // 0 on creation, until the marks are set
};

// ---------------------------------------------------------------- cgroup iterators
// A cgroup iterator walk writes one entry per cgroup into mmapable array maps (a walk's
// seq_file output is capped at 32 KiB and cannot be resumed), then, once the walk is
// complete, one statlet_iter_trailer into the iterator's output.
#define STATLET_ITER_MAX_CPUS 1024

struct statlet_iter_trailer {
  __u32 magic;    // STATLET_ITER_MAGIC: the walk completed
  __u32 cgroups;  // cgroups visited; entries beyond the maps' size were not stored
};
#define STATLET_ITER_MAGIC 0x73746174u

// cgroup_cpu_iter: one per cgroup; its per-CPU times are cpu_times[index * nr_cpus + cpu].
struct statlet_cgroup_entry {
  __u64 cgroup_id;
  __u32 level;  // depth below the hierarchy root (pre-order walk: parents come first)
  __u32 pad;
};

// The kernel items the stats iterator reads for memory.stat, one slot each, from
// snapshot/memory_stat.def: STATLET_MS_<name> in memcg_vmstats.state, STATLET_ME_<name> in
// its events; user space names and sums them (cgroup_stats_render.cc).
enum statlet_memstat_state {
#define STATLET_MEMSTAT_STATE(field, v2_key, v1_key, kernel_enum, kernel_item, unit) STATLET_MS_##field,
#define STATLET_MEMSTAT_STATE_PART(name, kernel_enum, kernel_item, unit) STATLET_MS_##name,
#include "snapshot/memory_stat.def"
  STATLET_MS_STATE_ITEMS,
};
enum statlet_memstat_event {
#define STATLET_MEMSTAT_EVENT(field, v2_key, v1_key, kernel_item) STATLET_ME_##field,
#define STATLET_MEMSTAT_EVENT_PART(name, kernel_item) STATLET_ME_##name,
#include "snapshot/memory_stat.def"
  STATLET_ME_EVENT_ITEMS,
};
// memory.events (snapshot/memory_events.def), by STATLET_MEV_<field>.
enum statlet_memory_event {
#define STATLET_MEMORY_EVENT(field, key, kernel_item) STATLET_MEV_##field,
#include "snapshot/memory_events.def"
  STATLET_MEMORY_EVENTS,
};

// Which parts of a statlet_cgroup_stats entry hold values.
#define STATLET_PART_CPU \
  (1u << 0)                                 // rstat CPU time (not for the root, whose
                                            // cpu.stat comes from system-wide counters)
#define STATLET_PART_CFS (1u << 1)          // the cpu controller's bandwidth counters
#define STATLET_PART_MEMORY (1u << 2)       // memcg page counters and memory.events
#define STATLET_PART_MEMSTAT (1u << 3)      // memory.stat items
#define STATLET_PART_PIDS (1u << 4)         // pids.current
#define STATLET_PART_PIDS_EVENTS (1u << 5)  // pids.events max

// cgroup_stats_iter: one per cgroup, raw kernel values; user space renders them as the
// cgroup files show them.
struct statlet_cgroup_stats {
  __u64 cgroup_id;
  __u32 level;
  __u32 parts;
  // cpu.stat: rstat base stats after the flush (ns) and cputime_adjust's last split
  __u64 sum_exec_ns, utime_ns, stime_ns, prev_utime_ns, prev_stime_ns;
  __u64 nr_periods, nr_throttled, throttled_ns, nr_bursts, burst_ns;  // in statlet_read_cfs's order
  // memory (pages)
  __u64 memory_pages, memory_peak_pages, swap_pages;
  __u64 memory_events[STATLET_MEMORY_EVENTS];
  __u64 memory_events_local[STATLET_MEMORY_EVENTS];
  __s64 memstat_state[STATLET_MS_STATE_ITEMS];   // memcg_vmstats.state, raw
  __u64 memstat_events[STATLET_ME_EVENT_ITEMS];  // memcg_vmstats.events (0: not in this kernel)
  // pids
  __u64 pids_current, pids_events_max;
};

// cgroup_v1_iter: one per cgroup of a v1 hierarchy (cpu, cpuacct or memory, alone or
// co-mounted), raw kernel values; cpuacct's per-CPU times are cpu_usage[index * nr_cpus + cpu].
#define STATLET_V1_CFS (1u << 0)      // the cpu controller's bandwidth counters (cpu.stat)
#define STATLET_V1_CPUACCT (1u << 1)  // cpuacct.usage_percpu in cpu_usage
#define STATLET_V1_MEMORY \
  (1u << 2)                               // memory page counters (not for the root, whose
                                          // usage the kernel sums from its statistics)
#define STATLET_V1_KMEM (1u << 3)         // memory.kmem.usage_in_bytes
#define STATLET_V1_OOM_CONTROL (1u << 4)  // memory.oom_control
#define STATLET_V1_CPUACCT_TIMES \
  (1u << 5)  // cpuacct.usage_user and .usage_sys (not for the
             // root, whose times are the whole host's)
struct statlet_cgroup_v1_stats {
  __u64 cgroup_id;
  __u32 level;
  __u32 parts;
  __u64 nr_periods, nr_throttled, throttled_ns, nr_bursts, burst_ns;       // in statlet_read_cfs's order
  __u64 memory_pages, memory_watermark_pages, memory_failcnt, kmem_pages;  // pages; failcnt a count
  __u64 oom_kill;
  __u32 oom_kill_disable, under_oom;
  __u64 cpuacct_user_ns, cpuacct_system_ns;  // summed over the possible CPUs, as the files show
};

// What the stats iterator learns of the kernel on its first walk (its .bss `setup`), for
// the loader to map memory.stat items to memcg_vmstats slots.
#define STATLET_INDEX_TABLE_BYTES 1024
struct statlet_memstat_setup {
  __u32 done;
  __u32 state_len;                           // entries of memcg_vmstats.state
  __u32 events_len;                          // entries of memcg_vmstats.events
  __u32 nr_stat_items;                       // MEMCG_NR_STAT: state is indexed by the enums when equal to state_len
  __u32 nr_event_items;                      // NR_VM_EVENT_ITEMS: likewise for events
  __u32 events_table_ok;                     // mem_cgroup_events_index was found and copied
  __s32 state_enum[STATLET_MS_STATE_ITEMS];  // kernel enum values (-1: not in this kernel)
  __s32 event_enum[STATLET_ME_EVENT_ITEMS];
  __u8 events_table[STATLET_INDEX_TABLE_BYTES];  // the kernel's events index table, raw
};

// A TCP drop, counted per (socket's cgroup, kernel drop reason).
struct statlet_drop_key {
  __u64 cgroup_id;
  __u32 reason;  // enum skb_drop_reason value of the running kernel
  __u32 pad;
};

struct statlet_oom_event {
  __u64 boot_ns;           // CLOCK_BOOTTIME of the kill decision
  __u64 cgroup_id;         // the victim's cgroup v2 id
  __u32 pid;               // the victim process (tgid)
  __u32 tid;               // the victim thread chosen by the OOM killer
  __u32 constraint_memcg;  // 1: a memory cgroup at its limit; 0: global memory pressure
  __u32 pad;
  char comm[16];
};

// What the cgroup_skb programs count for one cgroup on one CPU (the per-CPU value of the
// `traffic` hash, keyed by the socket's cgroup id). Bytes are skb->len as the program sees
// it: the IP packet, headers included (one set per GSO/GRO super-packet); packets count the
// segments a GSO/GRO super-packet stands for.
struct statlet_net_counters {
  __u64 rx_bytes, rx_packets;
  __u64 tx_bytes, tx_packets;
};
