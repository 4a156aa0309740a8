// The cgroup files as the kernel shows them, rendered from the raw values the stats
// iterator (cgroup_stats_iter.bpf.c) read: the kernel's formatting rules (units, the
// user/system split of cpu.stat, memory.stat's sums) in one place, as pure functions.
// Only the keys statlet reads are written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "bpf/probe_abi.h"

namespace statlet::bpf {

// The files the stats iterator can stand in for.
enum class IterFile : int {
  kCpuStat,
  kMemoryCurrent,
  kMemoryPeak,
  kMemorySwapCurrent,
  kMemoryStat,
  kMemoryEvents,
  kMemoryEventsLocal,
  kPidsCurrent,
  kPidsEvents,
  kCount,
};
// The file's name in a cgroup directory ("cpu.stat").
const char* IterFileName(IterFile f);
// The entry parts a file needs (STATLET_PART_*).
uint32_t IterFilePart(IterFile f);

// Where each memory.stat item lives in memcg_vmstats (-1: not read), see ResolveMemstatSlots.
struct MemstatSlots {
  int32_t state[STATLET_MS_STATE_ITEMS];
  int32_t events[STATLET_ME_EVENT_ITEMS];
};

// Renders file `f` of `e` into out[0, cap); returns the length, or 0 when `e` lacks the
// parts the file needs or `cap` is too small. memory.stat leaves out the keys whose state
// items `slots` does not read (the kernel does not show them); null: every key.
size_t RenderIterFile(IterFile f, const statlet_cgroup_stats& e, uint64_t page_size, char* out, size_t cap,
                      const MemstatSlots* slots = nullptr);

// The v1 hierarchies' files the v1 iterator (cgroup_v1_iter.bpf.c) can stand in for.
enum class V1IterFile : int {
  kCpuStat,             // of the cpu hierarchy
  kCpuacctUsagePercpu,  // of the cpuacct hierarchy
  kCpuacctUsageUser,
  kCpuacctUsageSys,
  kMemoryUsage,  // the rest of the memory hierarchy
  kMemoryMaxUsage,
  kMemoryFailcnt,
  kKmemUsage,
  kOomControl,
  kCount,
};
const char* V1IterFileName(V1IterFile f);
uint32_t V1IterFilePart(V1IterFile f);  // STATLET_V1_*

// Renders v1 file `f` of `e` (with its cpuacct per-CPU times, `cpus` of them, for
// usage_percpu) into out[0, cap); returns the length, or 0 when `e` lacks the parts the
// file needs or `cap` is too small.
size_t RenderV1IterFile(V1IterFile f, const statlet_cgroup_v1_stats& e, const uint64_t* per_cpu, size_t cpus,
                        uint64_t page_size, char* out, size_t cap);

// cputime_adjust (kernel/sched/cputime.c): the user/system split cpu.stat shows, from the
// tick-sampled utime/stime scaled to the precise total, never below the previous split.
// Pure: the kernel also stores the result as the new previous split.
void AdjustCputime(uint64_t rtime, uint64_t utime, uint64_t stime, uint64_t prev_utime, uint64_t prev_stime,
                   uint64_t* user_out, uint64_t* system_out);

// The kernel's private index table from an enum to a compact array slot
// (mem_cgroup_events_index), copied raw: `entries` elements of 1 or 4 bytes, holding
// slot + 1 with 0 for "not kept" (up to 6.10), or the slot itself with the element's
// maximum for "not kept" (6.11 on). The interpretation under which the kept entries map
// one-to-one onto [0, slots) is returned as slot by enum value (-1: not kept); nullopt when
// none or more than one fits.
std::optional<std::vector<int32_t>> DecodeIndexTable(const uint8_t* raw, size_t raw_len, uint32_t entries,
                                                     uint32_t slots);

// The (struct, member) pairs of the kernel's BTF that decide whether memory.stat shows a
// key (snapshot/memory_stat.def STATE_IF), for the loader to look up.
std::vector<std::pair<const char*, const char*>> MemstatConditions();

// Whether the running kernel's BTF has member `member` of struct `type`.
using KernelHas = std::function<bool(const char* type, const char* member)>;

// Where each memory.stat item lives in memcg_vmstats, from what the first walk learnt;
// nullopt when this kernel's layout is not one the iterator reads (the file is read then).
// An item the kernel shows only under a condition (snapshot/memory_stat.def STATE_IF) that
// `kernel_has` denies is not read (-1); every other state item must exist.
std::optional<MemstatSlots> ResolveMemstatSlots(const statlet_memstat_setup& setup, const KernelHas& kernel_has,
                                                const char** why_not);

}  // namespace statlet::bpf
