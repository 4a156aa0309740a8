// TCP retransmits and drops per cgroup, drops split by the kernel's drop reason.
//
// Attach: tp_btf/tcp_retransmit_skb and tp_btf/kfree_skb. BTF-typed tracepoints sidestep
// the classic tracepoint's record layout, whose struct name differs between 6.1 and 6.18,
// and need no tracefs. Both fire in softirq context (retransmit timer, packet receive),
// where `current` is whatever task was interrupted, so the cgroup is the socket's
// (sk->sk_cgrp_data: the cgroup of the task that created it), never the current task's.
#include "bpf/probe_common.bpf.h"

char LICENSE[] SEC("license") = "GPL";

#define IPPROTO_TCP 6
#define TCP_TIME_WAIT 6
#define TCP_NEW_SYN_RECV 12

// Set by the loader from the kernel's BTF: kfree_skb has a fourth argument, the receiving
// socket of an incoming packet (6.11+). The verifier drops the branch when this is 0.
const volatile __u32 kfree_skb_has_rx_sk = 0;

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, __u64);    // cgroup id
  __type(value, __u64);  // retransmitted segments
} retransmits SEC(".maps");

struct {
  __uint(type, BPF_MAP_TYPE_PERCPU_HASH);
  __uint(max_entries, STATLET_BPF_MAX_CGROUPS);
  __type(key, struct statlet_drop_key);
  __type(value, __u64);  // dropped packets
} drops SEC(".maps");

STATLET_LOST_MAP;

// How far each socket's retransmits have been counted: its tcp_sock.total_retrans at the
// last event seen.
struct retrans_seen {
  __u32 total;
  __u32 valid;
};
struct {
  __uint(type, BPF_MAP_TYPE_SK_STORAGE);
  __uint(map_flags, BPF_F_NO_PREALLOC);
  __type(key, int);
  __type(value, struct retrans_seen);
} retrans_seen SEC(".maps");

// Counts segments, as the kernel's TCP RetransSegs does, from the socket's own count
// (tcp_sock.total_retrans, raised by the segments of each retransmit just before this
// tracepoint): a retransmit whose transmit failed (no tracepoint) is caught up at the
// socket's next one, and an offloaded skb counts as the segments the kernel counted, not
// as one. A socket seen for the first time adds this skb's segments only: what it
// retransmitted before the probe loaded is not the probe's to count.
SEC("tp_btf/tcp_retransmit_skb")
int BPF_PROG(statlet_tcp_retransmit, struct sock* sk, struct sk_buff* skb) {
  __u64 cgid = statlet_sock_cgroup_id(sk);
  if (cgid == 0) return 0;
  __u32 total = BPF_CORE_READ((struct tcp_sock*)sk, total_retrans);
  __u16 segs = 0;
  bpf_core_read(&segs, sizeof(segs), &((struct tcp_skb_cb*)&skb->cb[0])->tcp_gso_segs);
  __u64 delta = segs > 1 ? segs : 1;
  struct retrans_seen* seen = bpf_sk_storage_get(&retrans_seen, sk, 0, BPF_SK_STORAGE_GET_F_CREATE);
  if (seen) {
    if (seen->valid) delta = total - seen->total;
    seen->total = total;
    seen->valid = 1;
  }
  if (delta) statlet_percpu_add(&retransmits, &cgid, delta, &lost);
  return 0;
}

SEC("tp_btf/kfree_skb")
int BPF_PROG(statlet_kfree_skb, struct sk_buff* skb, void* location, unsigned int reason) {
  struct sock* sk = BPF_CORE_READ(skb, sk);
  if (!sk && kfree_skb_has_rx_sk) sk = (struct sock*)ctx[3];
  if (!sk) return 0;
  // Request and time-wait minisocks have no sk_protocol / cgroup data.
  unsigned char state = BPF_CORE_READ(sk, __sk_common.skc_state);
  if (state == TCP_TIME_WAIT || state == TCP_NEW_SYN_RECV) return 0;
  if (BPF_CORE_READ(sk, sk_protocol) != IPPROTO_TCP) return 0;
  struct statlet_drop_key key = {.cgroup_id = statlet_sock_cgroup_id(sk), .reason = reason};
  if (key.cgroup_id == 0) return 0;
  statlet_percpu_add(&drops, &key, 1, &lost);
  return 0;
}
