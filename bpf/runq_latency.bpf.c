// Run-queue latency per cgroup: time from becoming runnable to running, as a log2 histogram.
//
// Attach: tp_btf/sched_switch only — a BTF-typed tracepoint that loads on 6.1 and 6.18
// without tracefs. The scheduler already stamps every task when it is queued
// (task->sched_info.last_queued, CONFIG_SCHED_INFO, the source of delay accounting and
// /proc/<pid>/schedstat) and clears the stamp only after this tracepoint, when the task
// arrives on the CPU. So the wait is the CPU's rq clock now minus that stamp, exactly as
// the kernel's own run_delay, with no wakeup programs and no per-thread map: one map
// lookup and an add per switch. A wait that spans a migration is seen from the last
// queueing on the new CPU, as in run_delay. The rq is reached through next->se.cfs_rq
// (next is on this CPU's queue), not the per-CPU `runqueues` ksym: kernels without
// CONFIG_KALLSYMS_ALL (this host) cannot resolve per-CPU variables for BPF.
#include "bpf/probe_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u64);  // cgroup id
  __type(value, struct statlet_runq_hist);
} runq SEC(".maps");

STATLET_LOST_MAP;

static __always_inline __u32 log2_slot(__u64 us) {
  __u32 slot = 0;
  // Binary search over the bits of `us`: floor(log2(us)), 0 for 0 and 1.
  if (us >> 32) { slot += 32; us >>= 32; }
  if (us >> 16) { slot += 16; us >>= 16; }
  if (us >> 8) { slot += 8; us >>= 8; }
  if (us >> 4) { slot += 4; us >>= 4; }
  if (us >> 2) { slot += 2; us >>= 2; }
  if (us >> 1) { slot += 1; }
  return slot < STATLET_RUNQ_SLOTS ? slot : STATLET_RUNQ_SLOTS - 1;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(statlet_runq_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next) {
  __u64 queued = next->sched_info.last_queued;
  if (queued == 0 || next->pid == 0) return 0;  // not queued through enqueue, or idle
  __u64 now = next->se.cfs_rq->rq->clock;
  if (now <= queued) return 0;
  __u64 wait_ns = now - queued;

  __u64 cgid = next->cgroups->dfl_cgrp->kn->id;
  struct statlet_runq_hist *h = bpf_map_lookup_elem(&runq, &cgid);
  if (!h) {
    static const struct statlet_runq_hist empty;
    long err = bpf_map_update_elem(&runq, &cgid, &empty, BPF_NOEXIST);
    if (err != 0 && err != -EEXIST) {
      __u32 zero = 0;
      __u64 *n = bpf_map_lookup_elem(&lost, &zero);
      if (n) *n += 1;
      return 0;
    }
    h = bpf_map_lookup_elem(&runq, &cgid);
    if (!h) return 0;
  }
  __u32 slot = log2_slot(wait_ns / 1000);
  h->slots[slot] += 1;
  h->sum_ns += wait_ns;
  return 0;
}
