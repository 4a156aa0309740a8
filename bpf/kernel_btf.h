// Facts about the running kernel read from its BTF (/sys/kernel/btf/vmlinux).
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

namespace statlet::bpf {

struct KernelBtfFacts {
  // enum skb_drop_reason value -> the tracepoint's name for it ("NO_SOCKET", "QDISC_DROP").
  // Values that mean "not a drop" (SKB_NOT_DROPPED_YET, SKB_CONSUMED) are absent.
  std::unordered_map<uint32_t, std::string> drop_reasons;
  // Whether the kfree_skb tracepoint passes the receiving socket as a fourth argument.
  bool kfree_skb_has_rx_sk = false;
  bool loaded = false;  // false when the kernel exposes no BTF
};

// Reads the facts once; cheap to call again.
const KernelBtfFacts& GetKernelBtfFacts();

// The drop reason's name, or "reason_<n>" when the kernel's BTF does not name it.
std::string DropReasonName(const KernelBtfFacts& facts, uint32_t reason);
bool IsDropReason(const KernelBtfFacts& facts, uint32_t reason);

}  // namespace statlet::bpf
