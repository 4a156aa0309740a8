// The runqlat and faults probes: one program on every context switch. (With run-queue
// latency alone, statlet_sched_switch_runq below: no task storage at all.)
//
// Attach: tp_btf/sched_switch — a BTF-typed tracepoint that loads on 6.1 and 6.18 without
// tracefs; fentry is refused on the lockdown host and kprobes are not built in there.
// The two probes share one program because a context switch is the hottest event they
// see: one invocation per switch instead of one per probe, and one cgroup slot lookup
// serves both. Which probes count is fixed at load time: the loader loads the program for
// both, or the one that reads the count_* flags in .rodata. Neither is in the default
// probe set (per-CPU time comes from the kernel's own accounting, cgroup_cpu_iter.bpf.c).
//
// Each task's counters are its own and only grow; the program keeps, per task (task local
// storage), how far it has counted them. When a task switches out, the differences since
// its last counted switch-out go to its cgroup:
//   faults   min_flt / maj_flt, bumped only by the task itself. No per-fault program:
//            page faults cost nothing.
//   runqlat  sched_info.run_delay and .pcount (CONFIG_SCHED_INFO): sched_info_arrive,
//            right after the tracepoint that brings a queued task in, adds the wait to
//            run_delay and counts the arrival in pcount. One arrival since the last
//            switch-out (the common case) is exactly one wait: log2 us bucket and sum.
// The tracepoint is not seen for every switch (measured on the 6.18 host: a switch-out with
// no matching switch-in), so no state spans two events: a missed switch-out only delays
// the counts to the task's next one, where several arrivals share their mean wait's bucket.
// A task's marks are created where memory may be allocated, never in the scheduler (the
// tracepoint runs under the run-queue lock, and 6.1 allocates local storage with kmalloc):
// at fork, from zero (statlet_task_fork), and for the tasks that exist at load, from their
// values then (statlet_task_marks_init, a task iterator the loader runs once after attach).
// A task without marks is not counted.
// No clock is read and no kernel state is chased beyond the task itself and its cgroup id.
// Values are as of each task's last switch-out.
//
// Values live in `counters`, a per-CPU array with one slot per cgroup; `slot_of` maps a
// cgroup id to its slot. Each CPU caches the last (cgroup id, slot) it looked up, so
// consecutive switch-outs of one cgroup's tasks need no hash lookup. A new cgroup takes a
// slot from `free_slots` (filled by the loader). The loader unmaps dead cgroups, then bumps
// `slot_epoch`, which invalidates every CPU's cache; it zeroes and returns their slots one
// collection later, when no program can still hold them.
#include "bpf/probe_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

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

struct {
  __uint(type, BPF_MAP_TYPE_TASK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct statlet_task_marks);
} task_marks SEC(".maps");

STATLET_LOST_MAP;

static __always_inline void count_lost(void) {
  __u32 zero = 0;
  __u64* n = bpf_map_lookup_elem(&lost, &zero);
  if (n) *n += 1;
}

// The slot of a cgroup seen for the first time on any CPU.
static __noinline __u32* new_slot(__u64 cgid) {
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

static __always_inline struct statlet_sched_counters* counters_of(struct statlet_sched_cpu* st, __u64 cgid) {
  __u32 epoch = *(volatile __u32*)&slot_epoch;  // read before slot_of (see the loader)
  __u32 slot;
  if (st->cache_cgroup_id == cgid && st->cache_epoch == epoch) {
    slot = st->cache_slot;
  } else {
    __u32* s = bpf_map_lookup_elem(&slot_of, &cgid);
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
  if (v >> 32) {
    b += 32;
    v >>= 32;
  }
  if (v >> 16) {
    b += 16;
    v >>= 16;
  }
  if (v >> 8) {
    b += 8;
    v >>= 8;
  }
  if (v >> 4) {
    b += 4;
    v >>= 4;
  }
  if (v >> 2) {
    b += 2;
    v >>= 2;
  }
  if (v >> 1) {
    b += 1;
  }
  __u32 slot = ns >= (1000ULL << (b - 9)) ? b - 9 : b - 10;
  return slot < STATLET_RUNQ_SLOTS ? slot : STATLET_RUNQ_SLOTS - 1;
}

// The program body for a fixed choice of probes; inlined into each program below with
// constants or the load-time flags, so each copy has only the code it runs.
static __always_inline int on_switch(struct task_struct* prev, __u32 count_faults, __u32 count_runq) {
  struct statlet_task_marks* m = bpf_task_storage_get(&task_marks, prev, 0, 0);
  if (!m) return 0;  // the idle task, or a task that existed before the marks
  const __u64 min_flt = prev->min_flt, maj_flt = prev->maj_flt;
  const __u64 delay = prev->sched_info.run_delay, arrivals = prev->sched_info.pcount;
  __u32 zero = 0;
  struct statlet_sched_cpu* st = bpf_map_lookup_elem(&cpu_state, &zero);
  if (!st) return 0;
  struct statlet_sched_counters* c = counters_of(st, prev->cgroups->dfl_cgrp->kn->id);
  if (!c) return 0;  // counted as lost; the marks stay, so the next switch-out retries
  if (count_faults) {
    c->minor_faults += min_flt - m->min_flt;
    c->major_faults += maj_flt - m->maj_flt;
    m->min_flt = min_flt;
    m->maj_flt = maj_flt;
  }
  if (count_runq) {
    const __u64 n = arrivals - m->arrivals;
    const __u64 wait_ns = delay - m->run_delay_ns;
    if (n != 0) {
      // n > 1 only after a switch-out the program did not see; the mean's bucket.
      c->runq_slots[us_log2_slot(n == 1 ? wait_ns : wait_ns / n)] += n;
      c->runq_sum_ns += wait_ns;
    }
    m->arrivals = arrivals;
    m->run_delay_ns = delay;
  }
  return 0;
}

// A new task (process or thread): its counters start at zero (copy_process / sched_fork).
SEC("tp_btf/sched_process_fork")
int BPF_PROG(statlet_task_fork, struct task_struct* parent, struct task_struct* child) {
  struct statlet_task_marks* m = bpf_task_storage_get(&task_marks, child, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (m) m->seen = 1;
  else count_lost();
  return 0;
}

// Run once by the loader after attach: the tasks that already exist are counted from now.
SEC("iter/task")
int statlet_task_marks_init(struct bpf_iter__task* ctx) {
  struct task_struct* t = ctx->task;
  if (!t) return 0;
  struct statlet_task_marks* m = bpf_task_storage_get(&task_marks, t, 0, BPF_LOCAL_STORAGE_GET_F_CREATE);
  if (!m) {
    count_lost();
    return 0;
  }
  if (m->seen) return 0;  // forked after the fork program was attached
  m->min_flt = t->min_flt;
  m->maj_flt = t->maj_flt;
  m->run_delay_ns = t->sched_info.run_delay;
  m->arrivals = t->sched_info.pcount;
  m->seen = 1;
  return 0;
}

// Run-queue latency alone: no task storage. The task coming in carries when its wait began
// (sched_info.last_queued, in its run queue's clock) and the run queue's clock is current,
// so the wait is exactly the one sched_info_arrive is about to add to run_delay. Costs two
// pointer reads and the cgroup's slot, not a task-storage lookup per switch; a switch the
// tracepoint does not show loses that one wait (the storage-based program above would count
// it at the task's next switch-out instead).
SEC("tp_btf/sched_switch")
int BPF_PROG(statlet_sched_switch_runq, _Bool preempt, struct task_struct* prev, struct task_struct* next) {
  const __u64 queued = next->sched_info.last_queued;
  if (queued == 0) return 0;  // not coming off a run queue wait (or the idle task)
  const __u64 now = next->se.cfs_rq->rq->clock;
  if (now < queued) return 0;
  // now == queued: the run queue's clock was not updated in between; the kernel counts that
  // arrival with no wait, and so does this (slot 0), as the storage-based program does.
  __u32 zero = 0;
  struct statlet_sched_cpu* st = bpf_map_lookup_elem(&cpu_state, &zero);
  if (!st) return 0;
  struct statlet_sched_counters* c = counters_of(st, next->cgroups->dfl_cgrp->kn->id);
  if (!c) return 0;
  const __u64 wait_ns = now - queued;
  c->runq_slots[us_log2_slot(wait_ns)] += 1;
  c->runq_sum_ns += wait_ns;
  return 0;
}

// Both probes: no flag tests on the hot path.
SEC("tp_btf/sched_switch")
int BPF_PROG(statlet_sched_switch_all, _Bool preempt, struct task_struct* prev, struct task_struct* next) {
  return on_switch(prev, 1, 1);
}

// One of them, from the .rodata flags (the verifier drops the code of the unset one).
SEC("tp_btf/sched_switch")
int BPF_PROG(statlet_sched_switch, _Bool preempt, struct task_struct* prev, struct task_struct* next) {
  return on_switch(prev, count_faults, count_runq);
}
