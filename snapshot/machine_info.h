// What statlet knows about the machine it runs on: CPU and memory capacity, the memory
// modules, the NUMA topology and the host's identities, as cAdvisor's machine info holds
// them (google/cadvisor lib/model MachineInfo). Read by collector/machine_reader.h, served by
// metrics/machine_families.h. A figure whose source this host lacks is absent, never zero.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace statlet {

struct MachineCache {
  uint64_t size_bytes = 0;
  uint32_t level = 0;
  std::string type;  // as sysfs names it: "Data", "Instruction", "Unified"
};

// A physical core: the logical CPUs (threads) that share it.
struct MachineCore {
  uint32_t id = 0;      // topology/core_id
  uint32_t socket = 0;  // topology/physical_package_id
  std::vector<uint32_t> threads;
  std::vector<MachineCache> caches;         // levels 1-2 shared by exactly this core's threads
  std::vector<MachineCache> uncore_caches;  // level 3+ shared by some but not all CPUs of the node
};

struct MachineHugePages {
  uint64_t page_size_kb = 0;
  uint64_t pages = 0;  // nr_hugepages
};

// A NUMA node (or, where the kernel has no NUMA nodes, a socket standing in for one).
struct MachineNode {
  uint32_t id = 0;
  std::vector<MachineCore> cores;
  std::vector<MachineCache> caches;      // level 3+ shared by every CPU of the node
  std::optional<uint64_t> memory_bytes;  // node<N>/meminfo MemTotal
  std::vector<MachineHugePages> hugepages;
  std::vector<uint64_t> distances;  // node<N>/distance, index = target node
};

// Memory modules of one type (EDAC's dimm_mem_type), summed.
struct MachineDimms {
  std::string type;  // "Unbuffered-DDR4", ...
  uint64_t count = 0;
  uint64_t capacity_bytes = 0;
};

struct MachineInfo {
  int64_t timestamp_ns = 0;  // wall clock when it was read
  // Identities, "" when the host has none: /etc/machine-id (else /var/lib/dbus/machine-id),
  // /sys/class/dmi/id/product_uuid, /proc/sys/kernel/random/boot_id.
  std::string machine_id, system_uuid, boot_id;
  std::optional<uint64_t> cpu_cores;           // online logical CPUs
  std::optional<uint64_t> cpu_physical_cores;  // distinct (physical id, core id) pairs
  std::optional<uint64_t> cpu_sockets;
  std::optional<uint64_t> cpu_books, cpu_drawers;  // s390x only
  std::optional<uint64_t> memory_bytes, swap_bytes;
  std::vector<MachineDimms> dimms;    // sorted by type; empty without EDAC
  std::vector<MachineNode> topology;  // sorted by id; empty when not read or not known
  bool topology_read = false;         // the topology was asked for (cpu_topology served)
  // Why a required source (/proc/cpuinfo, /proc/meminfo) could not be read or parsed; ""
  // when both were (machine_scrape_error).
  std::string error;
};

}  // namespace statlet
