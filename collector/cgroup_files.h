// The cgroup files statlet reads, one typed reader per file: where it lives (hierarchy),
// its name, and how its content lands in CgroupStats. Which files a host needs depends
// on where each controller is mounted (v2, v1, hybrid): BuildReadPlan picks them once.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "collector/cgroup_hierarchies.h"
#include "snapshot/collect_parts.h"
#include "snapshot/snapshot.h"

namespace statlet {

struct CgroupFileReader {
  Hierarchy hierarchy;
  const char* name;
  // Parses `content` into `out`; false when (part of) the content was malformed.
  bool (*apply)(std::string_view content, CgroupStats* out);
  // hugetlb files come once per huge page size ("hugetlb.2MB.current"): these readers
  // fill the MemoryStats::Hugetlb entry of `page_size` instead (apply is null).
  bool (*apply_hugetlb)(std::string_view content, MemoryStats::Hugetlb* out) = nullptr;
  const char* page_size = nullptr;
  // The CollectParts bit a collection must hold for this file to be read; 0: always read.
  uint32_t part = 0;
  // The value changes only when this very file is written (a limit or period, never a
  // counter, nor a value another file also sets: v2 cpu.weight follows cpu.weight.nice), so
  // the collector may serve it from memory between inotify events (limit_watch.h).
  bool written_only = false;

  // Whether a collection of `parts` reads this file.
  bool ReadIn(CollectParts parts) const { return part == 0 || parts.Has(part); }
};

// Runs the reader's parser over `content` (either kind of reader).
bool ApplyReader(const CgroupFileReader& r, std::string_view content, CgroupStats* out);

// The groups of files a collection may leave out when nothing it serves needs them (the
// daemon sets them from metrics::ReadNeedsOf); every other file is always read.
struct FileSets {
  bool pressure = true;  // cpu.pressure, memory.pressure, io.pressure
  bool io = true;        // io.stat, blkio.throttle.*
  bool hugetlb = true;   // hugetlb.<size>.*
  bool pids = true;      // pids.current, pids.max, pids.events
};

// The files to read on this host, in read order. cgroup.procs / cgroup.threads are not in
// the plan: the collector reads them first (they decide what is reported). `page_sizes`
// are the host's huge page sizes as the hugetlb controller names them ("2MB", "1GB"), see
// HugePageSizes; their readers are built once per size and live as long as the process.
std::vector<const CgroupFileReader*> BuildReadPlan(const CgroupHierarchies& h,
                                                   const std::vector<std::string>& page_sizes = {},
                                                   const FileSets& sets = {});

// The keys of a flat-keyed file the reader takes (memory.stat's "anon", "file"...), in
// table order; empty for a file of one value or of another form. What a stand-in for the
// file (the eBPF walks) must render.
std::vector<std::string_view> KeysRead(const CgroupFileReader& r);

// The huge page sizes of this host from the directory names under `hugepages_dir`
// (/sys/kernel/mm/hugepages), smallest first; empty when the kernel has none.
std::vector<std::string> HugePageSizes(const std::string& hugepages_dir);

// Derived values, computed once every file is read: working set (usage − inactive_file,
// floored at 0, as the kubelet does), failcnt from memory.events on v2, shares/weight
// conversions, CPU usage totals from per-CPU values on v1.
void FinishCgroupStats(CgroupStats* s);

// v2 cpu.weight [1, 10000] ↔ v1 cpu.shares [2, 262144], the kubelet's conversion.
uint64_t CpuWeightToShares(uint64_t weight);
uint64_t CpuSharesToWeight(uint64_t shares);

}  // namespace statlet
