// Bytes and packets per cgroup, whatever the network namespace: cgroup_skb programs see
// every IP packet a socket of the cgroup subtree they are attached to sends (egress, at IP
// output) or is given (ingress, at the socket's receive filter).
//
// Attach: cgroup_skb/ingress and cgroup_skb/egress with BPF_F_ALLOW_MULTI on the pods' root
// (or the unified root), so they run for every descendant and coexist with the programs of
// others. Both may run in softirq context (ACKs, retransmits, receive), so the cgroup is the
// socket's (bpf_skb_cgroup_id: the cgroup of the task that created the socket), never the
// current task's. The programs only count: they always let the packet pass.
#include "bpf/probe_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u64);  // the socket's cgroup id
  __type(value, struct statlet_net_counters);
} traffic SEC(".maps");

STATLET_LOST_MAP;

static __always_inline void statlet_count_skb(struct __sk_buff* skb, int egress) {
  __u64 cgid = bpf_skb_cgroup_id(skb);
  if (cgid == 0) return;  // no full socket (a request or time-wait socket)
  __u64 bytes = skb->len;
  __u64 packets = skb->gso_segs > 1 ? skb->gso_segs : 1;
  struct statlet_net_counters* c = bpf_map_lookup_elem(&traffic, &cgid);
  if (!c) {
    struct statlet_net_counters zero = {};
    long err = bpf_map_update_elem(&traffic, &cgid, &zero, BPF_NOEXIST);
    if (err != 0 && err != -EEXIST) {
      __u32 key = 0;
      __u64* n = bpf_map_lookup_elem(&lost, &key);
      if (n) *n += 1;
      return;
    }
    c = bpf_map_lookup_elem(&traffic, &cgid);
    if (!c) return;
  }
  if (egress) {
    c->tx_bytes += bytes;
    c->tx_packets += packets;
  } else {
    c->rx_bytes += bytes;
    c->rx_packets += packets;
  }
}

SEC("cgroup_skb/ingress")
int statlet_skb_ingress(struct __sk_buff* skb) {
  statlet_count_skb(skb, 0);
  return 1;
}

SEC("cgroup_skb/egress")
int statlet_skb_egress(struct __sk_buff* skb) {
  statlet_count_skb(skb, 1);
  return 1;
}
