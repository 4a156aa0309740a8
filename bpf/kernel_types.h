// The few kernel types the probes read, declared by hand for CO-RE.
//
// Every struct carries preserve_access_index, so clang records each field access as a BTF
// relocation and libbpf patches the real offsets from the running kernel's BTF at load
// time. Only the fields the programs touch are declared; their order and the missing
// members do not matter. This keeps the build free of any vmlinux.h / build-machine BTF.
#pragma once

#include <linux/types.h>

#define STATLET_CORE __attribute__((preserve_access_index))

struct kernfs_node {
  __u64 id;  // the cgroup id (inode number of the cgroupfs directory)
} STATLET_CORE;

struct cgroup_subsys_state {
  struct cgroup* cgroup;
  struct cgroup_subsys_state* parent;
} STATLET_CORE;

// The rstat base statistics: a cgroup's CPU time (ns). Each CPU's copy counts the cgroup's
// own tasks on that CPU (__cgroup_account_cputime from update_curr); the flush folds the
// per-CPU deltas into cgroup.bstat, hierarchically (what cpu.stat shows).
struct task_cputime {
  __u64 stime;
  __u64 utime;
  unsigned long long sum_exec_runtime;
} STATLET_CORE;

struct cgroup_base_stat {
  struct task_cputime cputime;
} STATLET_CORE;

// The per-CPU rstat struct up to 6.15 (cgroup.rstat_cpu) ...
struct cgroup_rstat_cpu {
  struct cgroup_base_stat bstat;
} STATLET_CORE;

// ... and from 6.16 on, when rstat went per subsystem (cgroup.rstat_base_cpu).
struct cgroup_rstat_base_cpu {
  struct cgroup_base_stat bstat;
} STATLET_CORE;

// cputime_adjust's memory: the user/system split cpu.stat last showed.
struct prev_cputime {
  __u64 utime;
  __u64 stime;
} STATLET_CORE;

struct cgroup {
  struct cgroup_subsys_state self;
  int level;  // 0 for the hierarchy root
  struct kernfs_node* kn;
  struct cgroup_subsys_state* subsys[16];  // indexed by enum cgroup_subsys_id (CO-RE)
  struct cgroup_base_stat bstat;           // hierarchical, as of the last flush
  struct prev_cputime prev_cputime;
} STATLET_CORE;

// Flavours of struct cgroup: the per-CPU rstat pointer changed name in 6.16.
struct cgroup___rstat_cpu {
  struct cgroup_rstat_cpu* rstat_cpu;
} STATLET_CORE;
struct cgroup___rstat_base_cpu {
  struct cgroup_rstat_base_cpu* rstat_base_cpu;
} STATLET_CORE;

// Controller indices in css_set.subsys and cgroup.subsys, read from the kernel's enum
// (their values depend on the kernel's configuration).
enum cgroup_subsys_id {
  cpu_cgrp_id = 2,
  cpuacct_cgrp_id = 3,
  memory_cgrp_id = 4,
  pids_cgrp_id = 10,
};

struct css_set {
  struct cgroup_subsys_state* subsys[16];
  struct cgroup* dfl_cgrp;  // the task's cgroup on the unified (v2) hierarchy
} STATLET_CORE;

// CONFIG_SCHED_INFO (Debian: yes, via TASK_DELAY_ACCT): the scheduler's wait accounting.
// sched_info_enqueue stamps last_queued with the run queue's clock when a task starts to
// wait; sched_info_arrive, right after the sched_switch tracepoint that brings it in, adds
// rq_clock - last_queued to run_delay, counts the arrival in pcount and clears last_queued.
struct sched_info {
  unsigned long pcount;            // arrivals on a CPU after a wait on a run queue
  unsigned long long run_delay;    // total time spent waiting on a run queue
  unsigned long long last_queued;  // when the current wait began (rq clock), 0 when none
} STATLET_CORE;

// A CPU's run queue; its clock is updated at the start of __schedule, before the
// sched_switch tracepoint, and is the clock last_queued was stamped with. Reached from a
// task on that CPU through its fair-class entity (CONFIG_FAIR_GROUP_SCHED: set_task_rq
// points every task's se.cfs_rq at its CPU's queue, whatever its class): the per-CPU
// `runqueues` symbol itself is not in kallsyms without CONFIG_KALLSYMS_ALL.
struct rq {
  unsigned long long clock;
} STATLET_CORE;

struct cfs_rq {
  struct rq* rq;
} STATLET_CORE;

struct sched_entity {
  struct cfs_rq* cfs_rq;
} STATLET_CORE;

struct task_struct {
  int pid;   // thread id
  int tgid;  // process id
  char comm[16];
  struct css_set* cgroups;
  struct sched_entity se;
  struct sched_info sched_info;
  // Page faults of this thread, bumped only by the thread itself (mm_account_fault on
  // `current`); the same counts as /proc/<tid>/stat and the perf fault events.
  unsigned long min_flt;
  unsigned long maj_flt;
} STATLET_CORE;

typedef struct {
  long counter;
} atomic_long_t;

typedef struct {
  long long counter;
} atomic64_t;

struct page_counter {
  atomic_long_t usage;      // pages
  unsigned long failcnt;    // v1 memory.failcnt
  unsigned long watermark;  // pages: memory.peak, v1 memory.max_usage_in_bytes
  unsigned long max;        // pages
} STATLET_CORE;

// memcg statistics (memory.stat), hierarchical as of the last rstat flush. Up to 6.10
// `state` is indexed by the stat enums themselves; `events` by a compact index since 6.1
// (the kernel's private table mem_cgroup_events_index maps vm_event_item to it).
struct memcg_vmstats {
  long state[1];
  unsigned long events[1];
} STATLET_CORE;

// The kernel's memcg event counters (memory.events), indexed by enum memcg_memory_event.
struct mem_cgroup {
  struct cgroup_subsys_state css;
  struct page_counter memory;
  struct page_counter swap;
  struct memcg_vmstats* vmstats;
  atomic_long_t memory_events[1];
  atomic_long_t memory_events_local[1];
  // cgroup v1 only (under CONFIG_MEMCG_V1 from 6.12)
  struct page_counter kmem;  // memory.kmem.usage_in_bytes
  int under_oom;             // memory.oom_control
  int oom_kill_disable;
} STATLET_CORE;
// One CPU's time by kind (ns), indexed by enum cpu_usage_stat.
struct kernel_cpustat {
  __u64 cpustat[1];
} STATLET_CORE;
enum cpu_usage_stat {
  CPUTIME_USER,
  CPUTIME_NICE,
  CPUTIME_SYSTEM,
  CPUTIME_SOFTIRQ,
  CPUTIME_IRQ,
};
// The cgroup v1 cpuacct controller: the ns each CPU ran the group's tasks (usage_percpu),
// and each CPU's split of them by kind (usage_user, usage_sys).
struct cpuacct {
  struct cgroup_subsys_state css;
  __u64* cpuusage;                 // __percpu
  struct kernel_cpustat* cpustat;  // __percpu
} STATLET_CORE;

// The kernel enums' members statlet reads (snapshot/memory_events.def,
// snapshot/memory_stat.def); their values come from the running kernel (CO-RE), the ones
// here are placeholders.
enum memcg_memory_event {
#define STATLET_MEMORY_EVENT(field, key, kernel_item) kernel_item,
#include "snapshot/memory_events.def"
};
// STATLET_KERNEL_ITEM_IN_<enum>(item) declares `item` in the enum being written.
#define STATLET_KERNEL_ITEM(kernel_enum, kernel_item) STATLET_KERNEL_ITEM_IN_##kernel_enum(kernel_item)
#define STATLET_MEMSTAT_STATE(field, v2_key, v1_key, kernel_enum, kernel_item, unit) \
  STATLET_KERNEL_ITEM(kernel_enum, kernel_item)
#define STATLET_MEMSTAT_STATE_PART(name, kernel_enum, kernel_item, unit) STATLET_KERNEL_ITEM(kernel_enum, kernel_item)
#define STATLET_KERNEL_ITEM_IN_node_stat_item(item) item,
#define STATLET_KERNEL_ITEM_IN_memcg_stat_item(item)
enum node_stat_item {
#include "snapshot/memory_stat.def"
};
#undef STATLET_KERNEL_ITEM_IN_node_stat_item
#undef STATLET_KERNEL_ITEM_IN_memcg_stat_item
#define STATLET_MEMSTAT_STATE(field, v2_key, v1_key, kernel_enum, kernel_item, unit) \
  STATLET_KERNEL_ITEM(kernel_enum, kernel_item)
#define STATLET_MEMSTAT_STATE_PART(name, kernel_enum, kernel_item, unit) STATLET_KERNEL_ITEM(kernel_enum, kernel_item)
#define STATLET_KERNEL_ITEM_IN_node_stat_item(item)
#define STATLET_KERNEL_ITEM_IN_memcg_stat_item(item) item,
enum memcg_stat_item {
#include "snapshot/memory_stat.def"
  MEMCG_NR_STAT,
};
#undef STATLET_KERNEL_ITEM_IN_node_stat_item
#undef STATLET_KERNEL_ITEM_IN_memcg_stat_item
#undef STATLET_KERNEL_ITEM
enum vm_event_item {
#define STATLET_MEMSTAT_EVENT(field, v2_key, v1_key, kernel_item) kernel_item,
#define STATLET_MEMSTAT_EVENT_PART(name, kernel_item) kernel_item,
#include "snapshot/memory_stat.def"
  NR_VM_EVENT_ITEMS,
};

// The CFS bandwidth counters of a cpu controller group (cpu.stat nr_periods...).
struct cfs_bandwidth {
  int nr_periods;
  int nr_throttled;
  int nr_burst;
  __u64 throttled_time;  // ns
  __u64 burst_time;      // ns
} STATLET_CORE;

struct task_group {
  struct cgroup_subsys_state css;
  struct cfs_bandwidth cfs_bandwidth;
} STATLET_CORE;

struct pids_cgroup {
  struct cgroup_subsys_state css;
  atomic64_t counter;  // pids.current
} STATLET_CORE;
// Up to 6.11 pids.events "max" is one counter; 6.12 made the events hierarchical arrays.
struct pids_cgroup___events_limit {
  atomic64_t events_limit;
} STATLET_CORE;

// The kernel side of a BPF array map; pptrs[0] is the per-CPU base pointer of a per-CPU
// array's first value (see cgroup_iter.bpf.h).
struct bpf_array {
  __u32 elem_size;
  void* pptrs[0];
} STATLET_CORE;

struct bpf_iter_meta {
  struct seq_file* seq;
  __u64 session_id;
  __u64 seq_num;
} STATLET_CORE;

// The context of an iter/task program; task is NULL once, after the walk.
struct bpf_iter__task {
  struct bpf_iter_meta* meta;
  struct task_struct* task;
} STATLET_CORE;

// The context of an iter/cgroup program; cgroup is NULL once, after the walk.
struct bpf_iter__cgroup {
  struct bpf_iter_meta* meta;
  struct cgroup* cgroup;
} STATLET_CORE;

struct sock_cgroup_data {
  struct cgroup* cgroup;  // the creating task's v2 cgroup (5.15+)
} STATLET_CORE;

struct sock_common {
  unsigned char skc_state;
} STATLET_CORE;

struct sock {
  struct sock_common __sk_common;
  __u16 sk_protocol;
  struct sock_cgroup_data sk_cgrp_data;
} STATLET_CORE;

struct sk_buff {
  struct sock* sk;
  char cb[48];  // control buffer; TCP keeps struct tcp_skb_cb in it
} STATLET_CORE;

struct tcp_sock {
  __u32 total_retrans;  // segments this socket retransmitted (the RetransSegs it added)
} STATLET_CORE;

// What TCP keeps in an skb's control buffer. tcp_gso_segs sits in an anonymous struct of
// an anonymous union upstream; CO-RE finds it by name through both.
struct tcp_skb_cb {
  __u16 tcp_gso_segs;  // segments this skb stands for (tcp_skb_pcount)
} STATLET_CORE;
