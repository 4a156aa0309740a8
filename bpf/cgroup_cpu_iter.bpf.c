// The cpu probe: each cgroup's CPU time per CPU, read from the kernel's own accounting.
//
// Attach: iter/cgroup on the unified hierarchy's root, walked in pre-order at every
// collection. Nothing runs on the scheduler path: the kernel already charges every ns a
// task runs to its cgroup, per CPU (update_curr -> __cgroup_account_cputime adds to the
// cgroup's rstat per-CPU base stats, bstat.cputime.sum_exec_runtime), and those copies are
// exact whatever the program sees of the scheduler. They hold the cgroup's own tasks only
// (rstat folds them into the parents' totals when cpu.stat is read), so user space adds
// each cgroup's values to its ancestors; the sums are cpu.stat's usage_usec split by CPU.
//
// The struct and its pointer were renamed in 6.16 (cgroup_rstat_cpu / rstat_cpu became
// cgroup_rstat_base_cpu / rstat_base_cpu): both flavours are described and the one the
// running kernel has is picked by CO-RE. The root cgroup is not charged (its cpu.stat comes
// from system-wide counters): its values are 0.
#include "bpf/cgroup_iter.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);  // set by the loader
  __type(key, __u32);
  __type(value, struct statlet_cgroup_entry);
} entries SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);  // entries * nr_cpus, set by the loader
  __type(key, __u32);
  __type(value, __u64);
} cpu_times SEC(".maps");

// The address of this cgroup's per-CPU base stats and of sum_exec_runtime within them.
static __always_inline __u64 rstat_percpu_ptr(struct cgroup* cgrp, __u64* field_offset) {
  __u64 ptr = 0;
  if (bpf_core_field_exists(struct cgroup___rstat_base_cpu, rstat_base_cpu)) {
    struct cgroup___rstat_base_cpu* c = (void*)cgrp;
    bpf_core_read(&ptr, sizeof(ptr), &c->rstat_base_cpu);
    *field_offset = bpf_core_field_offset(struct cgroup_rstat_base_cpu, bstat.cputime.sum_exec_runtime);
  } else {
    struct cgroup___rstat_cpu* c = (void*)cgrp;
    bpf_core_read(&ptr, sizeof(ptr), &c->rstat_cpu);
    *field_offset = bpf_core_field_offset(struct cgroup_rstat_cpu, bstat.cputime.sum_exec_runtime);
  }
  return ptr;
}

SEC("iter/cgroup")
int statlet_cgroup_cpu(struct bpf_iter__cgroup* ctx) {
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
  struct statlet_cgroup_entry* e = bpf_map_lookup_elem(&entries, &index);
  if (!e) return 0;  // more cgroups than entries: counted by the trailer
  e->cgroup_id = cgrp->kn->id;
  e->level = cgrp->level;

  __u64 field_offset = 0;
  __u64 percpu = cgrp->level > 0 ? rstat_percpu_ptr(cgrp, &field_offset) : 0;
  for (__u32 cpu = 0; cpu < STATLET_ITER_MAX_CPUS && cpu < nr_cpus; cpu++) {
    __u32 slot = index * nr_cpus + cpu;
    __u64* out = bpf_map_lookup_elem(&cpu_times, &slot);
    if (!out) break;
    *out = percpu ? statlet_read_percpu_u64(percpu, field_offset, cpu) : 0;
  }
  return 0;
}
