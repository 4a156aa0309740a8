// The "cpu" probe: per-CPU running time per cgroup (see cpu_time.bpf.c).
#include <bpf/libbpf.h>

#include "bpf/cpu_time.skel.h"
#include "bpf/probe.h"

namespace statlet::bpf {
namespace {

class CpuTimeProbe final : public Probe {
 public:
  ~CpuTimeProbe() override { statlet_cpu_time__destroy(skel_); }
  const char* name() const override { return "cpu"; }

  Status Start(const ProbeConfig& config) override {
    skel_ = statlet_cpu_time__open();
    if (!skel_) return LibbpfError(errno, "open cpu_time");
    max_entries_ = config.max_cgroups;
    bpf_map__set_max_entries(skel_->maps.cpu_ns, max_entries_);
    if (int err = statlet_cpu_time__load(skel_)) return Fail(err, "load cpu_time");
    if (int err = statlet_cpu_time__attach(skel_)) return Fail(err, "attach tp_btf/sched_switch");
    return Status::Ok();
  }

  void Collect(CollectContext& ctx) override {
    const int cpus = PossibleCpus();
    ScanCgroupMap(bpf_map__fd(skel_->maps.cpu_ns), sizeof(uint64_t), sizeof(uint64_t), max_entries_, ctx,
                  [&](uint64_t id, const uint8_t*, const uint8_t* values) {
                    std::vector<uint64_t>& out = (*ctx.per_cpu_ns)[id];
                    out.assign(cpus, 0);
                    std::memcpy(out.data(), values, cpus * sizeof(uint64_t));
                  });
    for (uint64_t id : ctx.pruner->live()) {  // no entry yet: has not run since the probe started
      std::vector<uint64_t>& out = (*ctx.per_cpu_ns)[id];
      if (out.empty()) out.assign(cpus, 0);
    }
  }

  uint64_t LostEvents() const override { return SumPerCpuArrayU64(bpf_map__fd(skel_->maps.lost)); }

 private:
  Status Fail(int err, const char* what) {
    Status st = LibbpfError(err, what);
    statlet_cpu_time__destroy(skel_);
    skel_ = nullptr;
    return st;
  }

  statlet_cpu_time* skel_ = nullptr;
  uint32_t max_entries_ = 0;
};

}  // namespace

std::unique_ptr<Probe> NewCpuTimeProbe() { return std::make_unique<CpuTimeProbe>(); }

}  // namespace statlet::bpf
