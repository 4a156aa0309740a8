// Reads the machine's facts from the files cAdvisor's machine info reads (google/cadvisor
// lib/machine/info.go, lib/utils/sysinfo): /proc/cpuinfo, /proc/meminfo, /sys/devices/
// system/{cpu,node} (a node's meminfo, distance and hugepages), /sys/devices/system/edac/mc
// (memory modules), /etc/machine-id, /proc/sys/kernel/random/boot_id and /sys/class/dmi/id/
// product_uuid. Every path hangs below `root` ("" on a live host; a fixture tree in tests).
// A missing or malformed file leaves its figure absent; only an unreadable /proc/cpuinfo or
// /proc/meminfo sets MachineInfo::error.
#pragma once

#include <cstdint>
#include <string>

#include "snapshot/machine_info.h"

namespace statlet {

struct MachineReadOptions {
  std::string root;      // prefix of every path
  bool topology = true;  // read the NUMA nodes, cores and caches (cAdvisor's cpu_topology)
};

// `now_ns`: the wall clock to stamp the result with.
MachineInfo ReadMachineInfo(const MachineReadOptions& options, int64_t now_ns);

}  // namespace statlet
