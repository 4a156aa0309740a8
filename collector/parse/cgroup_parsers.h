// Parsers for the text formats of cgroupfs and procfs. Pure functions over a string_view:
// no allocation (except where the output is a vector), no I/O. Each returns false (or a
// count of rejected lines) on malformed input and leaves well-formed parts parsed, so a
// bad line costs only its own field. All are fuzzed (tests/fuzz/).
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "snapshot/snapshot.h"

namespace statlet::parse {

// Unsigned decimal, the whole view (surrounding whitespace allowed).
bool ParseU64(std::string_view s, uint64_t* out);
// A single-value file: a number, or "max" (→ kUnlimited). Trailing newline allowed.
bool ParseLimit(std::string_view s, uint64_t* out);
// v1 limits: "-1" or a value >= 2^62 (the page-rounded LLONG_MAX) mean no limit.
bool ParseV1Limit(std::string_view s, uint64_t* out);
// A signed decimal (v1 cpu.cfs_quota_us: -1 = unlimited → kUnlimited).
bool ParseV1Quota(std::string_view s, uint64_t* out);
// v2 cpu.max: "<quota|max> <period>".
bool ParseCpuMax(std::string_view s, Opt<uint64_t>* quota_us, Opt<uint64_t>* period_us);

// Flat keyed ("key value\n" per line). Calls fn(key, value) for each line whose value is a
// u64; returns the number of malformed lines (0 = clean).
template <typename Fn>
int ForEachFlatKeyed(std::string_view s, Fn&& fn);

// A field table for flat keyed files: maps keys to Opt<uint64_t> members of T. Lookups
// try the slot after the previous match first, since the kernel prints keys in a fixed
// order, so a whole file costs one comparison per line in the common case.
template <typename T>
struct FlatKeyField {
  std::string_view key;
  Opt<uint64_t> T::*member;
  uint64_t scale = 1;  // multiply (e.g. usec → nsec)
};
template <typename T>
int ParseFlatKeyedInto(std::string_view s, std::span<const FlatKeyField<T>> table, T* out);
template <typename T, size_t N>
int ParseFlatKeyedInto(std::string_view s, const FlatKeyField<T> (&table)[N], T* out) {
  return ParseFlatKeyedInto(s, std::span<const FlatKeyField<T>>(table), out);
}
template <typename T, size_t N>
int ParseFlatKeyedInto(std::string_view s, const std::array<FlatKeyField<T>, N>& table, T* out) {
  return ParseFlatKeyedInto(s, std::span<const FlatKeyField<T>>(table), out);
}

// PSI: "some avg10=.. avg60=.. avg300=.. total=..\nfull ...".
bool ParsePsi(std::string_view s, Psi* out);

// v2 io.stat: "MAJ:MIN rbytes=.. wbytes=.. rios=.. wios=.. dbytes=.. dios=..". Devices are
// appended in file order; returns false if any line was malformed.
bool ParseIoStat(std::string_view s, std::vector<IoDeviceStats>* out);
// v1 blkio.*_recursive: "MAJ:MIN Read|Write|Sync|Async|Discard|Total N" and a final
// "Total N". `bytes` selects which IoDeviceStats fields receive Read/Write/Discard.
bool ParseBlkio(std::string_view s, bool bytes, std::vector<IoDeviceStats>* devices);

// /proc/<pid>/net/dev (two header lines, then "name: 16 counters").
bool ParseNetDev(std::string_view s, std::vector<NetInterfaceStats>* out);

// Whitespace-separated u64s (v1 cpuacct.usage_percpu).
bool ParseU64List(std::string_view s, std::vector<uint64_t>* out);

// cgroup.procs / cgroup.threads / tasks: one id per line. Returns the count; sets
// *contains when `wanted` (if nonzero) is one of the ids, and *first to the first id.
// When `ids` is given, every id is also appended to it (the per-process scans reuse the
// one parse of cgroup.procs).
uint64_t CountIds(std::string_view s, uint32_t wanted, bool* contains, uint32_t* first,
                  std::vector<uint32_t>* ids = nullptr);

// A directory name of /sys/kernel/mm/hugepages ("hugepages-2048kB") as the hugetlb
// controller names that size in its files ("2MB"; "1GB"; "64KB").
bool ParseHugepagesDirName(std::string_view name, std::string* page_size);

// /proc/self/mountinfo: the mount source ("/dev/vda1", "overlay") of the first mount of
// device major:minor; false when no line names that device.
bool ParseMountSource(std::string_view mountinfo, uint32_t major, uint32_t minor, std::string* source);

// /proc/<pid>/limits: the soft limit of "Max open files" ("unlimited" → kUnlimited).
bool ParseMaxOpenFilesSoft(std::string_view s, uint64_t* soft);

// ---------------------------------------------------------------- implementation (templates)
inline std::string_view NextLine(std::string_view* s) {
  size_t nl = s->find('\n');
  std::string_view line = s->substr(0, nl);
  s->remove_prefix(nl == std::string_view::npos ? s->size() : nl + 1);
  return line;
}

template <typename Fn>
int ForEachFlatKeyed(std::string_view s, Fn&& fn) {
  int bad = 0;
  while (!s.empty()) {
    std::string_view line = NextLine(&s);
    if (line.empty()) continue;
    size_t sp = line.find(' ');
    uint64_t v;
    if (sp == std::string_view::npos || sp == 0 || !ParseU64(line.substr(sp + 1), &v)) {
      ++bad;
      continue;
    }
    fn(line.substr(0, sp), v);
  }
  return bad;
}

template <typename T>
int ParseFlatKeyedInto(std::string_view s, std::span<const FlatKeyField<T>> table, T* out) {
  const size_t n = table.size();
  size_t next = 0;
  return ForEachFlatKeyed(s, [&](std::string_view key, uint64_t v) {
    for (size_t i = 0; i < n; ++i) {
      size_t j = next + i < n ? next + i : next + i - n;
      if (table[j].key == key) {
        out->*(table[j].member) = v * table[j].scale;
        next = j + 1 < n ? j + 1 : 0;
        return;
      }
    }
  });
}

}  // namespace statlet::parse
