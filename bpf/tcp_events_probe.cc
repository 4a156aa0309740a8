// The "tcp" probe: TCP retransmits and drops (by kernel drop reason) per cgroup
// (see tcp_events.bpf.c).
#include <bpf/libbpf.h>

#include <cstring>

#include "bpf/kernel_btf.h"
#include "bpf/probe.h"
#include "bpf/probe_abi.h"
#include "bpf/tcp_events.skel.h"

namespace statlet::bpf {
namespace {

uint64_t SumU64(const uint8_t* values) {
  uint64_t sum = 0;
  for (int cpu = 0; cpu < PossibleCpus(); cpu++) {
    uint64_t v;
    std::memcpy(&v, values + cpu * sizeof(v), sizeof(v));
    sum += v;
  }
  return sum;
}

class TcpEventsProbe final : public Probe {
 public:
  ~TcpEventsProbe() override { statlet_tcp_events__destroy(skel_); }
  const char* name() const override { return "tcp"; }

  Status Start(const ProbeConfig& config) override {
    const KernelBtfFacts& btf = GetKernelBtfFacts();
    skel_ = statlet_tcp_events__open_opts(ProbeOpenOpts());
    if (!skel_) return LibbpfError(errno, "open tcp_events");
    skel_->rodata->kfree_skb_has_rx_sk = btf.kfree_skb_has_rx_sk ? 1 : 0;
    max_entries_ = config.max_cgroups;
    bpf_map__set_max_entries(skel_->maps.retransmits, max_entries_);
    bpf_map__set_max_entries(skel_->maps.drops, max_entries_);
    if (int err = statlet_tcp_events__load(skel_)) return Fail(err, "load tcp_events");
    if (int err = statlet_tcp_events__attach(skel_)) return Fail(err, "attach tp_btf/tcp_retransmit_skb,kfree_skb");
    return Status::Ok();
  }

  void Collect(CollectContext& ctx) override {
    const KernelBtfFacts& btf = GetKernelBtfFacts();
    const bool retransmits_whole =
        ScanCgroupMap(bpf_map__fd(skel_->maps.retransmits), sizeof(uint64_t), sizeof(uint64_t), max_entries_, ctx,
                      [&](uint64_t id, const uint8_t*, const uint8_t* values) {
                        (*ctx.by_cgroup_id)[id].tcp_retransmits = SumU64(values);
                      });
    const bool drops_whole =
        ScanCgroupMap(bpf_map__fd(skel_->maps.drops), sizeof(statlet_drop_key), sizeof(uint64_t), max_entries_, ctx,
                      [&](uint64_t id, const uint8_t* key_bytes, const uint8_t* values) {
                        statlet_drop_key key;
                        std::memcpy(&key, key_bytes, sizeof(key));
                        if (!IsDropReason(btf, key.reason)) return;
                        uint64_t n = SumU64(values);
                        BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
                        out.tcp_drops = out.tcp_drops.value_or(0) + n;
                        out.tcp_drop_reasons[DropReasonName(btf, key.reason)] += n;
                      });
    // A live cgroup without an entry has had none since the probe started; a map not read
    // whole leaves its counters absent for this collection, not reset to 0.
    for (uint64_t id : ctx.pruner->live()) {
      BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
      if (retransmits_whole && !out.tcp_retransmits) out.tcp_retransmits = 0;
      if (drops_whole && !out.tcp_drops) out.tcp_drops = 0;
    }
  }

  uint64_t LostEvents() const override { return SumPerCpuArrayU64(bpf_map__fd(skel_->maps.lost)); }

 private:
  Status Fail(int err, const char* what) {
    Status st = LibbpfError(err, what);
    statlet_tcp_events__destroy(skel_);
    skel_ = nullptr;
    return st;
  }

  statlet_tcp_events* skel_ = nullptr;
  uint32_t max_entries_ = 0;
};

}  // namespace

std::unique_ptr<Probe> NewTcpEventsProbe(const ProbeSelection&) { return std::make_unique<TcpEventsProbe>(); }

}  // namespace statlet::bpf
