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

struct cgroup {
  struct kernfs_node *kn;
} STATLET_CORE;

struct cgroup_subsys_state {
  struct cgroup *cgroup;
  struct cgroup_subsys_state *parent;
} STATLET_CORE;

// The index of the memory controller in css_set.subsys is read from the kernel's enum.
enum cgroup_subsys_id {
  memory_cgrp_id = 4,
};

struct css_set {
  struct cgroup_subsys_state *subsys[16];
  struct cgroup *dfl_cgrp;  // the task's cgroup on the unified (v2) hierarchy
} STATLET_CORE;

// CONFIG_SCHED_INFO (Debian: yes, via TASK_DELAY_ACCT): the scheduler's wait accounting.
// sched_info_arrive adds the wait to run_delay right after the sched_switch tracepoint.
struct sched_info {
  unsigned long long run_delay;  // total time spent waiting on a run queue
} STATLET_CORE;

// Updated by update_curr (at dequeue or put_prev_task) before the sched_switch tracepoint;
// the source of the cgroup's CPU usage.
struct sched_entity {
  unsigned long long sum_exec_runtime;
} STATLET_CORE;

struct task_struct {
  int pid;   // thread id
  int tgid;  // process id
  char comm[16];
  struct css_set *cgroups;
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

struct page_counter {
  atomic_long_t usage;  // pages
  unsigned long max;    // pages
} STATLET_CORE;

struct mem_cgroup {
  struct cgroup_subsys_state css;
  struct page_counter memory;
} STATLET_CORE;

struct sock_cgroup_data {
  struct cgroup *cgroup;  // the creating task's v2 cgroup (5.15+)
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
  struct sock *sk;
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
