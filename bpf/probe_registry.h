// The probe registry: every eBPF probe statlet has, one row each (bpf/probe_registry.cc).
// Loading and probe states (BpfProbes), --bpf.probes and its help (cmd/options_bpf.cc),
// statlet_bpf_probe_up (one series per row) and the Sampler's roll-up (BpfSource::RollUps)
// all follow from it. bpf/README.md says how to add a probe.
#pragma once

#include <string_view>
#include <vector>

#include "bpf/probe.h"
#include "snapshot/bpf_roll_up.h"

namespace statlet::bpf {

struct ProbeInfo {
  std::string_view name;  // what --bpf.probes selects; the `probe` label of statlet_bpf_probe_up
  bool on_by_default = false;
  ProbeLoader loader = nullptr;     // rows naming the same loader share one program
  std::string_view help;            // one line of --help
  std::vector<BpfRollUp> rolls_up;  // the BpfCgroupStats members it fills
};

// Every probe, in the order statlet reports them.
const std::vector<ProbeInfo>& ProbeRegistry();

}  // namespace statlet::bpf
