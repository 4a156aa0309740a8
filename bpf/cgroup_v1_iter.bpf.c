// The v1 hierarchies' counterpart of cgroup_stats_iter: for every cgroup of one cgroup v1
// hierarchy, the kernel values behind the files the collector reads there, in one walk.
// The loader attaches one instance per hierarchy it renders (cpu, cpuacct, memory; once
// for co-mounted controllers) and user space renders the files as the kernel shows them
// (cgroup_v1_render.cc):
//   cpu       cpu.stat (cfs_bandwidth counters, as cpu_cfs_stat_show prints them)
//   cpuacct   cpuacct.usage_percpu (each possible CPU's copy of cpuacct.cpuusage),
//             cpuacct.usage_user and .usage_sys (its per-CPU kernel_cpustat, summed)
//   memory    memory.usage_in_bytes, .max_usage_in_bytes, .failcnt (the memory page
//             counter), memory.kmem.usage_in_bytes, memory.oom_control
// Nothing here needs an rstat flush: page counters and cpuusage are updated in place, and
// the bandwidth counters under their own lock. memory.stat is not rendered (its state
// array is compactly indexed from 6.16, as for the unified walk) and is read from cgroupfs.
//
// Attach: iter/cgroup on the hierarchy's root (cgroup_v1v2_get_from_fd takes a v1
// directory since 6.1), pre-order.
#include "bpf/cgroup_iter.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);  // set by the loader
  __type(key, __u32);
  __type(value, struct statlet_cgroup_v1_stats);
} entries SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, 1);  // entries * nr_cpus on the hierarchy holding cpuacct (the loader)
  __type(key, __u32);
  __type(value, __u64);
} cpu_usage SEC(".maps");

// cpuacct.usage_user and .usage_sys as cpuacct_cpuusage_read sums them: user is USER +
// NICE, system is SYSTEM + IRQ + SOFTIRQ of each possible CPU's kernel_cpustat, in ns. The
// root's cpustat is the host's own (kernel_cpustat): left to cgroupfs.
static __always_inline void read_cpuacct_times(struct cgroup* cgrp, struct cpuacct* ca,
                                               struct statlet_cgroup_v1_stats* e) {
  if (cgrp->level == 0 || !bpf_core_field_exists(ca->cpustat) ||
      !bpf_core_enum_value_exists(enum cpu_usage_stat, CPUTIME_USER) ||
      !bpf_core_enum_value_exists(enum cpu_usage_stat, CPUTIME_NICE) ||
      !bpf_core_enum_value_exists(enum cpu_usage_stat, CPUTIME_SYSTEM) ||
      !bpf_core_enum_value_exists(enum cpu_usage_stat, CPUTIME_IRQ) ||
      !bpf_core_enum_value_exists(enum cpu_usage_stat, CPUTIME_SOFTIRQ))
    return;
  const __u64 stat = (__u64)BPF_CORE_READ(ca, cpustat);
  if (!stat) return;
  const __u64 base = bpf_core_field_offset(struct kernel_cpustat, cpustat);
  const __u64 user = base + bpf_core_enum_value(enum cpu_usage_stat, CPUTIME_USER) * sizeof(__u64);
  const __u64 nice = base + bpf_core_enum_value(enum cpu_usage_stat, CPUTIME_NICE) * sizeof(__u64);
  const __u64 system = base + bpf_core_enum_value(enum cpu_usage_stat, CPUTIME_SYSTEM) * sizeof(__u64);
  const __u64 irq = base + bpf_core_enum_value(enum cpu_usage_stat, CPUTIME_IRQ) * sizeof(__u64);
  const __u64 softirq = base + bpf_core_enum_value(enum cpu_usage_stat, CPUTIME_SOFTIRQ) * sizeof(__u64);
  __u64 u = 0, s = 0;
  for (__u32 cpu = 0; cpu < STATLET_ITER_MAX_CPUS && cpu < nr_cpus; cpu++) {
    u += statlet_read_percpu_u64(stat, user, cpu) + statlet_read_percpu_u64(stat, nice, cpu);
    s += statlet_read_percpu_u64(stat, system, cpu) + statlet_read_percpu_u64(stat, irq, cpu) +
         statlet_read_percpu_u64(stat, softirq, cpu);
  }
  e->cpuacct_user_ns = u;
  e->cpuacct_system_ns = s;
  e->parts |= STATLET_V1_CPUACCT_TIMES;
}

static __always_inline void read_cpuacct(struct cgroup* cgrp, __u32 index, struct statlet_cgroup_v1_stats* e) {
  if (!bpf_core_enum_value_exists(enum cgroup_subsys_id, cpuacct_cgrp_id)) return;
  struct cpuacct* ca = (void*)statlet_controller(cgrp, bpf_core_enum_value(enum cgroup_subsys_id, cpuacct_cgrp_id));
  if (!ca) return;
  read_cpuacct_times(cgrp, ca, e);
  __u64 percpu = (__u64)BPF_CORE_READ(ca, cpuusage);
  if (!percpu) return;
  for (__u32 cpu = 0; cpu < STATLET_ITER_MAX_CPUS && cpu < nr_cpus; cpu++) {
    __u32 slot = index * nr_cpus + cpu;
    __u64* out = bpf_map_lookup_elem(&cpu_usage, &slot);
    if (!out) return;  // the map is not sized for this hierarchy: no cpuacct part
    *out = statlet_read_percpu_u64(percpu, 0, cpu);
  }
  e->parts |= STATLET_V1_CPUACCT;
}

static __always_inline void read_memory(struct cgroup* cgrp, struct statlet_cgroup_v1_stats* e) {
  struct mem_cgroup* memcg =
      (void*)statlet_controller(cgrp, bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id));
  if (!memcg) return;
  if (cgrp->level > 0) {  // the root's usage is summed from its statistics (mem_cgroup_usage)
    e->memory_pages = BPF_CORE_READ(memcg, memory.usage.counter);
    e->memory_watermark_pages = BPF_CORE_READ(memcg, memory.watermark);
    e->memory_failcnt = BPF_CORE_READ(memcg, memory.failcnt);
    e->parts |= STATLET_V1_MEMORY;
  }
  if (bpf_core_field_exists(memcg->kmem)) {
    e->kmem_pages = BPF_CORE_READ(memcg, kmem.usage.counter);
    e->parts |= STATLET_V1_KMEM;
  }
  if (bpf_core_field_exists(memcg->under_oom) && bpf_core_field_exists(memcg->oom_kill_disable) &&
      bpf_core_enum_value_exists(enum memcg_memory_event, MEMCG_OOM_KILL)) {
    const __u64 events = (__u64)memcg + bpf_core_field_offset(struct mem_cgroup, memory_events);
    long v = 0;
    bpf_probe_read_kernel(
        &v, sizeof(v), (void*)(events + bpf_core_enum_value(enum memcg_memory_event, MEMCG_OOM_KILL) * sizeof(long)));
    e->oom_kill = (__u64)v;
    e->oom_kill_disable = (__u32)BPF_CORE_READ(memcg, oom_kill_disable);
    e->under_oom = BPF_CORE_READ(memcg, under_oom) != 0;
    e->parts |= STATLET_V1_OOM_CONTROL;
  }
}

SEC("iter/cgroup")
int statlet_cgroup_v1(struct bpf_iter__cgroup* ctx) {
  struct cgroup* cgrp = ctx->cgroup;
  if (!cgrp) {
    statlet_end_walk(ctx->meta);
    return 0;
  }
  if (ctx->meta->seq_num == 0) {
    statlet_begin_walk();
    if (!statlet_learn_cpu_offsets()) return statlet_fail_walk();
  }
  __u32 index = walk_count++;
  struct statlet_cgroup_v1_stats* e = bpf_map_lookup_elem(&entries, &index);
  if (!e) return 0;  // more cgroups than entries: counted by the trailer
  __builtin_memset(e, 0, sizeof(*e));
  e->cgroup_id = cgrp->kn->id;
  e->level = cgrp->level;
  if (statlet_read_cfs(cgrp, &e->nr_periods)) e->parts |= STATLET_V1_CFS;
  read_cpuacct(cgrp, index, e);
  read_memory(cgrp, e);
  return 0;
}
