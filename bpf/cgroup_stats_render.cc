#include "bpf/cgroup_stats_render.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstddef>
#include <cstring>
#include <iterator>

namespace statlet::bpf {
namespace {

// statlet_read_cfs (cgroup_iter.bpf.h) fills the five CFS counters as one array.
static_assert(offsetof(statlet_cgroup_stats, burst_ns) - offsetof(statlet_cgroup_stats, nr_periods) == 4 * 8);
static_assert(offsetof(statlet_cgroup_v1_stats, burst_ns) - offsetof(statlet_cgroup_v1_stats, nr_periods) == 4 * 8);

// Appends "key value\n" lines to a fixed buffer; any overflow makes the result empty.
class Lines {
 public:
  Lines(char* out, size_t cap) : out_(out), cap_(cap) {}
  void Put(std::string_view key, uint64_t v) {
    if (key.size() + 22 > cap_ - len_) {
      overflow_ = true;
      return;
    }
    std::memcpy(out_ + len_, key.data(), key.size());
    len_ += key.size();
    out_[len_++] = ' ';
    len_ = static_cast<size_t>(std::to_chars(out_ + len_, out_ + cap_, v).ptr - out_);
    out_[len_++] = '\n';
  }
  // A single-value file: the number and a newline.
  void Value(uint64_t v) {
    if (cap_ < 22) {
      overflow_ = true;
      return;
    }
    len_ = static_cast<size_t>(std::to_chars(out_, out_ + cap_, v).ptr - out_);
    out_[len_++] = '\n';
  }
  // A list file (cpuacct.usage_percpu): each value followed by a space, then a newline.
  void List(const uint64_t* v, size_t n) {
    for (size_t i = 0; i < n && !overflow_; i++) {
      if (cap_ - len_ < 22) {
        overflow_ = true;
        return;
      }
      len_ = static_cast<size_t>(std::to_chars(out_ + len_, out_ + cap_, v[i]).ptr - out_);
      out_[len_++] = ' ';
    }
    if (overflow_ || len_ == cap_) {
      overflow_ = true;
      return;
    }
    out_[len_++] = '\n';
  }
  size_t length() const { return overflow_ ? 0 : len_; }

 private:
  char* out_;
  size_t cap_;
  size_t len_ = 0;
  bool overflow_ = false;
};

// memory.events in the kernel's order (snapshot/memory_events.def).
struct MemoryEventKey {
  const char* key;
  int slot;
};
constexpr MemoryEventKey kMemoryEventKeys[] = {
#define STATLET_MEMORY_EVENT(field, key, kernel_item) {key, STATLET_MEV_##field},
#include "snapshot/memory_events.def"
};

// memory.stat (snapshot/memory_stat.def): each v2 key from its kernel slots, in the
// kernel's order; a v1-only key is not rendered (the walk reads v2 kernels).
enum class Kind : uint8_t { kState, kEvent };
#define STATLET_KIND_STATE Kind::kState
#define STATLET_KIND_EVENT Kind::kEvent
struct MemstatKey {
  const char* key;
  Kind kind;
  std::array<int8_t, 4> slots;  // summed
  uint8_t parts;
};
template <typename... S>
constexpr MemstatKey Key(const char* key, Kind kind, S... slots) {
  static_assert(sizeof...(S) >= 1 && sizeof...(S) <= 4);
  return {key, kind, {static_cast<int8_t>(slots)...}, static_cast<uint8_t>(sizeof...(S))};
}
constexpr MemstatKey kMemstatKeys[] = {
#define STATLET_MEMSTAT_STATE(field, v2_key, v1_key, kernel_enum, kernel_item, unit) \
  Key(v2_key, Kind::kState, STATLET_MS_##field),
#define STATLET_MEMSTAT_EVENT(field, v2_key, v1_key, kernel_item) Key(v2_key, Kind::kEvent, STATLET_ME_##field),
#define STATLET_MEMSTAT_SUM(field, v2_key, v1_key, kind, ...) Key(v2_key, STATLET_KIND_##kind, __VA_ARGS__),
#include "snapshot/memory_stat.def"
};
#undef STATLET_KIND_STATE
#undef STATLET_KIND_EVENT

// Whether each state slot counts pages (else bytes, or a count printed as it is), in the
// order of enum statlet_memstat_state.
#define STATLET_IN_PAGES_PAGES true
#define STATLET_IN_PAGES_BYTES false
constexpr bool kStateInPages[] = {
#define STATLET_MEMSTAT_STATE(field, v2_key, v1_key, kernel_enum, kernel_item, unit) STATLET_IN_PAGES_##unit,
#define STATLET_MEMSTAT_STATE_PART(name, kernel_enum, kernel_item, unit) STATLET_IN_PAGES_##unit,
#include "snapshot/memory_stat.def"
};
#undef STATLET_IN_PAGES_PAGES
#undef STATLET_IN_PAGES_BYTES
static_assert(std::size(kStateInPages) == STATLET_MS_STATE_ITEMS);

// The state slots the kernel shows only under a condition its BTF tells (STATE_IF lines);
// the last row only ends the list.
struct StateGate {
  int slot;
  const char* btf_struct;
  const char* btf_member;
};
constexpr StateGate kStateGates[] = {
#define STATLET_MEMSTAT_STATE_IF(field, v2_key, v1_key, kernel_enum, kernel_item, unit, btf_struct, btf_member) \
  {STATLET_MS_##field, #btf_struct, #btf_member},
#include "snapshot/memory_stat.def"
    {-1, "", ""},
};

// memcg_page_state: a negative sum (per-CPU deltas not yet folded in) reads as 0.
uint64_t StateValue(const statlet_cgroup_stats& e, int item, uint64_t page_size) {
  const int64_t raw = e.memstat_state[item];
  const uint64_t v = raw < 0 ? 0 : static_cast<uint64_t>(raw);
  return kStateInPages[item] ? v * page_size : v;
}

void RenderMemoryStat(const statlet_cgroup_stats& e, uint64_t page_size, const MemstatSlots* slots, Lines* out) {
  for (const MemstatKey& k : kMemstatKeys) {
    uint64_t v = 0;
    bool shown = true;
    for (uint8_t i = 0; i < k.parts; i++) {
      if (k.kind == Kind::kEvent) {
        v += e.memstat_events[k.slots[i]];  // an event the kernel lacks reads 0, as there
        continue;
      }
      // A state item this kernel does not show (slot -1) leaves its key out.
      if (slots != nullptr && slots->state[k.slots[i]] < 0) shown = false;
      v += StateValue(e, k.slots[i], page_size);
    }
    if (shown) out->Put(k.key, v);
  }
}

// cpu.stat's values as CpuStats holds them (ns, counts), field by field
// (snapshot/cpu_stat.def); each walk fills the ones its kernel values give.
struct CpuStatValues {
#define STATLET_CPU_STAT(field, v2_key, v2_scale, v1_key) std::optional<uint64_t> field;
#include "snapshot/cpu_stat.def"
};
// Writes the known values under the keys of one version (v2: scaled to the file's unit).
void PutCpuStat(const CpuStatValues& v, bool v2, Lines* out) {
  auto put = [&](const std::optional<uint64_t>& x, std::string_view key, uint64_t scale) {
    if (x && !key.empty()) out->Put(key, *x / scale);
  };
#define STATLET_CPU_STAT(field, v2_key, v2_scale, v1_key) put(v.field, v2 ? v2_key : v1_key, v2 ? v2_scale : 1);
#include "snapshot/cpu_stat.def"
}

}  // namespace

const char* IterFileName(IterFile f) {
  switch (f) {
    case IterFile::kCpuStat: return "cpu.stat";
    case IterFile::kMemoryCurrent: return "memory.current";
    case IterFile::kMemoryPeak: return "memory.peak";
    case IterFile::kMemorySwapCurrent: return "memory.swap.current";
    case IterFile::kMemoryStat: return "memory.stat";
    case IterFile::kMemoryEvents: return "memory.events";
    case IterFile::kMemoryEventsLocal: return "memory.events.local";
    case IterFile::kPidsCurrent: return "pids.current";
    case IterFile::kPidsEvents: return "pids.events";
    case IterFile::kCount: break;
  }
  return "";
}

uint32_t IterFilePart(IterFile f) {
  switch (f) {
    case IterFile::kCpuStat: return STATLET_PART_CPU;
    case IterFile::kMemoryStat: return STATLET_PART_MEMSTAT;
    case IterFile::kPidsCurrent: return STATLET_PART_PIDS;
    case IterFile::kPidsEvents: return STATLET_PART_PIDS_EVENTS;
    case IterFile::kCount: return ~0u;
    default: return STATLET_PART_MEMORY;
  }
}

void AdjustCputime(uint64_t rtime, uint64_t utime, uint64_t stime, uint64_t prev_utime, uint64_t prev_stime,
                   uint64_t* user_out, uint64_t* system_out) {
  *user_out = prev_utime;
  *system_out = prev_stime;
  if (prev_stime + prev_utime >= rtime) return;  // nothing new since the last split
  if (stime == 0) {
    utime = rtime;
  } else if (utime == 0) {
    stime = rtime;
  } else {
    stime = static_cast<uint64_t>(static_cast<unsigned __int128>(stime) * rtime / (stime + utime));
    if (stime > rtime) stime = rtime;
  }
  if (stime < prev_stime) stime = prev_stime;
  utime = rtime - stime;
  if (utime < prev_utime) {
    utime = prev_utime;
    stime = rtime - utime;
  }
  *user_out = utime;
  *system_out = stime;
}

size_t RenderIterFile(IterFile f, const statlet_cgroup_stats& e, uint64_t page_size, char* out, size_t cap,
                      const MemstatSlots* slots) {
  if ((e.parts & IterFilePart(f)) != IterFilePart(f)) return 0;
  Lines l(out, cap);
  switch (f) {
    case IterFile::kCpuStat: {
      CpuStatValues v;
      uint64_t user = 0, system = 0;
      AdjustCputime(e.sum_exec_ns, e.utime_ns, e.stime_ns, e.prev_utime_ns, e.prev_stime_ns, &user, &system);
      v.usage_ns = e.sum_exec_ns;
      v.user_ns = user;
      v.system_ns = system;
      if (e.parts & STATLET_PART_CFS) {
        v.nr_periods = e.nr_periods;
        v.nr_throttled = e.nr_throttled;
        v.throttled_ns = e.throttled_ns;
        v.nr_bursts = e.nr_bursts;
        v.burst_ns = e.burst_ns;
      }
      PutCpuStat(v, true, &l);
      break;
    }
    case IterFile::kMemoryCurrent: l.Value(e.memory_pages * page_size); break;
    case IterFile::kMemoryPeak: l.Value(e.memory_peak_pages * page_size); break;
    case IterFile::kMemorySwapCurrent: l.Value(e.swap_pages * page_size); break;
    case IterFile::kMemoryStat: RenderMemoryStat(e, page_size, slots, &l); break;
    case IterFile::kMemoryEvents:
    case IterFile::kMemoryEventsLocal: {
      const __u64* v = f == IterFile::kMemoryEvents ? e.memory_events : e.memory_events_local;
      for (const MemoryEventKey& k : kMemoryEventKeys) l.Put(k.key, v[k.slot]);
      break;
    }
    case IterFile::kPidsCurrent: l.Value(e.pids_current); break;
    case IterFile::kPidsEvents: l.Put("max", e.pids_events_max); break;
    case IterFile::kCount: return 0;
  }
  return l.length();
}

std::optional<std::vector<int32_t>> DecodeIndexTable(const uint8_t* raw, size_t raw_len, uint32_t entries,
                                                     uint32_t slots) {
  std::optional<std::vector<int32_t>> found;
  for (size_t width : {size_t{4}, size_t{1}}) {
    if (entries == 0 || entries * width > raw_len) continue;
    const uint64_t none = width == 4 ? 0xffffffffu : 0xffu;
    for (bool plus_one : {true, false}) {
      std::vector<int32_t> slot_of(entries, -1);
      std::vector<bool> taken(slots, false);
      size_t kept = 0;
      bool fits = true;
      for (uint32_t i = 0; i < entries && fits; i++) {
        uint32_t v = 0;
        if (width == 4) std::memcpy(&v, raw + i * 4, 4);
        else v = raw[i];
        if (plus_one ? v == 0 : v == none) continue;  // not kept
        const uint64_t slot = plus_one ? v - 1ull : v;
        if (slot >= slots || taken[slot]) {
          fits = false;
          break;
        }
        taken[slot] = true;
        slot_of[i] = static_cast<int32_t>(slot);
        kept++;
      }
      if (!fits || kept != slots) continue;
      if (found) return std::nullopt;  // ambiguous
      found = std::move(slot_of);
    }
  }
  return found;
}

std::vector<std::pair<const char*, const char*>> MemstatConditions() {
  std::vector<std::pair<const char*, const char*>> out;
  for (const StateGate& g : kStateGates) {
    if (g.slot >= 0) out.emplace_back(g.btf_struct, g.btf_member);
  }
  return out;
}

std::optional<MemstatSlots> ResolveMemstatSlots(const statlet_memstat_setup& setup, const KernelHas& kernel_has,
                                                const char** why_not) {
  MemstatSlots out;
  bool shown[STATLET_MS_STATE_ITEMS];
  std::fill(std::begin(shown), std::end(shown), true);
  for (const StateGate& g : kStateGates) {
    if (g.slot >= 0) shown[g.slot] = kernel_has(g.btf_struct, g.btf_member);
  }
  if (!setup.done || setup.state_len == 0) {
    *why_not = "the kernel's memcg statistics layout is unknown";
    return std::nullopt;
  }
  // Indexed by the stat enums (MEMCG_NR_STAT entries) up to 6.10; later kernels keep a
  // private compact index that the iterator does not read.
  if (setup.state_len != setup.nr_stat_items) {
    *why_not = "memcg statistics are compactly indexed on this kernel (6.11+)";
    return std::nullopt;
  }
  for (int i = 0; i < STATLET_MS_STATE_ITEMS; i++) {
    const int32_t item = setup.state_enum[i];
    if (!shown[i]) {
      out.state[i] = -1;  // not in this kernel's memory.stat: not read, not rendered
      continue;
    }
    if (item < 0 || static_cast<uint32_t>(item) >= setup.state_len) {
      *why_not = "a memory.stat item is missing from this kernel";
      return std::nullopt;
    }
    out.state[i] = item;
  }
  std::optional<std::vector<int32_t>> event_slot;
  if (setup.events_len == setup.nr_event_items) {
    event_slot.emplace(setup.nr_event_items);
    for (uint32_t i = 0; i < setup.nr_event_items; i++) (*event_slot)[i] = static_cast<int32_t>(i);
  } else if (setup.events_table_ok) {
    event_slot =
        DecodeIndexTable(setup.events_table, sizeof(setup.events_table), setup.nr_event_items, setup.events_len);
    if (!event_slot) {
      *why_not = "the kernel's memcg event index (mem_cgroup_events_index) did not validate";
      return std::nullopt;
    }
  } else {
    *why_not =
        "memcg events are compactly indexed and mem_cgroup_events_index is not in kallsyms (CONFIG_KALLSYMS_ALL)";
    return std::nullopt;
  }
  for (int i = 0; i < STATLET_ME_EVENT_ITEMS; i++) {
    const int32_t item = setup.event_enum[i];
    // An event this kernel does not have (or does not keep per memcg) reads 0, as there.
    out.events[i] = item >= 0 && static_cast<uint32_t>(item) < event_slot->size() ? (*event_slot)[item] : -1;
  }
  if (out.events[STATLET_ME_pgfault] < 0 || out.events[STATLET_ME_pgmajfault] < 0) {
    *why_not = "pgfault is not a memcg event on this kernel";
    return std::nullopt;
  }
  return out;
}

const char* V1IterFileName(V1IterFile f) {
  switch (f) {
    case V1IterFile::kCpuStat: return "cpu.stat";
    case V1IterFile::kCpuacctUsagePercpu: return "cpuacct.usage_percpu";
    case V1IterFile::kCpuacctUsageUser: return "cpuacct.usage_user";
    case V1IterFile::kCpuacctUsageSys: return "cpuacct.usage_sys";
    case V1IterFile::kMemoryUsage: return "memory.usage_in_bytes";
    case V1IterFile::kMemoryMaxUsage: return "memory.max_usage_in_bytes";
    case V1IterFile::kMemoryFailcnt: return "memory.failcnt";
    case V1IterFile::kKmemUsage: return "memory.kmem.usage_in_bytes";
    case V1IterFile::kOomControl: return "memory.oom_control";
    case V1IterFile::kCount: break;
  }
  return "";
}

uint32_t V1IterFilePart(V1IterFile f) {
  switch (f) {
    case V1IterFile::kCpuStat: return STATLET_V1_CFS;
    case V1IterFile::kCpuacctUsagePercpu: return STATLET_V1_CPUACCT;
    case V1IterFile::kCpuacctUsageUser:
    case V1IterFile::kCpuacctUsageSys: return STATLET_V1_CPUACCT_TIMES;
    case V1IterFile::kKmemUsage: return STATLET_V1_KMEM;
    case V1IterFile::kOomControl: return STATLET_V1_OOM_CONTROL;
    case V1IterFile::kCount: return ~0u;
    default: return STATLET_V1_MEMORY;
  }
}

size_t RenderV1IterFile(V1IterFile f, const statlet_cgroup_v1_stats& e, const uint64_t* per_cpu, size_t cpus,
                        uint64_t page_size, char* out, size_t cap) {
  if ((e.parts & V1IterFilePart(f)) != V1IterFilePart(f)) return 0;
  Lines l(out, cap);
  switch (f) {
    case V1IterFile::kCpuStat: {  // cpu_cfs_stat_show (its wait_sum, with schedstats on, is not read)
      CpuStatValues v;
      v.nr_periods = e.nr_periods;
      v.nr_throttled = e.nr_throttled;
      v.throttled_ns = e.throttled_ns;
      v.nr_bursts = e.nr_bursts;
      v.burst_ns = e.burst_ns;
      PutCpuStat(v, false, &l);
      break;
    }
    case V1IterFile::kCpuacctUsagePercpu:
      if (per_cpu == nullptr || cpus == 0) return 0;
      l.List(per_cpu, cpus);
      break;
    case V1IterFile::kCpuacctUsageUser: l.Value(e.cpuacct_user_ns); break;
    case V1IterFile::kCpuacctUsageSys: l.Value(e.cpuacct_system_ns); break;
    case V1IterFile::kMemoryUsage: l.Value(e.memory_pages * page_size); break;
    case V1IterFile::kMemoryMaxUsage: l.Value(e.memory_watermark_pages * page_size); break;
    case V1IterFile::kMemoryFailcnt: l.Value(e.memory_failcnt); break;
    case V1IterFile::kKmemUsage: l.Value(e.kmem_pages * page_size); break;
    case V1IterFile::kOomControl:
      l.Put("oom_kill_disable", e.oom_kill_disable);
      l.Put("under_oom", e.under_oom);
      l.Put("oom_kill", e.oom_kill);
      break;
    case V1IterFile::kCount: return 0;
  }
  return l.length();
}

}  // namespace statlet::bpf
