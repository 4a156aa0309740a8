// The cpu probe: per-CPU time of every cgroup, read at Collect() by one walk of the
// cgroup iterator in cgroup_cpu_iter.bpf.c. Nothing is attached to the scheduler.
#include <bpf/libbpf.h>

#include <atomic>
#include <cstring>
#include <utility>

#include "bpf/cgroup_cpu_iter.skel.h"
#include "bpf/cgroup_walk.h"
#include "bpf/probe.h"
#include "bpf/probe_abi.h"

namespace statlet::bpf {
namespace {

static_assert(sizeof(statlet_cgroup_entry) % 8 == 0, "array map values are 8-byte aligned");

class CgroupCpuProbe final : public Probe {
 public:
  ~CgroupCpuProbe() override {
    walk_.reset();  // the link before the object it runs
    statlet_cgroup_cpu_iter__destroy(skel_);
  }
  const char* name() const override { return "cgroup_cpu_iter"; }

  Status Start(const ProbeConfig& config) override {
    cpus_ = PossibleCpus();
    if (cpus_ <= 0 || cpus_ > STATLET_ITER_MAX_CPUS)
      return Unavailable("cpu: unsupported number of CPUs " + std::to_string(cpus_));
    skel_ = statlet_cgroup_cpu_iter__open_opts(ProbeOpenOpts());
    if (!skel_) return LibbpfError(errno, "open cgroup_cpu_iter");
    skel_->rodata->nr_cpus = static_cast<__u32>(cpus_);
    bpf_map__set_max_entries(skel_->maps.entries, config.max_cgroups);
    bpf_map__set_max_entries(skel_->maps.cpu_times, config.max_cgroups * static_cast<uint32_t>(cpus_));
    if (int err = statlet_cgroup_cpu_iter__load(skel_)) return LibbpfError(err, "load cgroup_cpu_iter");
    walk_ = std::make_unique<CgroupWalk>();
    if (Status st = walk_->Attach(skel_->progs.statlet_cgroup_cpu, config.cgroup2_root_fd); !st.ok()) return st;
    if (Status st = entries_.Map(skel_->maps.entries); !st.ok()) return st;
    if (Status st = times_.Map(skel_->maps.cpu_times); !st.ok()) return st;
    // One walk now: a kernel that loads the program but cannot run it is found at start.
    StatusOr<uint32_t> walked = walk_->Run();
    return walked.ok() ? Status::Ok() : walked.status();
  }

  // The kernel keeps each cgroup's own tasks' time. A live cgroup gets its own values plus
  // those of its descendants that are not live (a pre-order walk: a stack of the live
  // ancestors of the current cgroup), so that adding each live cgroup to its nearest live
  // ancestor, as the Sampler does for every probe, gives the kernel's hierarchical totals.
  void Collect(CollectContext& ctx) override {
    if (!ctx.per_cpu_wanted) return;
    StatusOr<uint32_t> walked = walk_->Run();
    if (!walked.ok()) {
      failed_walks_.fetch_add(1, std::memory_order_relaxed);
      return;  // this collection has no per-CPU time
    }
    const uint32_t stored = std::min(*walked, entries_.entries());
    if (*walked > stored) unstored_.store(*walked - stored, std::memory_order_relaxed);
    if (!entries_.Cover(stored).ok() || !times_.Cover(stored * static_cast<uint32_t>(cpus_)).ok()) {
      failed_walks_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    std::vector<std::pair<uint32_t, std::vector<uint64_t>*>> live_above;  // (level, values)
    for (uint32_t i = 0; i < stored; i++) {
      const statlet_cgroup_entry& e = entries_.at<statlet_cgroup_entry>(i);
      while (!live_above.empty() && live_above.back().first >= e.level) live_above.pop_back();
      if (ctx.pruner->IsLive(e.cgroup_id)) {
        std::vector<uint64_t>& v = (*ctx.by_cgroup_id)[e.cgroup_id].per_cpu_ns;
        v.assign(static_cast<size_t>(cpus_), 0);
        live_above.emplace_back(e.level, &v);
      }
      if (live_above.empty()) continue;
      std::vector<uint64_t>& to = *live_above.back().second;
      const uint64_t* own = &times_.at<uint64_t>(i * static_cast<uint32_t>(cpus_));
      for (int cpu = 0; cpu < cpus_; cpu++) to[cpu] += own[cpu];
    }
    // A live cgroup the walk did not see (created after it, or beyond the maps' size when
    // the walk was cut short) has no value; one the complete walk did not find has none
    // either, since it is not in the unified hierarchy.
    for (uint64_t id : ctx.pruner->live()) {
      auto it = ctx.by_cgroup_id->find(id);
      if (it != ctx.by_cgroup_id->end() && !it->second.per_cpu_ns.empty())
        (*ctx.per_cpu_ns)[id] = it->second.per_cpu_ns;
    }
  }

  void ReleaseMappings() override {
    entries_.Unmap();
    times_.Unmap();
  }

  // Cgroups the last walk could not store (more than max_cgroups), plus failed walks.
  uint64_t LostEvents() const override {
    return unstored_.load(std::memory_order_relaxed) + failed_walks_.load(std::memory_order_relaxed);
  }

 private:
  statlet_cgroup_cpu_iter* skel_ = nullptr;
  std::unique_ptr<CgroupWalk> walk_;
  MappedArray entries_, times_;
  int cpus_ = 0;
  std::atomic<uint64_t> unstored_{0}, failed_walks_{0};
};

}  // namespace

std::unique_ptr<Probe> NewCgroupCpuProbe(const ProbeSelection&) { return std::make_unique<CgroupCpuProbe>(); }

}  // namespace statlet::bpf
