// The daemon's one start-up line: what this statlet is, what it found on the host and where
// it serves, so that an operator reading the first lines of a log knows the rest.
#pragma once

#include <string>
#include <vector>

#include "bpf/bpf_probes.h"

namespace statlet {

struct StartupFacts {
  std::string version, revision;
  std::string cgroup_mode;  // "v2", "hybrid", "v1"
  std::string cgroup_mount;
  size_t cgroups = 0;   // reported by the first collection
  std::string runtime;  // e.g. "containerd 1.6.20 at unix:///run/…", "auto (none found yet)", "none"
  BpfMode bpf_mode = BpfMode::kAuto;
  std::vector<BpfProbeStatus> probes;  // every probe, up or down
  std::string http;                    // "http://127.0.0.1:10340/metrics"
  std::string health;                  // "http://127.0.0.1:10341" or ""
  std::string cri;                     // "unix:///run/statlet/cri.sock" or ""
  std::string pulls;                   // "on" or "off (why)"
  std::string otlp;                    // the endpoint or ""
};

// "statlet 0.1.0 (revision …) started: cgroup hybrid at /sys/fs/cgroup (31 cgroups); runtime …;
// eBPF probes cpu, oom, tcp, cgroup_stats up, runqlat failed (why); serving http://…,
// probes http://…, CRI unix://…; image pulls on; OTLP off". Probes not selected are left out
// (they are down by choice, not failed).
std::string StartupSummary(const StartupFacts& f);

}  // namespace statlet
