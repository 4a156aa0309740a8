#include "bpf/cgroup_stats_render.h"

#include <charconv>
#include <cstddef>
#include <cstring>

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

constexpr const char* kMemoryEventKeys[STATLET_MEMORY_EVENTS] = {"low", "high",     "max",
                                                                 "oom", "oom_kill", "oom_group_kill"};

struct StateItem {
  const char* key;  // nullptr: not printed on its own (the slab parts)
  bool bytes;       // counted in bytes (or events) by the kernel, not in pages
};
// Indexed by enum statlet_memstat_state.
constexpr StateItem kStateItems[STATLET_MS_STATE_ITEMS] = {
    {"anon", false},
    {"file", false},
    {"kernel", false},
    {"shmem", false},
    {"file_mapped", false},
    {"inactive_anon", false},
    {"active_anon", false},
    {"inactive_file", false},
    {"active_file", false},
    {"unevictable", false},
    {nullptr, true},
    {nullptr, true},
    {"workingset_refault_anon", true},
    {"workingset_refault_file", true},
    {"workingset_activate_anon", true},
    {"workingset_activate_file", true},
    {"workingset_restore_anon", true},
    {"workingset_restore_file", true},
};

// memcg_page_state: a negative sum (per-CPU deltas not yet folded in) reads as 0.
uint64_t StateValue(const statlet_cgroup_stats& e, int item, uint64_t page_size) {
  const int64_t raw = e.memstat_state[item];
  const uint64_t v = raw < 0 ? 0 : static_cast<uint64_t>(raw);
  return kStateItems[item].bytes ? v : v * page_size;
}

void RenderMemoryStat(const statlet_cgroup_stats& e, uint64_t page_size, Lines* out) {
  for (int i = 0; i < STATLET_MS_STATE_ITEMS; i++) {
    if (kStateItems[i].key != nullptr) out->Put(kStateItems[i].key, StateValue(e, i, page_size));
  }
  out->Put("slab", StateValue(e, STATLET_MS_SLAB_RECLAIMABLE, page_size) +
                       StateValue(e, STATLET_MS_SLAB_UNRECLAIMABLE, page_size));
  const auto& ev = e.memstat_events;
  // The kernel sums the reclaim contexts it has (an absent one reads 0 here).
  out->Put("pgscan", ev[STATLET_ME_PGSCAN_KSWAPD] + ev[STATLET_ME_PGSCAN_DIRECT] + ev[STATLET_ME_PGSCAN_KHUGEPAGED] +
                         ev[STATLET_ME_PGSCAN_PROACTIVE]);
  out->Put("pgsteal", ev[STATLET_ME_PGSTEAL_KSWAPD] + ev[STATLET_ME_PGSTEAL_DIRECT] +
                          ev[STATLET_ME_PGSTEAL_KHUGEPAGED] + ev[STATLET_ME_PGSTEAL_PROACTIVE]);
  out->Put("pgscan_kswapd", ev[STATLET_ME_PGSCAN_KSWAPD]);
  out->Put("pgscan_direct", ev[STATLET_ME_PGSCAN_DIRECT]);
  out->Put("pgsteal_kswapd", ev[STATLET_ME_PGSTEAL_KSWAPD]);
  out->Put("pgsteal_direct", ev[STATLET_ME_PGSTEAL_DIRECT]);
  out->Put("pgfault", ev[STATLET_ME_PGFAULT]);
  out->Put("pgmajfault", ev[STATLET_ME_PGMAJFAULT]);
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

size_t RenderIterFile(IterFile f, const statlet_cgroup_stats& e, uint64_t page_size, char* out, size_t cap) {
  if ((e.parts & IterFilePart(f)) != IterFilePart(f)) return 0;
  Lines l(out, cap);
  switch (f) {
    case IterFile::kCpuStat: {
      uint64_t user = 0, system = 0;
      AdjustCputime(e.sum_exec_ns, e.utime_ns, e.stime_ns, e.prev_utime_ns, e.prev_stime_ns, &user, &system);
      l.Put("usage_usec", e.sum_exec_ns / 1000);
      l.Put("user_usec", user / 1000);
      l.Put("system_usec", system / 1000);
      if (e.parts & STATLET_PART_CFS) {
        l.Put("nr_periods", e.nr_periods);
        l.Put("nr_throttled", e.nr_throttled);
        l.Put("throttled_usec", e.throttled_ns / 1000);
        l.Put("nr_bursts", e.nr_bursts);
        l.Put("burst_usec", e.burst_ns / 1000);
      }
      break;
    }
    case IterFile::kMemoryCurrent: l.Value(e.memory_pages * page_size); break;
    case IterFile::kMemoryPeak: l.Value(e.memory_peak_pages * page_size); break;
    case IterFile::kMemorySwapCurrent: l.Value(e.swap_pages * page_size); break;
    case IterFile::kMemoryStat: RenderMemoryStat(e, page_size, &l); break;
    case IterFile::kMemoryEvents:
    case IterFile::kMemoryEventsLocal: {
      const __u64* v = f == IterFile::kMemoryEvents ? e.memory_events : e.memory_events_local;
      for (int i = 0; i < STATLET_MEMORY_EVENTS; i++) l.Put(kMemoryEventKeys[i], v[i]);
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

std::optional<MemstatSlots> ResolveMemstatSlots(const statlet_memstat_setup& setup, const char** why_not) {
  MemstatSlots out;
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
  if (out.events[STATLET_ME_PGFAULT] < 0 || out.events[STATLET_ME_PGMAJFAULT] < 0) {
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
    case V1IterFile::kCpuStat:  // cpu_cfs_stat_show (its wait_sum, with schedstats on, is not read)
      l.Put("nr_periods", e.nr_periods);
      l.Put("nr_throttled", e.nr_throttled);
      l.Put("throttled_time", e.throttled_ns);
      l.Put("nr_bursts", e.nr_bursts);
      l.Put("burst_time", e.burst_ns);
      break;
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
