// The kernel's own run-time statistics of statlet's BPF programs (BPF_STATS_RUN_TIME): how
// many times each ran and the nanoseconds it spent, for the benches that print what each
// program costs per event.
#pragma once

#include <bpf/bpf.h>

#include <cstdint>
#include <vector>

namespace statlet::bench {

// The highest BPF program id loaded now: programs loaded after this call have larger ids.
uint32_t HighestProgramId();

struct ProgramStats {
  uint32_t id = 0;
  bpf_prog_info info{};  // name, run_cnt, run_time_ns
};

// Every program named "statlet_*" with an id above `after`, as the kernel counts it now.
std::vector<ProgramStats> StatletProgramsAfter(uint32_t after);

}  // namespace statlet::bench
