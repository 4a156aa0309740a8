#include "bpf/kernel_btf.h"

#include <bpf/btf.h>

#include <string_view>

namespace statlet::bpf {
namespace {

constexpr std::string_view kReasonPrefix = "SKB_DROP_REASON_";

KernelBtfFacts Read() {
  KernelBtfFacts facts;
  struct btf* btf = btf__load_vmlinux_btf();
  if (!btf) return facts;
  facts.loaded = true;

  int id = btf__find_by_name_kind(btf, "skb_drop_reason", BTF_KIND_ENUM);
  if (id > 0) {
    const struct btf_type* t = btf__type_by_id(btf, id);
    const struct btf_enum* e = btf_enum(t);
    for (int i = 0; i < btf_vlen(t); i++) {
      std::string_view name = btf__name_by_offset(btf, e[i].name_off);
      if (name.substr(0, kReasonPrefix.size()) != kReasonPrefix) continue;  // NOT_DROPPED_YET, CONSUMED
      name.remove_prefix(kReasonPrefix.size());
      if (name == "MAX") continue;
      facts.drop_reasons.emplace(static_cast<uint32_t>(e[i].val), std::string(name));
    }
  }

  // btf_trace_kfree_skb is `typedef void (*)(void *__data, <tracepoint args>)`.
  id = btf__find_by_name_kind(btf, "btf_trace_kfree_skb", BTF_KIND_TYPEDEF);
  if (id > 0) {
    const struct btf_type* t = btf__type_by_id(btf, btf__resolve_type(btf, id));
    if (t && btf_is_ptr(t)) t = btf__type_by_id(btf, t->type);
    if (t && btf_is_func_proto(t)) facts.kfree_skb_has_rx_sk = btf_vlen(t) - 1 >= 4;
  }
  btf__free(btf);
  return facts;
}

}  // namespace

const KernelBtfFacts& GetKernelBtfFacts() {
  static const KernelBtfFacts facts = Read();
  return facts;
}

std::string DropReasonName(const KernelBtfFacts& facts, uint32_t reason) {
  auto it = facts.drop_reasons.find(reason);
  if (it != facts.drop_reasons.end()) return it->second;
  return "reason_" + std::to_string(reason);
}

bool IsDropReason(const KernelBtfFacts& facts, uint32_t reason) {
  if (facts.drop_reasons.empty()) return true;  // no BTF names: count everything
  return facts.drop_reasons.count(reason) != 0;
}

}  // namespace statlet::bpf
