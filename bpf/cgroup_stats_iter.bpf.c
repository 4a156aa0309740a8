// The collection's cgroup files in one walk: for every cgroup of the unified hierarchy, the
// kernel values behind cpu.stat, memory.current, memory.peak, memory.swap.current,
// memory.stat, memory.events, memory.events.local, pids.current and pids.events. User
// space renders them as those files show them (cgroup_stats_render.cc).
//
// Attach: iter.s/cgroup (sleepable: the rstat flush may sleep) on the unified root, walked
// in pre-order at every collection. The first call flushes the root's rstat tree, as a
// cpu.stat or memory.stat read would. The flush kfunc was renamed in 6.16
// (cgroup_rstat_flush(cgroup) became css_rstat_flush(css)), and a kernel refuses to load a
// program that names a kfunc it lacks, even in dead code (6.1: "kernel btf_id 0 is not a
// function"), and libbpf before 1.2 (Debian 12's) fails a weak kfunc missing from vmlinux
// unless it may list the modules' BTF (CAP_SYS_ADMIN), so each flavour is an object of its
// own (built with STATLET_FLUSH_CSS 0 and 1) and the loader loads the one whose kfunc the
// running kernel has. Each cgroup then costs a few dozen loads; nothing is
// formatted in the kernel.
//
// Kernel layouts resolved by CO-RE: the cgroup's controller states through
// cgroup.subsys[<enum cgroup_subsys_id>]; memory.events by enum memcg_memory_event; the
// memory.stat items by their enum values, which index memcg_vmstats.state directly up to
// 6.10 (checked: the array then has MEMCG_NR_STAT entries). memcg_vmstats.events is indexed
// through the kernel's private table mem_cgroup_events_index since 6.1: the first walk
// copies it (a kallsyms symbol: present with CONFIG_KALLSYMS_ALL) for user space, which
// validates it and writes the slots to use into `state_slot` / `event_slot`.
#include "bpf/cgroup_iter.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#if STATLET_FLUSH_CSS
extern void css_rstat_flush(struct cgroup_subsys_state* css) __ksym;  // 6.16 on
#define STATLET_RSTAT_FLUSH(cgrp) css_rstat_flush(&(cgrp)->self)
#else
extern void cgroup_rstat_flush(struct cgroup* cgrp) __ksym;  // up to 6.15
#define STATLET_RSTAT_FLUSH(cgrp) cgroup_rstat_flush(cgrp)
#endif
extern const void mem_cgroup_events_index __ksym __weak;

struct {
  __uint(type, BPF_MAP_TYPE_ARRAY);
  __uint(map_flags, BPF_F_MMAPABLE);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);  // set by the loader
  __type(key, __u32);
  __type(value, struct statlet_cgroup_stats);
} entries SEC(".maps");

struct statlet_memstat_setup setup;
// Written by the loader after the first walk: where each memory.stat item lives in
// memcg_vmstats (-1: not read); memstat_ready once they are valid.
__s32 state_slot[STATLET_MS_STATE_ITEMS];
__s32 event_slot[STATLET_ME_EVENT_ITEMS];
__u32 memstat_ready;

#define ENUM_OR_NONE(type, name) (bpf_core_enum_value_exists(type, name) ? (__s32)bpf_core_enum_value(type, name) : -1)

static __always_inline void learn_memcg_layout(void) {
  if (bpf_core_field_exists(struct memcg_vmstats, state) && bpf_core_field_exists(struct memcg_vmstats, events)) {
    setup.state_len = bpf_core_field_size(struct memcg_vmstats, state) / sizeof(long);
    setup.events_len = bpf_core_field_size(struct memcg_vmstats, events) / sizeof(long);
  }
  setup.nr_stat_items = ENUM_OR_NONE(enum memcg_stat_item, MEMCG_NR_STAT);
  setup.nr_event_items = ENUM_OR_NONE(enum vm_event_item, NR_VM_EVENT_ITEMS);
  // Each memory.stat item's kernel enum value (snapshot/memory_stat.def).
#define STATLET_MEMSTAT_STATE(field, v2_key, v1_key, kernel_enum, kernel_item, unit) \
  setup.state_enum[STATLET_MS_##field] = ENUM_OR_NONE(enum kernel_enum, kernel_item);
#define STATLET_MEMSTAT_STATE_PART(name, kernel_enum, kernel_item, unit) \
  setup.state_enum[STATLET_MS_##name] = ENUM_OR_NONE(enum kernel_enum, kernel_item);
#define STATLET_MEMSTAT_EVENT(field, v2_key, v1_key, kernel_item) \
  setup.event_enum[STATLET_ME_##field] = ENUM_OR_NONE(enum vm_event_item, kernel_item);
#define STATLET_MEMSTAT_EVENT_PART(name, kernel_item) \
  setup.event_enum[STATLET_ME_##name] = ENUM_OR_NONE(enum vm_event_item, kernel_item);
#include "snapshot/memory_stat.def"
  if (&mem_cgroup_events_index != 0 && setup.nr_event_items > 0) {
    // Up to four bytes per vm_event_item (the kernel's element type is not in its BTF).
    __u32 n = (__u32)setup.nr_event_items * 4;
    if (n > STATLET_INDEX_TABLE_BYTES) n = STATLET_INDEX_TABLE_BYTES;
    if (n > 0 && bpf_probe_read_kernel(setup.events_table, n, &mem_cgroup_events_index) == 0) setup.events_table_ok = 1;
  }
  setup.done = 1;
}

static __always_inline void read_cpu(struct cgroup* cgrp, struct statlet_cgroup_stats* e) {
  if (cgrp->level == 0) return;  // the root's cpu.stat is built from system-wide counters
  e->sum_exec_ns = BPF_CORE_READ(cgrp, bstat.cputime.sum_exec_runtime);
  e->utime_ns = BPF_CORE_READ(cgrp, bstat.cputime.utime);
  e->stime_ns = BPF_CORE_READ(cgrp, bstat.cputime.stime);
  e->prev_utime_ns = BPF_CORE_READ(cgrp, prev_cputime.utime);
  e->prev_stime_ns = BPF_CORE_READ(cgrp, prev_cputime.stime);
  e->parts |= STATLET_PART_CPU;

  if (statlet_read_cfs(cgrp, &e->nr_periods)) e->parts |= STATLET_PART_CFS;
}

static __always_inline __u64 read_u64_at(__u64 addr) {
  __u64 v = 0;
  bpf_probe_read_kernel(&v, sizeof(v), (void*)addr);
  return v;
}

static __always_inline void read_memory(struct cgroup* cgrp, struct statlet_cgroup_stats* e) {
  struct mem_cgroup* memcg =
      (void*)statlet_controller(cgrp, bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id));
  if (!memcg) return;
  e->memory_pages = BPF_CORE_READ(memcg, memory.usage.counter);
  e->memory_peak_pages = BPF_CORE_READ(memcg, memory.watermark);
  e->swap_pages = BPF_CORE_READ(memcg, swap.usage.counter);
  const __u64 events = (__u64)memcg + bpf_core_field_offset(struct mem_cgroup, memory_events);
  const __u64 local = (__u64)memcg + bpf_core_field_offset(struct mem_cgroup, memory_events_local);
  const __s32 ids[STATLET_MEMORY_EVENTS] = {
#define STATLET_MEMORY_EVENT(field, key, kernel_item) ENUM_OR_NONE(enum memcg_memory_event, kernel_item),
#include "snapshot/memory_events.def"
  };
  // Loops are unrolled: 6.1's verifier refuses a loop whose back edge lands on a helper
  // call ("back-edge from insn N to N+1").
#pragma unroll
  for (int i = 0; i < STATLET_MEMORY_EVENTS; i++) {
    if (ids[i] < 0) continue;
    e->memory_events[i] = read_u64_at(events + ids[i] * sizeof(long));
    e->memory_events_local[i] = read_u64_at(local + ids[i] * sizeof(long));
  }
  e->parts |= STATLET_PART_MEMORY;

  if (!memstat_ready) return;
  __u64 vmstats = (__u64)BPF_CORE_READ(memcg, vmstats);
  if (!vmstats) return;
  const __u64 state = vmstats + bpf_core_field_offset(struct memcg_vmstats, state);
  const __u64 ev = vmstats + bpf_core_field_offset(struct memcg_vmstats, events);
#pragma unroll
  for (int i = 0; i < STATLET_MS_STATE_ITEMS; i++) {
    __s32 slot = state_slot[i];
    if (slot >= 0) e->memstat_state[i] = (__s64)read_u64_at(state + (__u64)slot * sizeof(long));
  }
#pragma unroll
  for (int i = 0; i < STATLET_ME_EVENT_ITEMS; i++) {
    __s32 slot = event_slot[i];
    if (slot >= 0) e->memstat_events[i] = read_u64_at(ev + (__u64)slot * sizeof(long));
  }
  e->parts |= STATLET_PART_MEMSTAT;
}

static __always_inline void read_pids(struct cgroup* cgrp, struct statlet_cgroup_stats* e) {
  struct pids_cgroup* pids = (void*)statlet_controller(cgrp, bpf_core_enum_value(enum cgroup_subsys_id, pids_cgrp_id));
  if (!pids) return;
  e->pids_current = BPF_CORE_READ(pids, counter.counter);
  e->parts |= STATLET_PART_PIDS;
  if (bpf_core_field_exists(struct pids_cgroup___events_limit, events_limit)) {
    struct pids_cgroup___events_limit* p = (void*)pids;
    e->pids_events_max = BPF_CORE_READ(p, events_limit.counter);
    e->parts |= STATLET_PART_PIDS_EVENTS;
  }
}

// The walk's body; `css_flush` picks the flush kfunc (a constant in each program).
static __always_inline int visit(struct bpf_iter__cgroup* ctx) {
  struct cgroup* cgrp = ctx->cgroup;
  if (!cgrp) {
    statlet_end_walk(ctx->meta);
    return 0;
  }
  if (ctx->meta->seq_num == 0) {
    statlet_begin_walk();
    if (!setup.done) learn_memcg_layout();
    // Up to 6.15 one flush covers every controller's per-CPU stats of the subtree, the
    // memcg statistics included. From 6.16 each controller has its own tree: the base
    // stats (CPU time) are flushed here; memory.stat is not read from the iterator on those
    // kernels (its state array is compactly indexed there, see the loader).
    STATLET_RSTAT_FLUSH(cgrp);
  }
  __u32 index = walk_count++;
  struct statlet_cgroup_stats* e = bpf_map_lookup_elem(&entries, &index);
  if (!e) return 0;  // more cgroups than entries: counted by the trailer
  __builtin_memset(e, 0, sizeof(*e));
  e->cgroup_id = cgrp->kn->id;
  e->level = cgrp->level;
  read_cpu(cgrp, e);
  read_memory(cgrp, e);
  read_pids(cgrp, e);
  return 0;
}

SEC("iter.s/cgroup")
int statlet_cgroup_stats(struct bpf_iter__cgroup* ctx) { return visit(ctx); }
