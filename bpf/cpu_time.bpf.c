// Per-CPU running time per cgroup.
//
// Attach: tp_btf/sched_switch — BTF-typed tracepoint, works on 6.1 and 6.18 and needs no
// tracefs; fentry is refused on the lockdown host and kprobes are not built in there.
// At a switch, the task going off the CPU (prev, still `current`) has run since the
// scheduler stamped its arrival (prev->sched_info.last_arrival, CONFIG_SCHED_INFO) on this
// CPU's rq clock, which __schedule has just updated — the kernel's own sched_info_depart
// computes the same. So the program reads two kernel fields, no clock helper and no state
// of its own, then does one map lookup and an add. The per-CPU hash keeps the split by
// CPU for free: user space reads one value per CPU per cgroup.
#include "bpf/probe_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u64);   // cgroup id
  __type(value, __u64); // nanoseconds run on this CPU
} cpu_ns SEC(".maps");

STATLET_LOST_MAP;

SEC("tp_btf/sched_switch")
int BPF_PROG(statlet_cpu_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next) {
  if (prev->pid == 0) return 0;  // the CPU's idle task
  __u64 arrived = prev->sched_info.last_arrival;
  __u64 now = prev->se.cfs_rq->rq->clock;  // prev's rq is this CPU's
  if (arrived == 0 || now <= arrived) return 0;
  __u64 cgid = prev->cgroups->dfl_cgrp->kn->id;
  statlet_percpu_add(&cpu_ns, &cgid, now - arrived, &lost);
  return 0;
}
