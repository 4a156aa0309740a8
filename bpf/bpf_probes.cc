#include "bpf/bpf_probes.h"

#include <unistd.h>

#include <algorithm>
#include <functional>
#include <iterator>

#include "base/log.h"
#include "bpf/cgroup_pruner.h"
#include "bpf/probe.h"

namespace statlet {

bool ParseBpfMode(std::string_view s, BpfMode* out) {
  if (s == "auto") *out = BpfMode::kAuto;
  else if (s == "on") *out = BpfMode::kOn;
  else if (s == "off") *out = BpfMode::kOff;
  else return false;
  return true;
}

const char* BpfModeName(BpfMode mode) {
  switch (mode) {
    case BpfMode::kAuto: return "auto";
    case BpfMode::kOn: return "on";
    case BpfMode::kOff: return "off";
  }
  return "auto";
}

const std::vector<std::string>& BpfProbes::ProbeNames() {
  static const std::vector<std::string> names = {"cpu", "runqlat", "faults", "oom", "tcp", "cgroup_stats"};
  return names;
}

const std::vector<std::string>& BpfProbes::DefaultProbeNames() {
  static const std::vector<std::string> names = {"cpu", "oom", "tcp", "cgroup_stats"};
  return names;
}

BpfProbes::BpfProbes() = default;

BpfProbes::~BpfProbes() {
  slots_.clear();
  loaded_.clear();  // detach and unload before closing anything else
  if (cgroup2_root_fd_ >= 0) close(cgroup2_root_fd_);
}

StatusOr<std::unique_ptr<BpfProbes>> BpfProbes::Create(const BpfOptions& options) {
  if (options.max_cgroups == 0) return InvalidArgument("bpf: max_cgroups must be positive");
  for (const std::string& name : options.probes) {
    if (std::find(ProbeNames().begin(), ProbeNames().end(), name) == ProbeNames().end()) {
      return InvalidArgument("bpf: unknown probe \"" + name + "\"");
    }
  }
  std::unique_ptr<BpfProbes> self(new BpfProbes());
  self->slots_.resize(ProbeNames().size());
  if (options.mode == BpfMode::kOff) {
    for (Slot& slot : self->slots_) slot.error = "disabled";
    return self;
  }
  const std::vector<std::string>& wanted_names = options.probes.empty() ? DefaultProbeNames() : options.probes;
  auto selected = [&](size_t i) {
    return std::find(wanted_names.begin(), wanted_names.end(), ProbeNames()[i]) != wanted_names.end();
  };
  // Programs and the probes (indices into ProbeNames) each one serves. runqlat and faults
  // share the sched_switch program, which counts only for the selected ones.
  const bpf::SchedSwitchCounts sched{.runqlat = selected(1), .faults = selected(2)};
  struct Program {
    std::vector<size_t> probes;
    std::function<std::unique_ptr<bpf::Probe>()> make;
  };
  const Program programs[] = {
      {{0}, bpf::NewCgroupCpuProbe},   {{1, 2}, [&] { return bpf::NewSchedSwitchProbe(sched); }},
      {{3}, bpf::NewOomKillProbe},     {{4}, bpf::NewTcpEventsProbe},
      {{5}, bpf::NewCgroupStatsProbe},
  };
  bpf::InstallLibbpfLogger();
  self->cgroup2_root_fd_ = bpf::OpenCgroup2Root(options.cgroup2_root);
  bpf::ProbeConfig config{.max_cgroups = options.max_cgroups, .cgroup2_root_fd = self->cgroup2_root_fd_};
  for (const Program& program : programs) {
    std::vector<size_t> wanted;
    for (size_t i : program.probes) {
      if (selected(i)) wanted.push_back(i);
      else self->slots_[i].error = "not selected";
    }
    if (wanted.empty()) continue;
    std::unique_ptr<bpf::Probe> probe = program.make();
    bpf::ClearLibbpfMessages();
    Status st = probe->Start(config);
    if (!st.ok() && options.mode == BpfMode::kOn) {
      return statlet::Status(st.code(), "bpf probe " + ProbeNames()[wanted[0]] + " did not load: " + st.message());
    }
    for (size_t i : wanted) {
      Slot& slot = self->slots_[i];
      if (st.ok()) {
        slot.probe = probe.get();
        slot.up = true;
      } else {
        slot.error = st.message();
        log::Warn("bpf probe " + ProbeNames()[i] + " not loaded, skipping it: " + st.message());
      }
    }
    if (st.ok()) {
      if (CgroupFileSource* source = probe->file_source()) self->file_source_ = source;
      self->loaded_.push_back(std::move(probe));
    }
  }
  return self;
}

void BpfProbes::Collect(const std::vector<uint64_t>& live_cgroup_ids,
                        std::unordered_map<uint64_t, BpfCgroupStats>* by_cgroup_id, std::vector<OomEvent>* new_ooms,
                        bool per_cpu_wanted) {
  std::lock_guard<std::mutex> lock(collect_mu_);
  per_cpu_ns_.clear();
  bpf::CgroupPruner pruner(live_cgroup_ids, cgroup2_root_fd_);
  std::vector<OomEvent> ignored_ooms;
  bpf::CollectContext ctx{.pruner = &pruner,
                          .by_cgroup_id = by_cgroup_id,
                          .new_ooms = new_ooms ? new_ooms : &ignored_ooms,
                          .per_cpu_ns = &per_cpu_ns_,
                          .per_cpu_wanted = per_cpu_wanted};
  for (auto& probe : loaded_) probe->Collect(ctx);
}

void BpfProbes::ReleaseMappings() {
  std::lock_guard<std::mutex> lock(collect_mu_);
  for (auto& probe : loaded_) probe->ReleaseMappings();
}

const std::vector<uint64_t>* BpfProbes::PerCpuNs(uint64_t cgroup_id) const {
  auto it = per_cpu_ns_.find(cgroup_id);
  return it == per_cpu_ns_.end() ? nullptr : &it->second;
}

std::vector<BpfProbeStatus> BpfProbes::ProbeStatus() const {
  std::lock_guard<std::mutex> lock(collect_mu_);
  std::vector<BpfProbeStatus> out;
  for (size_t i = 0; i < slots_.size(); i++) {
    const Slot& s = slots_[i];
    out.push_back({ProbeNames()[i], s.up, s.error, s.up ? s.probe->LostEvents() : 0});
  }
  return out;
}

bool BpfProbes::AnyUp() const {
  for (const Slot& s : slots_) {
    if (s.up) return true;
  }
  return false;
}

std::vector<SourceState> BpfProbes::ProbeStates() const {
  std::vector<SourceState> out;
  for (const BpfProbeStatus& p : ProbeStatus()) out.push_back({p.probe, p.up, p.error, p.lost_events});
  return out;
}

}  // namespace statlet
