// --bpf and --bpf.*: the eBPF probes (BpfOptions). The probes, their defaults and their help
// come from the probe registry (bpf/probe_registry.cc).
#include <algorithm>

#include "bpf/probe_registry.h"
#include "cmd/daemon_flags.h"

namespace statlet {
namespace {

std::string DefaultProbes() {
  std::string out;
  for (const bpf::ProbeInfo& p : bpf::ProbeRegistry()) {
    if (p.on_by_default) out += (out.empty() ? "" : ",") + std::string(p.name);
  }
  return out;
}

// The flag's help: the default set, then one line per probe.
std::string ProbesHelp() {
  size_t width = 0;
  for (const bpf::ProbeInfo& p : bpf::ProbeRegistry()) width = std::max(width, p.name.size());
  std::string help = "Probes to load; repeatable or comma-separated. Default: " + DefaultProbes() +
                     " (the others load only when named):";
  for (const bpf::ProbeInfo& p : bpf::ProbeRegistry()) {
    help += "\n        " + std::string(p.name) + std::string(width + 2 - p.name.size(), ' ') + std::string(p.help);
  }
  return help;
}

StringRule ProbeName() {
  return [](const std::string& v) {
    const auto& rows = bpf::ProbeRegistry();
    if (std::any_of(rows.begin(), rows.end(), [&](const bpf::ProbeInfo& p) { return p.name == v; })) {
      return Status::Ok();
    }
    std::string names;
    for (size_t i = 0; i < rows.size(); ++i) {
      names += (i == 0 ? "" : i + 1 == rows.size() ? " or " : ", ") + std::string(rows[i].name);
    }
    return ExpectedValue("a probe: " + names, v);
  };
}

}  // namespace

void RegisterBpfFlags(FlagSet& flags, DaemonOptions* o) {
  BpfOptions& b = o->bpf;
  FlagGroup bpf = flags.Group("bpf");
  bpf.Enum("", &b.mode, {{"auto", BpfMode::kAuto}, {"on", BpfMode::kOn}, {"off", BpfMode::kOff}},
           "eBPF probes: auto (load what loads, skip the rest with one log line), on (fail unless all load), off.")
      .ConfigKey("mode");
  bpf.List("probes", &b.probes, ListForm::kRepeatedCommaSeparated, ProbesHelp(), ProbeName()).Example(DefaultProbes());
  bpf.Integer("max-cgroups", &b.max_cgroups, {1, 1 << 20},
              "Entries of each per-cgroup eBPF map (kernel memory is preallocated for them).");
}

}  // namespace statlet
