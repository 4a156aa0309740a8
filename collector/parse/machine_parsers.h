// Parsers for the files that describe the machine: /proc/cpuinfo, /proc/meminfo (and a NUMA
// node's meminfo), sysfs CPU lists and masks, cache sizes and NUMA distances. Pure functions
// over a string_view, as collector/parse/cgroup_parsers.h: malformed input gives an absent
// value, never a crash.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

namespace statlet::parse {

// What /proc/cpuinfo says of the CPU packages. A count is absent when no processor block
// names its key ("physical id", "core id", "book id", "drawer id": not every architecture
// prints them).
struct CpuinfoCounts {
  uint64_t processors = 0;                 // "processor" lines
  std::optional<uint64_t> physical_cores;  // distinct (drawer, book, physical id, core id)
  std::optional<uint64_t> sockets;         // distinct (drawer, book, physical id)
  std::optional<uint64_t> books, drawers;  // distinct (drawer, book) and drawer ids
};
CpuinfoCounts ParseCpuinfo(std::string_view cpuinfo);

// A "<key>: <n> kB" line of /proc/meminfo, or of a node's meminfo ("Node 0 MemTotal: ...
// kB"), in bytes. Absent when no line has the key or its value is not a number of kB.
std::optional<uint64_t> ParseMeminfoBytes(std::string_view meminfo, std::string_view key);

// A sysfs CPU list ("0-3,8,10-11\n"), in ascending order as written. Absent when malformed;
// an empty list (a blank file) is an empty vector.
std::optional<std::vector<uint32_t>> ParseCpuList(std::string_view s);

// The number of CPUs set in a sysfs CPU mask ("00000000,0000000f").
std::optional<uint32_t> CountCpuMask(std::string_view s);

// A cache's size as sysfs writes it ("48K", "2048K", "32M"), in bytes.
std::optional<uint64_t> ParseCacheSizeBytes(std::string_view s);

// A node's distance file ("10 21 21\n").
std::optional<std::vector<uint64_t>> ParseDistances(std::string_view s);

// The page size of a "hugepages-<n>kB" directory, in kB.
std::optional<uint64_t> ParseHugepagesDirKb(std::string_view name);

// The number after `prefix` when `name` is the prefix and decimal digits only ("cpu12",
// "node1", "mc0", "dimm3", "index2").
std::optional<uint32_t> NumberedName(std::string_view name, std::string_view prefix);

}  // namespace statlet::parse
