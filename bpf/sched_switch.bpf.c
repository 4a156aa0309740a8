// The cpu, runqlat and faults probes: one program on every context switch.
//
// Attach: tp_btf/sched_switch — a BTF-typed tracepoint that loads on 6.1 and 6.18 without
// tracefs; fentry is refused on the lockdown host and kprobes are not built in there.
// The three probes share one program because a context switch is the hottest event they
// see: one invocation per switch instead of one per probe, and one cgroup slot lookup
// serves all three. Which probes count is fixed at load time: the loader loads the
// program for all three, or the one that reads the count_* flags in .rodata.
//
// A task's stay on a CPU runs from the switch that brings it in to the one that takes it
// out. At the switch-in the program stores the task's own counters in the CPU's state; at
// the switch-out it adds their differences to the task's cgroup:
//   cpu      se.sum_exec_runtime: the run time the kernel charges to the cgroup's usage
//            (update_curr ran at dequeue or put_prev_task, before this tracepoint).
//   faults   min_flt / maj_flt, bumped only by the task itself. No per-fault program:
//            page faults cost nothing.
//   runqlat  sched_info.run_delay (CONFIG_SCHED_INFO): sched_info_arrive adds the wait
//            that ended at the switch-in right after this tracepoint, so the difference is
//            exactly that one wait; log2 us bucket and sum.
// No clock is read and no kernel state is chased beyond the task itself and its cgroup id.
// Values are as of each task's last switch-out.
//
// Values live in `counters`, a per-CPU array with one slot per cgroup; `slot_of` maps a
// cgroup id to its slot. Each CPU caches the last (cgroup id, slot) it looked up, so
// consecutive switch-outs of one cgroup's tasks need no hash lookup: the common path is
// a cache compare, an array access and adds. A new cgroup takes a slot from `free_slots` (filled by the loader).
// The loader unmaps dead cgroups, then bumps `slot_epoch`, which invalidates every CPU's
// cache; it zeroes and returns their slots one collection later, when no program can
// still hold them.
#include "bpf/probe_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 count_cpu = 1;
const volatile __u32 count_faults = 1;
const volatile __u32 count_runq = 1;

// Bumped by the loader after it unmaps cgroups. Starts at 1 so that the zeroed caches of
// a fresh load match nothing.
__u32 slot_epoch = 1;

struct {
  __uint(type, BPF_MAP_TYPE_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u64);    // cgroup id
  __type(value, __u32);  // its slot in `counters`
} slot_of SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u32);
  __type(value, struct statlet_sched_counters);
} counters SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_STACK);  // LIFO keeps the used slots low and dense
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(value, __u32);
} free_slots SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, struct statlet_sched_cpu);
} cpu_state SEC(".maps");

STATLET_LOST_MAP;

static __always_inline void count_lost(void) {
  __u32 zero = 0;
  __u64 *n = bpf_map_lookup_elem(&lost, &zero);
  if (n) *n += 1;
}

// The slot of a cgroup seen for the first time on any CPU.
static __noinline __u32 *new_slot(__u64 cgid) {
  __u32 slot;
  if (bpf_map_pop_elem(&free_slots, &slot) != 0) {
    count_lost();  // every slot is taken
    return 0;
  }
  long err = bpf_map_update_elem(&slot_of, &cgid, &slot, BPF_NOEXIST);
  if (err != 0) {
    bpf_map_push_elem(&free_slots, &slot, 0);
    if (err != -EEXIST) {  // -EEXIST: another CPU mapped it meanwhile
      count_lost();
      return 0;
    }
  }
  return bpf_map_lookup_elem(&slot_of, &cgid);
}

static __always_inline struct statlet_sched_counters *counters_of(struct statlet_sched_cpu *st, __u64 cgid) {
  __u32 epoch = *(volatile __u32 *)&slot_epoch;  // read before slot_of (see the loader)
  __u32 slot;
  if (st->cache_cgroup_id == cgid && st->cache_epoch == epoch) {
    slot = st->cache_slot;
  } else {
    __u32 *s = bpf_map_lookup_elem(&slot_of, &cgid);
    if (!s) s = new_slot(cgid);
    if (!s) return 0;
    slot = *s;
    st->cache_cgroup_id = cgid;
    st->cache_slot = slot;
    st->cache_epoch = epoch;
  }
  return bpf_map_lookup_elem(&counters, &slot);
}

// floor(log2(ns / 1000)), 0 below 2 us, without a division: 2^9 < 1000 < 2^10, so with
// b = floor(log2(ns)) the result is b - 9 when ns >= 1000 << (b - 9), else b - 10.
static __always_inline __u32 us_log2_slot(__u64 ns) {
  if (ns < 2000) return 0;
  __u64 v = ns;
  __u32 b = 0;
  if (v >> 32) { b += 32; v >>= 32; }
  if (v >> 16) { b += 16; v >>= 16; }
  if (v >> 8) { b += 8; v >>= 8; }
  if (v >> 4) { b += 4; v >>= 4; }
  if (v >> 2) { b += 2; v >>= 2; }
  if (v >> 1) { b += 1; }
  __u32 slot = ns >= (1000ULL << (b - 9)) ? b - 9 : b - 10;
  return slot < STATLET_RUNQ_SLOTS ? slot : STATLET_RUNQ_SLOTS - 1;
}

// The program body for a fixed choice of probes; inlined into each program below with
// constants or the load-time flags, so each copy has only the code it runs.
static __always_inline int on_switch(struct task_struct *prev, struct task_struct *next, __u32 count_cpu,
                                     __u32 count_faults, __u32 count_runq) {
  __u32 zero = 0;
  struct statlet_sched_cpu *st = bpf_map_lookup_elem(&cpu_state, &zero);
  if (!st) return 0;

  // prev's stay on this CPU ends. Not accounted when prev is the idle task or arrived
  // before the program was attached (running_task is then 0 or another task).
  if (st->running_task == (__u64)prev) {
    struct statlet_sched_counters *c = counters_of(st, prev->cgroups->dfl_cgrp->kn->id);
    if (c) {
      if (count_cpu) c->cpu_ns += prev->se.sum_exec_runtime - st->running_exec_ns;
      if (count_faults) {
        c->minor_faults += prev->min_flt - st->running_min_flt;
        c->major_faults += prev->maj_flt - st->running_maj_flt;
      }
      if (count_runq) {
        // The wait that ended when prev arrived (0: it was not queued, e.g. preempted
        // and picked again by the same __schedule).
        __u64 wait_ns = prev->sched_info.run_delay - st->running_delay_ns;
        if (wait_ns != 0) {
          c->runq_slots[us_log2_slot(wait_ns)] += 1;
          c->runq_sum_ns += wait_ns;
        }
      }
    }
  }

  // next's stay begins: remember what its switch-out needs.
  if (next->pid == 0) {  // the CPU's idle task
    st->running_task = 0;
    return 0;
  }
  st->running_task = (__u64)next;
  if (count_cpu) st->running_exec_ns = next->se.sum_exec_runtime;
  if (count_runq) st->running_delay_ns = next->sched_info.run_delay;
  if (count_faults) {
    st->running_min_flt = next->min_flt;
    st->running_maj_flt = next->maj_flt;
  }
  return 0;
}

// All three probes, the default: no flag tests on the hot path.
SEC("tp_btf/sched_switch")
int BPF_PROG(statlet_sched_switch_all, _Bool preempt, struct task_struct *prev, struct task_struct *next) {
  return on_switch(prev, next, 1, 1, 1);
}

// Any other choice, from the .rodata flags (the verifier drops the code of unset ones).
SEC("tp_btf/sched_switch")
int BPF_PROG(statlet_sched_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next) {
  return on_switch(prev, next, count_cpu, count_faults, count_runq);
}
