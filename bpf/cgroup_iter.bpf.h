// Helpers shared by the cgroup iterator programs (iter/cgroup): reading another CPU's copy
// of a kernel per-CPU struct, and ending a walk.
//
// A cgroup iterator walks one hierarchy in pre-order under cgroup_mutex, calling the
// program once per live cgroup and once more with a NULL cgroup when the walk is complete.
// Its seq_file output is capped at 32 KiB per walk and a walk cannot be resumed across
// read() calls, so the programs store their entries in mmapable array maps that user space
// reads in place, and write only a trailer into the output: a read() that returns the
// trailer proves the walk was complete.
#pragma once

#include "bpf/probe_common.bpf.h"

// Possible CPUs (libbpf_num_possible_cpus), set by the loader before load; frozen, so the
// verifier walks the per-CPU loops exactly this many times.
const volatile __u32 nr_cpus = 1;

// Per-CPU offsets. bpf_per_cpu_ptr() takes only pointers the kernel's BTF tags __percpu,
// which GCC-built kernels (Debian 12's 6.1, this project's 6.18 hosts) do not emit, and
// without CONFIG_KALLSYMS_ALL the kernel's own offset table (__per_cpu_offset) cannot be
// addressed. Every per-CPU allocation lives at the same offset from its per-CPU pointer on
// a given CPU, so the offsets are learnt from a per-CPU map of our own: the address of its
// value on CPU c (bpf_map_lookup_percpu_elem) minus its per-CPU pointer (bpf_array's
// pptrs[0], read through the map's kernel object).
struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);
} percpu_anchor SEC(".maps");

__u64 cpu_offset[STATLET_ITER_MAX_CPUS];

// The address a pointer holds, as a number the verifier lets us add to (it forbids
// arithmetic between map pointers and unknown scalars).
static __always_inline __u64 statlet_address_of(void* p) {
  void* volatile slot = p;
  __u64 addr = 0;
  bpf_probe_read_kernel(&addr, sizeof(addr), (void*)&slot);
  return addr;
}

// Fills cpu_offset[0, nr_cpus); false when the kernel refused a step.
static __always_inline int statlet_learn_cpu_offsets(void) {
  __u64 map_addr = statlet_address_of(&percpu_anchor);
  __u64 base = 0;
  if (bpf_probe_read_kernel(&base, sizeof(base), (void*)(map_addr + bpf_core_field_offset(struct bpf_array, pptrs))) !=
      0)
    return 0;
  __u32 zero = 0;
  for (__u32 cpu = 0; cpu < STATLET_ITER_MAX_CPUS && cpu < nr_cpus; cpu++) {
    void* value = bpf_map_lookup_percpu_elem(&percpu_anchor, &zero, cpu);
    if (!value) return 0;
    cpu_offset[cpu] = statlet_address_of(value) - base;
  }
  return 1;
}

// The u64 at `field_offset` in CPU `cpu`'s copy of the per-CPU struct at `percpu_ptr`.
static __always_inline __u64 statlet_read_percpu_u64(__u64 percpu_ptr, __u64 field_offset, __u32 cpu) {
  __u64 v = 0;
  if (cpu < STATLET_ITER_MAX_CPUS)
    bpf_probe_read_kernel(&v, sizeof(v), (void*)(percpu_ptr + field_offset + cpu_offset[cpu]));
  return v;
}

// Cgroups this walk visited, and whether a step failed (reset by its first call).
__u32 walk_count;
__u32 walk_failed;

// Ends the walk early (returning 1 stops it); the trailer then says it failed.
static __always_inline int statlet_fail_walk(void) {
  walk_failed = 1;
  return 1;
}

// The NULL call after the walk: the trailer.
static __always_inline void statlet_end_walk(struct bpf_iter_meta* meta) {
  struct statlet_iter_trailer t = {.magic = walk_failed ? 0 : STATLET_ITER_MAGIC, .cgroups = walk_count};
  bpf_seq_write(meta->seq, &t, sizeof(t));
}

// The first call of a walk resets its state.
static __always_inline void statlet_begin_walk(void) {
  walk_count = 0;
  walk_failed = 0;
}

// The cgroup's state of controller `id` (enum cgroup_subsys_id, resolved by CO-RE); null
// when the controller is not attached to this cgroup's hierarchy.
static __always_inline struct cgroup_subsys_state* statlet_controller(struct cgroup* cgrp, int id) {
  struct cgroup_subsys_state* css = 0;
  if (id < 0 || id >= 16) return 0;
  struct cgroup_subsys_state** slots = __builtin_preserve_access_index(&cgrp->subsys[0]);
  bpf_probe_read_kernel(&css, sizeof(css), slots + id);
  return css;
}

// The cpu controller's CFS bandwidth counters (what cpu.stat prints on v1 and v2), in the
// order of the entries' fields: nr_periods, nr_throttled, throttled_ns, nr_bursts,
// burst_ns. False without the cpu controller.
static __always_inline int statlet_read_cfs(struct cgroup* cgrp, __u64* out) {
  struct task_group* tg = (void*)statlet_controller(cgrp, bpf_core_enum_value(enum cgroup_subsys_id, cpu_cgrp_id));
  if (!tg) return 0;
  out[0] = (__u32)BPF_CORE_READ(tg, cfs_bandwidth.nr_periods);
  out[1] = (__u32)BPF_CORE_READ(tg, cfs_bandwidth.nr_throttled);
  out[2] = BPF_CORE_READ(tg, cfs_bandwidth.throttled_time);
  out[3] = (__u32)BPF_CORE_READ(tg, cfs_bandwidth.nr_burst);
  out[4] = BPF_CORE_READ(tg, cfs_bandwidth.burst_time);
  return 1;
}
