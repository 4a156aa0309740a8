// Run-queue latency per cgroup: time from becoming runnable to running, as a log2 histogram.
//
// Attach: tp_btf/sched_wakeup, tp_btf/sched_wakeup_new and tp_btf/sched_switch — BTF-typed
// tracepoints that load on 6.1 and 6.18 without tracefs. sched_switch's fourth argument
// (prev_state, 5.18+) tells a preempted task (still runnable) from one going to sleep.
// The enqueue time lives in a preallocated hash keyed by thread id: no allocation happens
// under the scheduler's locks, and the entry is removed when the thread gets the CPU.
#include "bpf/probe_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define TASK_RUNNING 0

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, 16384);
  __type(key, __u32);   // thread id
  __type(value, __u64); // CLOCK_MONOTONIC when it became runnable
} enqueued_at SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u64);  // cgroup id
  __type(value, struct statlet_runq_hist);
} runq SEC(".maps");

STATLET_LOST_MAP;

static __always_inline void mark_runnable(struct task_struct *p) {
  __u32 tid = p->pid;
  if (tid == 0) return;
  __u64 now = bpf_ktime_get_ns();
  if (bpf_map_update_elem(&enqueued_at, &tid, &now, BPF_ANY) != 0) {
    __u32 zero = 0;
    __u64 *n = bpf_map_lookup_elem(&lost, &zero);
    if (n) *n += 1;
  }
}

static __always_inline __u32 log2_slot(__u64 us) {
  __u32 slot = 0;
  // Unrolled binary search over the bits of `us` (at most 64).
  if (us >> 32) { slot += 32; us >>= 32; }
  if (us >> 16) { slot += 16; us >>= 16; }
  if (us >> 8) { slot += 8; us >>= 8; }
  if (us >> 4) { slot += 4; us >>= 4; }
  if (us >> 2) { slot += 2; us >>= 2; }
  if (us >> 1) { slot += 1; }
  return slot < STATLET_RUNQ_SLOTS ? slot : STATLET_RUNQ_SLOTS - 1;
}

SEC("tp_btf/sched_wakeup")
int BPF_PROG(statlet_runq_wakeup, struct task_struct *p) {
  mark_runnable(p);
  return 0;
}

SEC("tp_btf/sched_wakeup_new")
int BPF_PROG(statlet_runq_wakeup_new, struct task_struct *p) {
  mark_runnable(p);
  return 0;
}

SEC("tp_btf/sched_switch")
int BPF_PROG(statlet_runq_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next,
             unsigned int prev_state) {
  if (prev_state == TASK_RUNNING) mark_runnable(prev);  // preempted: back on the run queue

  __u32 tid = next->pid;
  if (tid == 0) return 0;
  __u64 *queued = bpf_map_lookup_elem(&enqueued_at, &tid);
  if (!queued) return 0;
  __u64 now = bpf_ktime_get_ns();
  __u64 wait_ns = now > *queued ? now - *queued : 0;
  bpf_map_delete_elem(&enqueued_at, &tid);

  __u64 cgid = statlet_task_cgroup_id(next);
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
