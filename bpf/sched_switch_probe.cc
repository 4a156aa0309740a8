// The runqlat and faults probes: one sched_switch program (see sched_switch.bpf.c)
// counting per-cgroup slots of a per-CPU array, and their slot bookkeeping.
#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cstring>

#include "base/log.h"
#include "bpf/probe.h"
#include "bpf/probe_abi.h"
#include "bpf/sched_switch.skel.h"

namespace statlet::bpf {
namespace {

// Which of the program's two probes count (the registry's runqlat and faults rows).
struct SchedSwitchCounts {
  bool runqlat = true;
  bool faults = true;
};

class SchedSwitchProbe final : public Probe {
 public:
  explicit SchedSwitchProbe(const SchedSwitchCounts& counts) : counts_(counts) {}
  ~SchedSwitchProbe() override { statlet_sched_switch__destroy(skel_); }
  const char* name() const override { return "sched_switch"; }

  Status Start(const ProbeConfig& config) override {
    // Run-queue latency alone needs no task storage (statlet_sched_switch_runq); a kernel
    // whose BTF lacks the run queues' per-CPU variable gets the storage-based program.
    if (counts_.runqlat && !counts_.faults) {
      Status st = Load(config, kRunqOnly);
      if (st.ok()) return st;
      log::Warn("bpf: run-queue latency without task storage did not load (" + st.message() +
                "); counting it at each task's switch-out instead");
    }
    return Load(config, counts_.faults && counts_.runqlat ? kAll : kFlags);
  }

 private:
  enum Program { kAll, kFlags, kRunqOnly };

  Status Load(const ProbeConfig& config, Program program) {
    skel_ = statlet_sched_switch__open_opts(ProbeOpenOpts());
    if (!skel_) return LibbpfError(errno, "open sched_switch");
    skel_->rodata->count_faults = counts_.faults;
    skel_->rodata->count_runq = counts_.runqlat;
    bpf_program__set_autoload(skel_->progs.statlet_sched_switch_all, program == kAll);
    bpf_program__set_autoload(skel_->progs.statlet_sched_switch, program == kFlags);
    bpf_program__set_autoload(skel_->progs.statlet_sched_switch_runq, program == kRunqOnly);
    bpf_program__set_autoload(skel_->progs.statlet_task_fork, program != kRunqOnly);
    bpf_program__set_autoload(skel_->progs.statlet_task_marks_init, program != kRunqOnly);
    max_entries_ = config.max_cgroups;
    bpf_map__set_max_entries(skel_->maps.slot_of, max_entries_);
    bpf_map__set_max_entries(skel_->maps.counters, max_entries_);
    bpf_map__set_max_entries(skel_->maps.free_slots, max_entries_);
    if (int err = statlet_sched_switch__load(skel_)) return Fail(err, "load sched_switch");
    // Highest slot pushed first: the program pops slot 0 first, and reuses the lowest
    // freed ones, so the used slots stay dense and Collect reads a short prefix.
    const int free_fd = bpf_map__fd(skel_->maps.free_slots);
    for (uint32_t slot = max_entries_; slot-- > 0;) {
      if (bpf_map_update_elem(free_fd, nullptr, &slot, BPF_ANY) != 0) return Fail(-errno, "fill free slots");
    }
    if (int err = statlet_sched_switch__attach(skel_)) return Fail(err, "attach tp_btf/sched_switch");
    if (program == kRunqOnly) return Status::Ok();
    // New tasks get their marks at fork from now on; the ones that exist get them here.
    if (Status st = MarkExistingTasks(); !st.ok()) {
      statlet_sched_switch__destroy(skel_);
      skel_ = nullptr;
      return st;
    }
    return Status::Ok();
  }

 public:
  void Collect(CollectContext& ctx) override {
    ReturnQuarantinedSlots();
    const int slot_of_fd = bpf_map__fd(skel_->maps.slot_of);

    // Which slot holds which live cgroup; unmap the dead ones.
    std::vector<std::pair<uint64_t, uint32_t>> mapped;
    Status st =
        ForEachEntry(slot_of_fd, sizeof(uint64_t), sizeof(uint32_t), [&](const uint8_t* key, const uint8_t* value) {
          uint64_t id;
          uint32_t slot;
          std::memcpy(&id, key, sizeof(id));
          std::memcpy(&slot, value, sizeof(slot));
          mapped.emplace_back(id, slot);
        });
    if (!st.ok()) mapped.clear();  // this collection goes without the scheduler values
    const bool crowded = mapped.size() * 4 > static_cast<size_t>(max_entries_) * 3;
    std::vector<uint64_t> slot_owner;  // by slot: the live cgroup id, 0 for none
    uint32_t end = 0;
    for (const auto& [id, slot] : mapped) {
      if (slot >= max_entries_) continue;
      if (ctx.pruner->IsLive(id)) {
        if (slot_owner.size() <= slot) slot_owner.resize(slot + 1, 0);
        slot_owner[slot] = id;
        end = std::max(end, slot + 1);
      } else if (ctx.pruner->ShouldPrune(id, crowded) && bpf_map_delete_elem(slot_of_fd, &id) == 0) {
        quarantined_.push_back(slot);
      }
    }
    // Only now invalidate the CPUs' slot caches: a program that read the old epoch may
    // still add to an unmapped slot, so the slot is zeroed and reused one collection later.
    if (!quarantined_.empty()) __atomic_add_fetch(&skel_->data->slot_epoch, 1, __ATOMIC_SEQ_CST);

    const int cpus = PossibleCpus();
    const size_t stride = PerCpuStride(sizeof(statlet_sched_counters));
    Status read = ForEachPerCpuSlot(bpf_map__fd(skel_->maps.counters), sizeof(statlet_sched_counters), end,
                                    [&](uint32_t slot, const uint8_t* values) {
                                      if (slot >= slot_owner.size() || slot_owner[slot] == 0) return;
                                      BpfCgroupStats& out = (*ctx.by_cgroup_id)[slot_owner[slot]];
                                      Fill(values, cpus, stride, &out);
                                    });
    (void)read;                               // a failed read leaves the live cgroups with zeros below
    for (uint64_t id : ctx.pruner->live()) {  // no slot yet: nothing happened since the probe started
      BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
      if (counts_.faults && !out.minor_faults) out.minor_faults = out.major_faults = 0;
      if (counts_.runqlat && !out.runq_latency_sum_ns) {
        out.runq_latency_log2_us.assign(STATLET_RUNQ_SLOTS, 0);
        out.runq_latency_sum_ns = 0;
      }
    }
  }

  uint64_t LostEvents() const override { return SumPerCpuArrayU64(bpf_map__fd(skel_->maps.lost)); }

 private:
  void Fill(const uint8_t* values, int cpus, size_t stride, BpfCgroupStats* out) const {
    if (counts_.runqlat) out->runq_latency_log2_us.assign(STATLET_RUNQ_SLOTS, 0);
    uint64_t minor = 0, major = 0, runq_sum = 0;
    for (int cpu = 0; cpu < cpus; cpu++) {
      statlet_sched_counters c;
      std::memcpy(&c, values + cpu * stride, sizeof(c));
      minor += c.minor_faults;
      major += c.major_faults;
      runq_sum += c.runq_sum_ns;
      if (counts_.runqlat) {
        for (int i = 0; i < STATLET_RUNQ_SLOTS; i++) out->runq_latency_log2_us[i] += c.runq_slots[i];
      }
    }
    if (counts_.faults) {
      out->minor_faults = minor;
      out->major_faults = major;
    }
    if (counts_.runqlat) out->runq_latency_sum_ns = runq_sum;
  }

  Status MarkExistingTasks() {
    int fd = bpf_iter_create(bpf_link__fd(skel_->links.statlet_task_marks_init));
    if (fd < 0) return LibbpfError(errno, "create task iterator");
    char buf[256];
    ssize_t n;
    while ((n = read(fd, buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
    }
    const int err = n < 0 ? errno : 0;
    close(fd);
    if (err != 0) return LibbpfError(err, "run task iterator");
    bpf_link__destroy(skel_->links.statlet_task_marks_init);
    skel_->links.statlet_task_marks_init = nullptr;
    return Status::Ok();
  }

  // Slots unmapped by the previous collection: no program holds them any more.
  void ReturnQuarantinedSlots() {
    if (quarantined_.empty()) return;
    const int counters_fd = bpf_map__fd(skel_->maps.counters);
    const int free_fd = bpf_map__fd(skel_->maps.free_slots);
    std::vector<uint8_t> zeros(PerCpuStride(sizeof(statlet_sched_counters)) * PossibleCpus(), 0);
    for (uint32_t slot : quarantined_) {
      if (bpf_map_update_elem(counters_fd, &slot, zeros.data(), BPF_ANY) == 0) {
        bpf_map_update_elem(free_fd, nullptr, &slot, BPF_ANY);
      }  // else the slot is lost for this load (never seen: arrays accept every index)
    }
    quarantined_.clear();
  }

  Status Fail(int err, const char* what) {
    Status st = LibbpfError(err, what);
    statlet_sched_switch__destroy(skel_);
    skel_ = nullptr;
    return st;
  }

  SchedSwitchCounts counts_;
  statlet_sched_switch* skel_ = nullptr;
  uint32_t max_entries_ = 0;
  std::vector<uint32_t> quarantined_;
};

}  // namespace

std::unique_ptr<Probe> NewSchedSwitchProbe(const ProbeSelection& selected) {
  return std::make_unique<SchedSwitchProbe>(
      SchedSwitchCounts{.runqlat = selected.Has("runqlat"), .faults = selected.Has("faults")});
}

}  // namespace statlet::bpf
