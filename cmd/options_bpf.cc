// --bpf and --bpf.*: the eBPF probes (BpfOptions).
#include <algorithm>

#include "cmd/daemon_flags.h"

namespace statlet {
namespace {

StringRule ProbeName() {
  return [](const std::string& v) {
    const auto& known = BpfProbes::ProbeNames();
    if (std::find(known.begin(), known.end(), v) != known.end()) return Status::Ok();
    return InvalidArgument("unknown probe \"" + v + "\"");
  };
}

}  // namespace

void RegisterBpfFlags(FlagSet& flags, DaemonOptions* o) {
  BpfOptions& b = o->bpf;
  FlagGroup bpf = flags.Group("bpf");
  bpf.Enum("", &b.mode, {{"auto", BpfMode::kAuto}, {"on", BpfMode::kOn}, {"off", BpfMode::kOff}},
           "eBPF probes: auto (load what loads, skip the rest with one log line), on (fail unless all load), off.")
      .ConfigKey("mode");
  bpf.List("probes", &b.probes, ListForm::kRepeatedCommaSeparated,
           "Probes to load (cpu, runqlat, faults, oom, tcp, cgroup_stats); repeatable or comma-separated. Default: "
           "cpu,oom,tcp,cgroup_stats (runqlat and faults run on every context switch: name them to load them).",
           ProbeName())
      .Example("cpu,oom,tcp,cgroup_stats");
  bpf.Integer("max-cgroups", &b.max_cgroups, {1, 1 << 20},
              "Entries of each per-cgroup eBPF map (kernel memory is preallocated for them).");
}

}  // namespace statlet
