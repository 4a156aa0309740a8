#include "cmd/startup_summary.h"

namespace statlet {
namespace {

std::string Join(const std::vector<std::string>& items) {
  std::string out;
  for (const std::string& i : items) out += (out.empty() ? "" : ", ") + i;
  return out;
}

std::string Probes(const StartupFacts& f) {
  if (f.bpf_mode == BpfMode::kOff) return "eBPF probes off (--bpf=off)";
  std::vector<std::string> up, failed;
  for (const BpfProbeStatus& p : f.probes) {
    if (p.up) up.push_back(p.probe);
    else if (p.error != "not selected" && p.error != "disabled") failed.push_back(p.probe + " (" + p.error + ")");
  }
  std::string out = "eBPF probes " + (up.empty() ? std::string("none up") : Join(up) + " up");
  if (!failed.empty()) out += ", not loaded: " + Join(failed);
  return out;
}

}  // namespace

std::string StartupSummary(const StartupFacts& f) {
  std::string s = "statlet " + f.version + " (revision " + f.revision + ") started: cgroup " + f.cgroup_mode + " at " +
                  f.cgroup_mount + " (" + std::to_string(f.cgroups) + " cgroups); runtime " + f.runtime + "; " +
                  Probes(f) + "; serving " + f.http;
  if (!f.health.empty()) s += ", probes " + f.health;
  s += f.cri.empty() ? ", no CRI socket" : ", CRI " + f.cri;
  s += "; image pulls " + f.pulls + "; OTLP " + (f.otlp.empty() ? std::string("off") : "to " + f.otlp);
  return s;
}

}  // namespace statlet
