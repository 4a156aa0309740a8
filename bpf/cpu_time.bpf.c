// Per-CPU running time per cgroup.
//
// Attach: tp_btf/sched_switch — BTF-typed tracepoint, works on 6.1 and 6.18 and needs no
// tracefs; fentry is refused on the lockdown host and kprobes are not built in there.
// At every switch the time since the previous switch on this CPU belongs to the task
// switching out (`current` is still prev here), hence to its cgroup. The per-CPU hash
// keeps the split by CPU for free: user space reads one value per CPU per cgroup.
#include "bpf/probe_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u64);   // cgroup id
  __type(value, __u64); // nanoseconds run on this CPU
} cpu_ns SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
  __uint(max_entries, 1);
  __type(key, __u32);
  __type(value, __u64);  // CLOCK_MONOTONIC of this CPU's last switch
} last_switch SEC(".maps");

STATLET_LOST_MAP;

SEC("tp_btf/sched_switch")
int BPF_PROG(statlet_cpu_switch, _Bool preempt, struct task_struct *prev, struct task_struct *next) {
  __u32 zero = 0;
  __u64 *last = bpf_map_lookup_elem(&last_switch, &zero);
  if (!last) return 0;
  __u64 now = bpf_ktime_get_ns();
  __u64 start = *last;
  *last = now;
  // The first switch after attach has no start; pid 0 is the CPU's idle task.
  if (start == 0 || prev->pid == 0) return 0;
  __u64 cgid = bpf_get_current_cgroup_id();
  statlet_percpu_add(&cpu_ns, &cgid, now - start, &lost);
  return 0;
}
