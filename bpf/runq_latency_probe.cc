// The "runqlat" probe: run-queue latency log2 histogram per cgroup (see runq_latency.bpf.c).
#include <bpf/libbpf.h>

#include "bpf/probe.h"
#include "bpf/probe_abi.h"
#include "bpf/runq_latency.skel.h"

namespace statlet::bpf {
namespace {

class RunqLatencyProbe final : public Probe {
 public:
  ~RunqLatencyProbe() override { statlet_runq_latency__destroy(skel_); }
  const char* name() const override { return "runqlat"; }

  Status Start(const ProbeConfig& config) override {
    skel_ = statlet_runq_latency__open();
    if (!skel_) return LibbpfError(errno, "open runq_latency");
    max_entries_ = config.max_cgroups;
    bpf_map__set_max_entries(skel_->maps.runq, max_entries_);
    if (int err = statlet_runq_latency__load(skel_)) return Fail(err, "load runq_latency");
    if (int err = statlet_runq_latency__attach(skel_)) return Fail(err, "attach tp_btf/sched_wakeup,sched_switch");
    return Status::Ok();
  }

  void Collect(CollectContext& ctx) override {
    const int cpus = PossibleCpus();
    const size_t stride = PerCpuStride(sizeof(statlet_runq_hist));
    ScanCgroupMap(bpf_map__fd(skel_->maps.runq), sizeof(uint64_t), sizeof(statlet_runq_hist), max_entries_,
                  ctx, [&](uint64_t id, const uint8_t*, const uint8_t* values) {
                    BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
                    out.runq_latency_log2_us.assign(STATLET_RUNQ_SLOTS, 0);
                    uint64_t sum_ns = 0;
                    for (int cpu = 0; cpu < cpus; cpu++) {
                      statlet_runq_hist h;
                      std::memcpy(&h, values + cpu * stride, sizeof(h));
                      for (int i = 0; i < STATLET_RUNQ_SLOTS; i++) out.runq_latency_log2_us[i] += h.slots[i];
                      sum_ns += h.sum_ns;
                    }
                    out.runq_latency_sum_ns = sum_ns;
                  });
    for (uint64_t id : ctx.pruner->live()) {  // no entry yet: no thread has waited
      BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
      if (out.runq_latency_log2_us.empty()) out.runq_latency_log2_us.assign(STATLET_RUNQ_SLOTS, 0);
      if (!out.runq_latency_sum_ns) out.runq_latency_sum_ns = 0;
    }
  }

  uint64_t LostEvents() const override { return SumPerCpuArrayU64(bpf_map__fd(skel_->maps.lost)); }

 private:
  Status Fail(int err, const char* what) {
    Status st = LibbpfError(err, what);
    statlet_runq_latency__destroy(skel_);
    skel_ = nullptr;
    return st;
  }

  statlet_runq_latency* skel_ = nullptr;
  uint32_t max_entries_ = 0;
};

}  // namespace

std::unique_ptr<Probe> NewRunqLatencyProbe() { return std::make_unique<RunqLatencyProbe>(); }

}  // namespace statlet::bpf
