// Page faults per cgroup: every user-mode fault, and the major ones.
//
// Attach: tp_btf/exceptions/page_fault_user (x86) fires once per user page fault at
// exception entry; BTF-typed, so no tracefs, and it works on 6.1 and 6.18. Whether a fault
// was major is only known after handling, where no tracepoint exists; the kernel's own
// PERF_COUNT_SW_PAGE_FAULTS_MAJ software event (one perf event per CPU, period 1) runs
// the `perf_event` program for exactly those. Major faults are rare, so that path is cheap;
// minor faults are derived in user space as all faults minus major ones.
#include "bpf/probe_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u64);   // cgroup id
  __type(value, __u64); // user page faults
} faults SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u64);   // cgroup id
  __type(value, __u64); // major page faults
} major_faults SEC(".maps");

STATLET_LOST_MAP;

SEC("tp_btf/page_fault_user")
int BPF_PROG(statlet_page_fault_user) {
  __u64 cgid = bpf_get_current_cgroup_id();
  statlet_percpu_add(&faults, &cgid, 1, &lost);
  return 0;
}

SEC("perf_event")
int statlet_major_fault(void *ctx) {
  __u64 cgid = bpf_get_current_cgroup_id();
  statlet_percpu_add(&major_faults, &cgid, 1, &lost);
  return 0;
}
