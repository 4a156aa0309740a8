// The "oom" probe: OOM kill events and per-cgroup kill counts (see oom_kill.bpf.c).
#include <bpf/libbpf.h>
#include <time.h>

#include <cstring>

#include "bpf/oom_kill.skel.h"
#include "bpf/probe.h"
#include "bpf/probe_abi.h"

namespace statlet::bpf {
namespace {

int64_t ClockNs(clockid_t clock) {
  timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

class OomKillProbe final : public Probe {
 public:
  ~OomKillProbe() override { Stop(); }
  const char* name() const override { return "oom"; }

  Status Start(const ProbeConfig& config) override {
    skel_ = statlet_oom_kill__open_opts(ProbeOpenOpts());
    if (!skel_) return LibbpfError(errno, "open oom_kill");
    max_entries_ = config.max_cgroups;
    bpf_map__set_max_entries(skel_->maps.oom_kills, max_entries_);
    if (int err = statlet_oom_kill__load(skel_)) return Fail(err, "load oom_kill");
    if (int err = statlet_oom_kill__attach(skel_)) return Fail(err, "attach tp_btf/mark_victim");
    ring_ = ring_buffer__new(bpf_map__fd(skel_->maps.oom_events), &OomKillProbe::OnEvent, this, nullptr);
    if (!ring_) return Fail(errno, "ring buffer for oom events");
    return Status::Ok();
  }

  void Collect(CollectContext& ctx) override {
    sink_ = ctx.new_ooms;
    realtime_minus_boottime_ = ClockNs(CLOCK_REALTIME) - ClockNs(CLOCK_BOOTTIME);
    ring_buffer__consume(ring_);  // never blocks: reads what is there
    sink_ = nullptr;
    const bool whole = ScanCgroupMap(bpf_map__fd(skel_->maps.oom_kills), sizeof(uint64_t), sizeof(uint64_t),
                                     max_entries_, ctx, [&](uint64_t id, const uint8_t*, const uint8_t* values) {
                                       uint64_t sum = 0;
                                       for (int cpu = 0; cpu < PossibleCpus(); cpu++) {
                                         uint64_t v;
                                         std::memcpy(&v, values + cpu * sizeof(v), sizeof(v));
                                         sum += v;
                                       }
                                       (*ctx.by_cgroup_id)[id].oom_kills = sum;
                                     });
    if (!whole) return;  // absent this collection, not a reset to 0
    for (uint64_t id : ctx.pruner->live()) {
      BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
      if (!out.oom_kills) out.oom_kills = 0;
    }
  }

  uint64_t LostEvents() const override { return SumPerCpuArrayU64(bpf_map__fd(skel_->maps.lost)); }

 private:
  static int OnEvent(void* self_ptr, void* data, size_t size) {
    auto* self = static_cast<OomKillProbe*>(self_ptr);
    if (size < sizeof(statlet_oom_event) || !self->sink_) return 0;
    statlet_oom_event ev;
    std::memcpy(&ev, data, sizeof(ev));
    OomEvent out;
    out.timestamp_ns = static_cast<int64_t>(ev.boot_ns) + self->realtime_minus_boottime_;
    out.pid = ev.pid;
    out.comm.assign(ev.comm, strnlen(ev.comm, sizeof(ev.comm)));
    out.cgroup_id = ev.cgroup_id;
    out.constraint_memcg = ev.constraint_memcg != 0;
    self->sink_->push_back(std::move(out));
    return 0;
  }

  Status Fail(int err, const char* what) {
    Status st = LibbpfError(err, what);
    Stop();
    return st;
  }

  void Stop() {
    ring_buffer__free(ring_);
    ring_ = nullptr;
    statlet_oom_kill__destroy(skel_);
    skel_ = nullptr;
  }

  statlet_oom_kill* skel_ = nullptr;
  ring_buffer* ring_ = nullptr;
  std::vector<OomEvent>* sink_ = nullptr;
  int64_t realtime_minus_boottime_ = 0;
  uint32_t max_entries_ = 0;
};

}  // namespace

std::unique_ptr<Probe> NewOomKillProbe(const ProbeSelection&) { return std::make_unique<OomKillProbe>(); }

}  // namespace statlet::bpf
