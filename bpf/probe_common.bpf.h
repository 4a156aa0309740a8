// Helpers shared by the probe programs: per-cgroup counting and cgroup id lookups.
#pragma once

#include "bpf/kernel_types.h"
#include <linux/bpf.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_core_read.h>
#include <bpf/bpf_tracing.h>

#include "bpf/probe_abi.h"

#ifndef EEXIST
#define EEXIST 17
#endif

// Per-CPU count of updates refused because a map was full (index 0), read by the loader.
#define STATLET_LOST_MAP                     \
  struct {                                   \
    __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY); \
    __uint(max_entries, 1);                  \
    __type(key, __u32);                      \
    __type(value, __u64);                    \
  } lost SEC(".maps")

// Adds `delta` to the per-CPU u64 at `key` of a BPF_MAP_TYPE_PERCPU_HASH. The common path
// is one lookup and one add; the first event of a cgroup inserts its entry.
static __always_inline void statlet_percpu_add(void* map, const void* key, __u64 delta, void* lost_map) {
  __u64* v = bpf_map_lookup_elem(map, key);
  if (v) {
    *v += delta;
    return;
  }
  long err = bpf_map_update_elem(map, key, &delta, BPF_NOEXIST);
  if (err == 0) return;
  if (err == -EEXIST) {  // created meanwhile (this CPU was interrupted by another event)
    v = bpf_map_lookup_elem(map, key);
    if (v) *v += delta;
    return;
  }
  __u32 zero = 0;
  __u64* n = bpf_map_lookup_elem(lost_map, &zero);
  if (n) *n += 1;
}

// The v2 cgroup id of a task (the inode of its unified-hierarchy directory).
static __always_inline __u64 statlet_task_cgroup_id(struct task_struct* t) {
  return BPF_CORE_READ(t, cgroups, dfl_cgrp, kn, id);
}

// The v2 cgroup id a socket was charged to at creation; valid in softirq context too.
static __always_inline __u64 statlet_sock_cgroup_id(struct sock* sk) {
  return BPF_CORE_READ(sk, sk_cgrp_data.cgroup, kn, id);
}
