// OOM kills: one ring-buffer event per victim plus a per-cgroup kill count.
//
// Attach: tp_btf/mark_victim — its first argument is the victim's task_struct on 6.18 and
// on Debian's 6.1 (backported); BTF-typed, so no tracefs. The classic tracepoint only
// carries the pid, and the cgroup must be read from the task itself.
//
// The tracepoint does not say why the OOM killer ran. A memory-cgroup OOM happens when a
// charge fails at the cgroup's limit, so the victim's memcg (or an ancestor) is then at its
// limit; a global OOM has no such cgroup. The program checks usage against the limit up
// the memcg chain, which works for v1 and v2 memcgs alike.
#include "bpf/probe_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_RINGBUF);
  __uint(max_entries, 16384);  // bytes: a burst of ~250 events before the loader reads
} oom_events SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u64);    // the victim's cgroup id
  __type(value, __u64);  // kills
} oom_kills SEC(".maps");

STATLET_LOST_MAP;

#define MEMCG_WALK_MAX 8
#define CHARGE_SLACK_PAGES 512  // a failed charge leaves usage at most this far below max

static __always_inline __u32 memcg_at_limit(struct task_struct* t) {
  int id = bpf_core_enum_value(enum cgroup_subsys_id, memory_cgrp_id);
  struct css_set* cset = BPF_CORE_READ(t, cgroups);
  struct cgroup_subsys_state** slots = __builtin_preserve_access_index(&cset->subsys[0]);
  struct cgroup_subsys_state* css = NULL;
  if (id < 0 || id >= 16) return 0;
  bpf_probe_read_kernel(&css, sizeof(css), slots + id);
  for (int i = 0; i < MEMCG_WALK_MAX && css; i++) {
    struct mem_cgroup* memcg = (struct mem_cgroup*)css;  // css is the first member
    long usage = BPF_CORE_READ(memcg, memory.usage.counter);
    unsigned long max = BPF_CORE_READ(memcg, memory.max);
    if (usage > 0 && (unsigned long)usage + CHARGE_SLACK_PAGES >= max) return 1;
    css = BPF_CORE_READ(css, parent);
  }
  return 0;
}

SEC("tp_btf/mark_victim")
int BPF_PROG(statlet_oom_mark_victim, struct task_struct* victim) {
  __u64 cgid = statlet_task_cgroup_id(victim);
  statlet_percpu_add(&oom_kills, &cgid, 1, &lost);

  struct statlet_oom_event* ev = bpf_ringbuf_reserve(&oom_events, sizeof(*ev), 0);
  if (!ev) {
    __u32 zero = 0;
    __u64* n = bpf_map_lookup_elem(&lost, &zero);
    if (n) *n += 1;
    return 0;
  }
  ev->boot_ns = bpf_ktime_get_boot_ns();
  ev->cgroup_id = cgid;
  ev->pid = BPF_CORE_READ(victim, tgid);
  ev->tid = BPF_CORE_READ(victim, pid);
  ev->constraint_memcg = memcg_at_limit(victim);
  ev->pad = 0;
  BPF_CORE_READ_STR_INTO(&ev->comm, victim, comm);
  bpf_ringbuf_submit(ev, 0);
  return 0;
}
