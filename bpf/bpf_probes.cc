#include "bpf/bpf_probes.h"

#include <unistd.h>

#include <algorithm>

#include "base/log.h"
#include "bpf/cgroup_pruner.h"
#include "bpf/probe.h"
#include "bpf/probe_registry.h"

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
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const bpf::ProbeInfo& p : bpf::ProbeRegistry()) out.emplace_back(p.name);
    return out;
  }();
  return names;
}

const std::vector<std::string>& BpfProbes::DefaultProbeNames() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    for (const bpf::ProbeInfo& p : bpf::ProbeRegistry()) {
      if (p.on_by_default) out.emplace_back(p.name);
    }
    return out;
  }();
  return names;
}

std::vector<BpfRollUp> BpfProbes::RollUps() const {
  std::vector<BpfRollUp> out;
  for (const bpf::ProbeInfo& p : bpf::ProbeRegistry()) out.insert(out.end(), p.rolls_up.begin(), p.rolls_up.end());
  return out;
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
  const std::vector<bpf::ProbeInfo>& rows = bpf::ProbeRegistry();
  std::unique_ptr<BpfProbes> self(new BpfProbes());
  self->slots_.resize(rows.size());
  if (options.mode == BpfMode::kOff) {
    for (Slot& slot : self->slots_) slot.error = "disabled";
    return self;
  }
  const std::vector<std::string>& wanted_names = options.probes.empty() ? DefaultProbeNames() : options.probes;
  auto selected = [&](size_t i) {
    return std::find(wanted_names.begin(), wanted_names.end(), rows[i].name) != wanted_names.end();
  };
  bpf::InstallLibbpfLogger();
  self->cgroup2_root_fd_ = bpf::OpenCgroup2Root(options.cgroup2_root);
  bpf::ProbeConfig config{.max_cgroups = options.max_cgroups,
                          .cgroup2_root_fd = self->cgroup2_root_fd_,
                          .net_subtrees = options.net_subtrees};
  // One program per loader, in the order of its first row; it serves every row naming that
  // loader and is told which of them were selected.
  std::vector<bool> seen(rows.size());
  for (size_t first = 0; first < rows.size(); ++first) {
    if (seen[first]) continue;
    std::vector<size_t> wanted;
    bpf::ProbeSelection selection;
    for (size_t i = first; i < rows.size(); ++i) {
      if (rows[i].loader != rows[first].loader) continue;
      seen[i] = true;
      if (selected(i)) {
        wanted.push_back(i);
        selection.names.push_back(rows[i].name);
      } else {
        self->slots_[i].error = "not selected";
      }
    }
    if (wanted.empty()) continue;
    std::unique_ptr<bpf::Probe> probe = rows[first].loader(selection);
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
                        bool per_cpu_wanted, bool every_cgroup_listed) {
  std::lock_guard<std::mutex> lock(collect_mu_);
  per_cpu_ns_.clear();
  bpf::CgroupPruner pruner(live_cgroup_ids, cgroup2_root_fd_, every_cgroup_listed);
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
