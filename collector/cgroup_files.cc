#include "collector/cgroup_files.h"

#include <dirent.h>

#include <algorithm>
#include <array>
#include <deque>
#include <mutex>
#include <type_traits>
#include <utility>

#include "collector/parse/cgroup_parsers.h"

namespace statlet {
namespace {

using parse::FlatKeyField;

// Files only the metric families carry (see CollectParts::kCgroupDetail).
constexpr uint32_t kDetail = CollectParts::kCgroupDetail;
// Values only a write of the file itself changes (CgroupFileReader::written_only).
constexpr bool kWritten = true;

// The keys of the files declared once (snapshot/*.def), as the v2 or the v1 parser's table:
// a version's "" entries left out, the declaration's order kept (the kernel's).
template <typename T>
struct DeclaredKey {
  using Owner = T;
  std::string_view v2, v1;
  Opt<uint64_t> T::*member;
  uint64_t v2_scale = 1;
};
template <const auto& kKeys, bool kV2>
constexpr auto KeyTable() {
  using Key = std::remove_cvref_t<decltype(kKeys[0])>;
  constexpr size_t n = [] {
    size_t n = 0;
    for (const Key& k : kKeys) n += !(kV2 ? k.v2 : k.v1).empty();
    return n;
  }();
  std::array<FlatKeyField<typename Key::Owner>, n> out{};
  size_t i = 0;
  for (const Key& k : kKeys) {
    const std::string_view key = kV2 ? k.v2 : k.v1;
    if (!key.empty()) out[i++] = {key, k.member, kV2 ? k.v2_scale : 1};
  }
  return out;
}

constexpr DeclaredKey<CpuStats> kCpuStatKeys[] = {
#define STATLET_CPU_STAT(field, v2_key, v2_scale, v1_key) {v2_key, v1_key, &CpuStats::field, v2_scale},
#include "snapshot/cpu_stat.def"
};
constexpr DeclaredKey<MemoryStats> kMemoryStatKeys[] = {
#define STATLET_MEMSTAT_KEY(field, v2_key, v1_key) {v2_key, v1_key, &MemoryStats::field},
#include "snapshot/memory_stat.def"
};
constexpr DeclaredKey<MemoryEvents> kMemoryEventsKeys[] = {
#define STATLET_MEMORY_EVENT(field, key, kernel_item) {key, key, &MemoryEvents::field},
#include "snapshot/memory_events.def"
};

// ------------------------------------------------------------------ cpu (v2)
constexpr auto kV2CpuStat = KeyTable<kCpuStatKeys, true>();
bool ApplyV2CpuStat(std::string_view c, CgroupStats* s) {
  return parse::ParseFlatKeyedInto(c, kV2CpuStat, &s->cpu) == 0;
}
// Hybrid hosts: the controller-less cgroup2 still keeps cpu.stat, whose user/system split is
// scaled to the scheduler's precise total (cpuacct.usage_user/sys are raw tick samples that
// also charge interrupt time to whoever was running). The total stays cpuacct's, whose
// per-CPU values it sums.
constexpr FlatKeyField<CpuStats> kHybridCpuStat[] = {kV2CpuStat[1], kV2CpuStat[2]};
static_assert(kHybridCpuStat[0].member == &CpuStats::user_ns && kHybridCpuStat[1].member == &CpuStats::system_ns);
bool ApplyHybridCpuStat(std::string_view c, CgroupStats* s) {
  return parse::ParseFlatKeyedInto(c, kHybridCpuStat, &s->cpu) == 0;
}
bool ApplyV2CpuMax(std::string_view c, CgroupStats* s) {
  return parse::ParseCpuMax(c, &s->cpu.quota_us, &s->cpu.period_us);
}
bool ApplyV2CpuWeight(std::string_view c, CgroupStats* s) {
  uint64_t v;
  if (!parse::ParseU64(c, &v)) return false;
  s->cpu.weight = v;
  return true;
}

// ------------------------------------------------------------------ cpu (v1)
constexpr auto kV1CpuStat = KeyTable<kCpuStatKeys, false>();
bool ApplyV1CpuStat(std::string_view c, CgroupStats* s) {
  return parse::ParseFlatKeyedInto(c, kV1CpuStat, &s->cpu) == 0;
}
bool ApplyV1Percpu(std::string_view c, CgroupStats* s) {
  s->cpu.per_cpu_ns.clear();
  return parse::ParseU64List(c, &s->cpu.per_cpu_ns);
}
bool ApplyU64(std::string_view c, Opt<uint64_t>* out) {
  uint64_t v;
  if (!parse::ParseU64(c, &v)) return false;
  *out = v;
  return true;
}
bool ApplyLimit(std::string_view c, Opt<uint64_t>* out) {
  uint64_t v;
  if (!parse::ParseLimit(c, &v)) return false;
  *out = v;
  return true;
}
bool ApplyV1Limit(std::string_view c, Opt<uint64_t>* out) {
  uint64_t v;
  if (!parse::ParseV1Limit(c, &v)) return false;
  *out = v;
  return true;
}
bool ApplyV1CpuUser(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->cpu.user_ns); }
bool ApplyV1CpuSys(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->cpu.system_ns); }
bool ApplyV1Quota(std::string_view c, CgroupStats* s) {
  uint64_t v;
  if (!parse::ParseV1Quota(c, &v)) return false;
  s->cpu.quota_us = v;
  return true;
}
bool ApplyV1Period(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->cpu.period_us); }
bool ApplyV1Shares(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->cpu.shares); }

// ------------------------------------------------------------------ memory (v2)
constexpr auto kV2MemoryStat = KeyTable<kMemoryStatKeys, true>();
bool ApplyV2MemoryStat(std::string_view c, CgroupStats* s) {
  return parse::ParseFlatKeyedInto(c, kV2MemoryStat, &s->memory) == 0;
}
constexpr auto kMemoryEvents = KeyTable<kMemoryEventsKeys, true>();
bool ApplyV2MemoryEvents(std::string_view c, CgroupStats* s) {
  return parse::ParseFlatKeyedInto(c, kMemoryEvents, &s->memory.events) == 0;
}
bool ApplyV2MemoryEventsLocal(std::string_view c, CgroupStats* s) {
  return parse::ParseFlatKeyedInto(c, kMemoryEvents, &s->memory.events_local) == 0;
}
bool ApplyV2MemCurrent(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->memory.usage_bytes); }
bool ApplyV2MemPeak(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->memory.max_usage_bytes); }
bool ApplyV2MemMin(std::string_view c, CgroupStats* s) { return ApplyLimit(c, &s->memory.min_bytes); }
bool ApplyV2MemLow(std::string_view c, CgroupStats* s) { return ApplyLimit(c, &s->memory.low_bytes); }
bool ApplyV2MemHigh(std::string_view c, CgroupStats* s) { return ApplyLimit(c, &s->memory.high_bytes); }
bool ApplyV2MemMax(std::string_view c, CgroupStats* s) { return ApplyLimit(c, &s->memory.max_bytes); }
bool ApplyV2SwapCurrent(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->memory.swap_bytes); }
bool ApplyV2SwapMax(std::string_view c, CgroupStats* s) { return ApplyLimit(c, &s->memory.swap_max_bytes); }

// ------------------------------------------------------------------ memory (v1)
constexpr auto kV1MemoryStat = KeyTable<kMemoryStatKeys, false>();
bool ApplyV1MemoryStat(std::string_view c, CgroupStats* s) {
  return parse::ParseFlatKeyedInto(c, kV1MemoryStat, &s->memory) == 0;
}
bool ApplyV1MemUsage(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->memory.usage_bytes); }
bool ApplyV1MemMaxUsage(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->memory.max_usage_bytes); }
bool ApplyV1Failcnt(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->memory.failcnt); }
bool ApplyV1KmemUsage(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->memory.kernel_bytes); }
bool ApplyV1MemLimit(std::string_view c, CgroupStats* s) { return ApplyV1Limit(c, &s->memory.max_bytes); }
bool ApplyV1SoftLimit(std::string_view c, CgroupStats* s) { return ApplyV1Limit(c, &s->memory.soft_limit_bytes); }
bool ApplyV1MemswLimit(std::string_view c, CgroupStats* s) { return ApplyV1Limit(c, &s->memory.swap_max_bytes); }
bool ApplyV1OomControl(std::string_view c, CgroupStats* s) {
  // "oom_kill_disable 0\nunder_oom 0\noom_kill N": only oom_kill is a counter.
  return parse::ForEachFlatKeyed(c, [&](std::string_view k, uint64_t v) {
           if (k == "oom_kill") s->memory.events.oom_kill = v;
         }) == 0;
}

// ------------------------------------------------------------------ pids
bool ApplyPidsCurrent(std::string_view c, CgroupStats* s) { return ApplyU64(c, &s->process.pids_current); }
bool ApplyPidsMax(std::string_view c, CgroupStats* s) { return ApplyLimit(c, &s->process.pids_max); }
bool ApplyPidsEvents(std::string_view c, CgroupStats* s) {
  return parse::ForEachFlatKeyed(c, [&](std::string_view k, uint64_t v) {
           if (k == "max") s->process.pids_events_max = v;
         }) == 0;
}

// ------------------------------------------------------------------ io
bool ApplyV2IoStat(std::string_view c, CgroupStats* s) {
  s->io.devices.clear();
  return parse::ParseIoStat(c, &s->io.devices);
}
bool ApplyV1BlkioBytes(std::string_view c, CgroupStats* s) { return parse::ParseBlkio(c, true, &s->io.devices); }
bool ApplyV1BlkioIos(std::string_view c, CgroupStats* s) { return parse::ParseBlkio(c, false, &s->io.devices); }

// ------------------------------------------------------------------ PSI (unified hierarchy)
bool ApplyCpuPressure(std::string_view c, CgroupStats* s) { return parse::ParsePsi(c, &s->cpu.psi); }
bool ApplyMemoryPressure(std::string_view c, CgroupStats* s) { return parse::ParsePsi(c, &s->memory.psi); }
bool ApplyIoPressure(std::string_view c, CgroupStats* s) { return parse::ParsePsi(c, &s->io.psi); }

// ------------------------------------------------------------------ hugetlb (per page size)
bool ApplyHugetlbUsage(std::string_view c, MemoryStats::Hugetlb* h) { return ApplyU64(c, &h->usage_bytes); }
bool ApplyHugetlbMaxUsage(std::string_view c, MemoryStats::Hugetlb* h) { return ApplyU64(c, &h->max_usage_bytes); }
bool ApplyHugetlbFailcnt(std::string_view c, MemoryStats::Hugetlb* h) { return ApplyU64(c, &h->failcnt); }
bool ApplyV1HugetlbLimit(std::string_view c, MemoryStats::Hugetlb* h) { return ApplyV1Limit(c, &h->limit_bytes); }
bool ApplyV2HugetlbMax(std::string_view c, MemoryStats::Hugetlb* h) { return ApplyLimit(c, &h->limit_bytes); }
bool ApplyV2HugetlbEvents(std::string_view c, MemoryStats::Hugetlb* h) {
  // "max N": allocations refused at the limit, v1's failcnt.
  return parse::ForEachFlatKeyed(c, [&](std::string_view k, uint64_t v) {
           if (k == "max") h->failcnt = v;
         }) == 0;
}

struct HugetlbFile {
  const char* suffix;  // after "hugetlb.<size>."
  bool (*apply)(std::string_view, MemoryStats::Hugetlb*);
};
constexpr HugetlbFile kV2HugetlbFiles[] = {
    {"current", ApplyHugetlbUsage}, {"max", ApplyV2HugetlbMax}, {"events", ApplyV2HugetlbEvents}};
constexpr HugetlbFile kV1HugetlbFiles[] = {{"usage_in_bytes", ApplyHugetlbUsage},
                                           {"max_usage_in_bytes", ApplyHugetlbMaxUsage},
                                           {"limit_in_bytes", ApplyV1HugetlbLimit},
                                           {"failcnt", ApplyHugetlbFailcnt}};

// Readers for file names known only at run time, built once per (hierarchy, name) and kept
// for the life of the process so that plans can point at them like at the static tables.
const CgroupFileReader* InternHugetlbReader(Hierarchy h, const std::string& page_size, const HugetlbFile& f) {
  struct Entry {
    std::string name, page_size;
    CgroupFileReader reader;
  };
  static std::mutex mu;
  static std::deque<Entry>* entries = new std::deque<Entry>();
  std::string name = "hugetlb." + page_size + "." + f.suffix;
  std::lock_guard<std::mutex> lock(mu);
  for (const Entry& e : *entries) {
    if (e.reader.hierarchy == h && e.name == name) return &e.reader;
  }
  Entry& e = entries->emplace_back();
  e.name = std::move(name);
  e.page_size = page_size;
  e.reader = {h, e.name.c_str(), nullptr, f.apply, e.page_size.c_str(), kDetail};
  return &e.reader;
}

MemoryStats::Hugetlb* HugetlbEntry(CgroupStats* s, std::string_view page_size) {
  for (auto& h : s->memory.hugetlb) {
    if (h.page_size == page_size) return &h;
  }
  auto& h = s->memory.hugetlb.emplace_back();
  h.page_size = std::string(page_size);
  return &h;
}

// clang-format off
const CgroupFileReader kV2CpuFiles[] = {
    {kUnified, "cpu.stat", ApplyV2CpuStat},
    {kUnified, "cpu.max", ApplyV2CpuMax, nullptr, nullptr, 0, kWritten},
    {kUnified, "cpu.weight", ApplyV2CpuWeight},
};
const CgroupFileReader kV1CpuFiles[] = {
    {kV1Cpuacct, "cpuacct.usage_percpu", ApplyV1Percpu},
    {kV1Cpuacct, "cpuacct.usage_user", ApplyV1CpuUser},
    {kV1Cpuacct, "cpuacct.usage_sys", ApplyV1CpuSys},
    {kV1Cpu, "cpu.stat", ApplyV1CpuStat},
    {kV1Cpu, "cpu.cfs_quota_us", ApplyV1Quota, nullptr, nullptr, 0, kWritten},
    {kV1Cpu, "cpu.cfs_period_us", ApplyV1Period, nullptr, nullptr, 0, kWritten},
    {kV1Cpu, "cpu.shares", ApplyV1Shares, nullptr, nullptr, 0, kWritten},
};
const CgroupFileReader kV2MemoryFiles[] = {
    {kUnified, "memory.current", ApplyV2MemCurrent},
    {kUnified, "memory.peak", ApplyV2MemPeak},
    {kUnified, "memory.stat", ApplyV2MemoryStat},
    {kUnified, "memory.events", ApplyV2MemoryEvents},
    {kUnified, "memory.events.local", ApplyV2MemoryEventsLocal, nullptr, nullptr, kDetail},
    {kUnified, "memory.min", ApplyV2MemMin, nullptr, nullptr, 0, kWritten},
    {kUnified, "memory.low", ApplyV2MemLow, nullptr, nullptr, 0, kWritten},
    {kUnified, "memory.high", ApplyV2MemHigh, nullptr, nullptr, 0, kWritten},
    {kUnified, "memory.max", ApplyV2MemMax, nullptr, nullptr, 0, kWritten},
    {kUnified, "memory.swap.current", ApplyV2SwapCurrent},
    {kUnified, "memory.swap.max", ApplyV2SwapMax, nullptr, nullptr, 0, kWritten},
};
const CgroupFileReader kV1MemoryFiles[] = {
    {kV1Memory, "memory.usage_in_bytes", ApplyV1MemUsage},
    {kV1Memory, "memory.max_usage_in_bytes", ApplyV1MemMaxUsage},
    {kV1Memory, "memory.stat", ApplyV1MemoryStat},
    {kV1Memory, "memory.failcnt", ApplyV1Failcnt},
    {kV1Memory, "memory.kmem.usage_in_bytes", ApplyV1KmemUsage},
    {kV1Memory, "memory.limit_in_bytes", ApplyV1MemLimit, nullptr, nullptr, 0, kWritten},
    {kV1Memory, "memory.soft_limit_in_bytes", ApplyV1SoftLimit, nullptr, nullptr, kDetail, kWritten},
    {kV1Memory, "memory.memsw.limit_in_bytes", ApplyV1MemswLimit, nullptr, nullptr, 0, kWritten},
    {kV1Memory, "memory.oom_control", ApplyV1OomControl},
};
const CgroupFileReader kV2PidsFiles[] = {
    {kUnified, "pids.current", ApplyPidsCurrent, nullptr, nullptr, kDetail},
    {kUnified, "pids.max", ApplyPidsMax, nullptr, nullptr, 0, kWritten},
    {kUnified, "pids.events", ApplyPidsEvents, nullptr, nullptr, kDetail},
};
const CgroupFileReader kV1PidsFiles[] = {
    {kV1Pids, "pids.current", ApplyPidsCurrent, nullptr, nullptr, kDetail},
    {kV1Pids, "pids.max", ApplyPidsMax, nullptr, nullptr, 0, kWritten},
    {kV1Pids, "pids.events", ApplyPidsEvents, nullptr, nullptr, kDetail},
};
const CgroupFileReader kV2IoFiles[] = {
    {kUnified, "io.stat", ApplyV2IoStat},
};
const CgroupFileReader kV1IoFiles[] = {
    {kV1Blkio, "blkio.throttle.io_service_bytes_recursive", ApplyV1BlkioBytes},
    {kV1Blkio, "blkio.throttle.io_serviced_recursive", ApplyV1BlkioIos},
};
const CgroupFileReader kPsiFiles[] = {
    {kUnified, "cpu.pressure", ApplyCpuPressure},
    {kUnified, "memory.pressure", ApplyMemoryPressure},
    {kUnified, "io.pressure", ApplyIoPressure},
};
// clang-format on

template <size_t N>
void Append(std::vector<const CgroupFileReader*>* out, const CgroupFileReader (&t)[N]) {
  for (const auto& r : t) out->push_back(&r);
}

}  // namespace

bool ApplyReader(const CgroupFileReader& r, std::string_view content, CgroupStats* out) {
  if (r.apply_hugetlb != nullptr) return r.apply_hugetlb(content, HugetlbEntry(out, r.page_size));
  return r.apply(content, out);
}

std::vector<std::string_view> KeysRead(const CgroupFileReader& r) {
  auto keys = [](const auto& table) {
    std::vector<std::string_view> out;
    for (const auto& f : table) out.push_back(f.key);
    return out;
  };
  if (r.apply == ApplyV2CpuStat) return keys(kV2CpuStat);
  if (r.apply == ApplyHybridCpuStat) return keys(kHybridCpuStat);
  if (r.apply == ApplyV1CpuStat) return keys(kV1CpuStat);
  if (r.apply == ApplyV2MemoryStat) return keys(kV2MemoryStat);
  if (r.apply == ApplyV1MemoryStat) return keys(kV1MemoryStat);
  if (r.apply == ApplyV2MemoryEvents || r.apply == ApplyV2MemoryEventsLocal) return keys(kMemoryEvents);
  if (r.apply == ApplyV1OomControl) return {"oom_kill"};
  if (r.apply == ApplyPidsEvents || r.apply_hugetlb == ApplyV2HugetlbEvents) return {"max"};
  return {};
}

std::vector<std::string> HugePageSizes(const std::string& hugepages_dir) {
  std::vector<std::pair<uint64_t, std::string>> sizes;
  if (DIR* d = ::opendir(hugepages_dir.c_str())) {
    while (struct dirent* e = ::readdir(d)) {
      std::string name;
      if (!parse::ParseHugepagesDirName(e->d_name, &name)) continue;
      uint64_t kb = 0;
      parse::ParseU64(std::string_view(e->d_name).substr(10, std::string_view(e->d_name).size() - 12), &kb);
      sizes.emplace_back(kb, std::move(name));
    }
    ::closedir(d);
  }
  std::sort(sizes.begin(), sizes.end());
  std::vector<std::string> out;
  for (auto& [kb, name] : sizes) out.push_back(std::move(name));
  return out;
}

std::vector<const CgroupFileReader*> BuildReadPlan(const CgroupHierarchies& h,
                                                   const std::vector<std::string>& page_sizes, const FileSets& sets) {
  std::vector<const CgroupFileReader*> plan;
  if (h.v2_cpu) Append(&plan, kV2CpuFiles);
  else if (h.has(kV1Cpuacct) || h.has(kV1Cpu)) {
    static const CgroupFileReader kHybridUserSystem = {kUnified, "cpu.stat", ApplyHybridCpuStat};
    for (const auto& r : kV1CpuFiles) {
      if (!h.has(r.hierarchy)) continue;
      bool split = r.apply == ApplyV1CpuUser || r.apply == ApplyV1CpuSys;
      if (split && h.has(kUnified)) continue;
      plan.push_back(&r);
    }
    if (h.has(kUnified)) plan.push_back(&kHybridUserSystem);
  }
  if (h.v2_memory) Append(&plan, kV2MemoryFiles);
  else if (h.has(kV1Memory)) Append(&plan, kV1MemoryFiles);
  if (sets.pids) {
    if (h.v2_pids) Append(&plan, kV2PidsFiles);
    else if (h.has(kV1Pids)) Append(&plan, kV1PidsFiles);
  }
  if (sets.io) {
    if (h.v2_io) Append(&plan, kV2IoFiles);
    else if (h.has(kV1Blkio)) Append(&plan, kV1IoFiles);
  }
  if (sets.pressure && h.has(kUnified)) Append(&plan, kPsiFiles);
  if (Hierarchy hh = h.hugetlb(); sets.hugetlb && hh != kNumHierarchies) {
    for (const std::string& size : page_sizes) {
      if (hh == kUnified) {
        for (const auto& f : kV2HugetlbFiles) plan.push_back(InternHugetlbReader(hh, size, f));
      } else {
        for (const auto& f : kV1HugetlbFiles) plan.push_back(InternHugetlbReader(hh, size, f));
      }
    }
  }
  return plan;
}

uint64_t CpuWeightToShares(uint64_t weight) {
  if (weight == 0) return 0;
  return 2 + ((weight - 1) * 262142) / 9999;
}
uint64_t CpuSharesToWeight(uint64_t shares) {
  if (shares < 2) shares = 2;
  if (shares > 262144) shares = 262144;
  return 1 + ((shares - 2) * 9999) / 262142;
}

void FinishCgroupStats(CgroupStats* s) {
  CpuStats& cpu = s->cpu;
  if (!cpu.usage_ns && !cpu.per_cpu_ns.empty()) {
    uint64_t sum = 0;
    for (uint64_t v : cpu.per_cpu_ns) sum += v;
    cpu.usage_ns = sum;
  }
  if (cpu.weight && !cpu.shares) cpu.shares = CpuWeightToShares(*cpu.weight);
  if (cpu.shares && !cpu.weight) cpu.weight = CpuSharesToWeight(*cpu.shares);

  MemoryStats& m = s->memory;
  if (m.usage_bytes) {
    uint64_t inactive = m.inactive_file.value_or(0);
    m.working_set_bytes = *m.usage_bytes > inactive ? *m.usage_bytes - inactive : 0;
  }
  if (!m.failcnt && m.events.max) m.failcnt = m.events.max;
  // v1 only knows oom kills; v2 reports both oom and oom_kill
  // (the remaining fields of memory.events stay absent on v1).
}

}  // namespace statlet
