#include "collector/machine_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <utility>
#include <vector>

#include "collector/parse/cgroup_parsers.h"
#include "collector/parse/machine_parsers.h"

namespace statlet {
namespace {

// /proc/cpuinfo grows with the CPUs (about 1.5 KB each); far beyond any machine's.
constexpr size_t kMaxFileBytes = 16 << 20;

std::optional<std::string> ReadText(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[16384];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof(buf));
    if (n < 0) {
      ::close(fd);
      return std::nullopt;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > kMaxFileBytes) {
      ::close(fd);
      return std::nullopt;
    }
  }
  ::close(fd);
  return out;
}

std::string Trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ' || s.back() == '\0')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && s[i] == ' ') ++i;
  return s.substr(i);
}

std::optional<uint64_t> ReadU64(const std::string& path) {
  std::optional<std::string> s = ReadText(path);
  uint64_t v = 0;
  if (!s || !parse::ParseU64(*s, &v)) return std::nullopt;
  return v;
}

// The numbered entries of a directory ("cpu3" → 3), ascending; none when it cannot be read.
std::vector<uint32_t> NumberedEntries(const std::string& dir, std::string_view prefix) {
  std::vector<uint32_t> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    if (std::optional<uint32_t> n = parse::NumberedName(e->d_name, prefix)) out.push_back(*n);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<std::string> EntriesWithPrefix(const std::string& dir, std::string_view prefix) {
  std::vector<std::string> out;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return out;
  while (const dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name.substr(0, prefix.size()) == prefix) out.emplace_back(name);
  }
  ::closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

// An online logical CPU and where it sits.
struct Cpu {
  uint32_t id = 0, core = 0, socket = 0;
};

// The online CPUs with a core and a package id (as cAdvisor's getCoresInfo keeps them).
std::vector<Cpu> ReadCpus(const std::string& cpu_dir) {
  std::optional<std::vector<uint32_t>> online;
  if (std::optional<std::string> s = ReadText(cpu_dir + "/online")) online = parse::ParseCpuList(*s);
  std::vector<Cpu> out;
  for (uint32_t id : NumberedEntries(cpu_dir, "cpu")) {
    // Without the online list (no CPU hotplug) every CPU is online.
    if (online && !std::binary_search(online->begin(), online->end(), id)) continue;
    const std::string topo = cpu_dir + "/cpu" + std::to_string(id) + "/topology/";
    std::optional<uint64_t> core = ReadU64(topo + "core_id"), socket = ReadU64(topo + "physical_package_id");
    if (!core || !socket || *core > UINT32_MAX || *socket > UINT32_MAX) continue;
    out.push_back({id, static_cast<uint32_t>(*core), static_cast<uint32_t>(*socket)});
  }
  return out;
}

// Groups CPUs into cores by (package, core id), in the order of their first thread.
std::vector<MachineCore> CoresOf(const std::vector<Cpu>& cpus) {
  std::vector<MachineCore> cores;
  for (const Cpu& c : cpus) {
    auto it = std::find_if(cores.begin(), cores.end(),
                           [&](const MachineCore& m) { return m.id == c.core && m.socket == c.socket; });
    if (it == cores.end()) {
      cores.push_back({c.core, c.socket, {}, {}, {}});
      it = cores.end() - 1;
    }
    it->threads.push_back(c.id);
  }
  return cores;
}

struct CacheEntry {
  MachineCache cache;
  int64_t id = -1;  // cache/index<n>/id: tells two caches of one size apart
  uint32_t cpus = 0;
};

// The caches one CPU reaches (cpu<N>/cache/index*); an index whose files are missing or
// malformed is left out.
std::vector<CacheEntry> CachesOf(const std::string& cpu_dir, uint32_t cpu) {
  std::vector<CacheEntry> out;
  const std::string dir = cpu_dir + "/cpu" + std::to_string(cpu) + "/cache";
  for (uint32_t index : NumberedEntries(dir, "index")) {
    const std::string p = dir + "/index" + std::to_string(index) + "/";
    std::optional<std::string> size = ReadText(p + "size"), type = ReadText(p + "type"),
                               map = ReadText(p + "shared_cpu_map");
    std::optional<uint64_t> level = ReadU64(p + "level");
    if (!size || !type || !map || !level || *level > UINT32_MAX) continue;
    std::optional<uint64_t> bytes = parse::ParseCacheSizeBytes(*size);
    std::optional<uint32_t> cpus = parse::CountCpuMask(*map);
    if (!bytes || !cpus) continue;
    CacheEntry e;
    e.cache = {*bytes, static_cast<uint32_t>(*level), Trimmed(*type)};
    if (std::optional<uint64_t> id = ReadU64(p + "id"); id && *id <= INT64_MAX) e.id = static_cast<int64_t>(*id);
    e.cpus = *cpus;
    out.push_back(std::move(e));
  }
  return out;
}

bool SameCache(const MachineCache& a, const MachineCache& b) {
  return a.size_bytes == b.size_bytes && a.level == b.level && a.type == b.type;
}

// Sorts the caches one thread of each core reaches as cAdvisor's addCacheInfo does: levels
// 1-2 shared by exactly the core's threads are the core's; level 3+ shared by every CPU of
// the node are the node's (once), shared by fewer the core's uncore caches.
void AddCaches(const std::string& cpu_dir, MachineNode* node) {
  std::vector<std::pair<int64_t, MachineCache>> node_caches;
  for (MachineCore& core : node->cores) {
    if (core.threads.empty()) continue;
    const uint32_t per_core = static_cast<uint32_t>(core.threads.size());
    const uint32_t per_node = static_cast<uint32_t>(node->cores.size()) * per_core;
    std::vector<std::pair<int64_t, MachineCache>> uncore;
    for (CacheEntry& e : CachesOf(cpu_dir, core.threads.front())) {
      if (e.cache.level > 2) {
        auto& into = e.cpus == per_node ? node_caches : uncore;
        const bool known = std::any_of(into.begin(), into.end(),
                                       [&](const auto& c) { return c.first == e.id && SameCache(c.second, e.cache); });
        if (!known) into.emplace_back(e.id, e.cache);
      } else if (e.cpus == per_core) {
        core.caches.push_back(std::move(e.cache));
      }
    }
    for (auto& [id, c] : uncore) core.uncore_caches.push_back(std::move(c));
  }
  for (auto& [id, c] : node_caches) node->caches.push_back(std::move(c));
}

std::vector<MachineNode> ReadTopology(const std::string& root, const std::vector<Cpu>& cpus) {
  const std::string cpu_dir = root + "/sys/devices/system/cpu";
  const std::string node_dir = root + "/sys/devices/system/node";
  std::vector<MachineNode> nodes;
  const std::vector<uint32_t> node_ids = NumberedEntries(node_dir, "node");
  if (node_ids.empty()) {
    // No NUMA nodes (a kernel without CONFIG_NUMA): each package stands in for one, as
    // cAdvisor's getCPUTopology does; it has no memory, huge pages or distances.
    std::map<uint32_t, std::vector<Cpu>> by_socket;
    for (const Cpu& c : cpus) by_socket[c.socket].push_back(c);
    for (auto& [socket, members] : by_socket) {
      MachineNode n;
      n.id = socket;
      n.cores = CoresOf(members);
      AddCaches(cpu_dir, &n);
      nodes.push_back(std::move(n));
    }
    return nodes;
  }
  for (uint32_t id : node_ids) {
    const std::string dir = node_dir + "/node" + std::to_string(id);
    MachineNode n;
    n.id = id;
    const std::vector<uint32_t> members = NumberedEntries(dir, "cpu");
    std::vector<Cpu> node_cpus;
    for (const Cpu& c : cpus) {
      if (std::binary_search(members.begin(), members.end(), c.id)) node_cpus.push_back(c);
    }
    n.cores = CoresOf(node_cpus);
    AddCaches(cpu_dir, &n);
    if (std::optional<std::string> m = ReadText(dir + "/meminfo"))
      n.memory_bytes = parse::ParseMeminfoBytes(*m, "MemTotal");
    for (const std::string& h : EntriesWithPrefix(dir + "/hugepages", "hugepages-")) {
      std::optional<uint64_t> kb = parse::ParseHugepagesDirKb(h);
      std::optional<uint64_t> pages = ReadU64(dir + "/hugepages/" + h + "/nr_hugepages");
      if (kb && pages) n.hugepages.push_back({*kb, *pages});
    }
    std::sort(n.hugepages.begin(), n.hugepages.end(),
              [](const MachineHugePages& a, const MachineHugePages& b) { return a.page_size_kb < b.page_size_kb; });
    if (std::optional<std::string> d = ReadText(dir + "/distance")) {
      if (std::optional<std::vector<uint64_t>> v = parse::ParseDistances(*d)) n.distances = std::move(*v);
    }
    nodes.push_back(std::move(n));
  }
  return nodes;
}

// EDAC's memory controllers (mc<N>) and their modules (dimm<N>: dimm_mem_type, size in MiB),
// summed per type. A module whose files are missing or malformed is left out.
std::vector<MachineDimms> ReadDimms(const std::string& edac_dir) {
  std::map<std::string, MachineDimms> by_type;
  for (uint32_t mc : NumberedEntries(edac_dir, "mc")) {
    const std::string mc_dir = edac_dir + "/mc" + std::to_string(mc);
    for (uint32_t dimm : NumberedEntries(mc_dir, "dimm")) {
      const std::string p = mc_dir + "/dimm" + std::to_string(dimm) + "/";
      std::optional<std::string> type = ReadText(p + "dimm_mem_type");
      std::optional<uint64_t> mib = ReadU64(p + "size");
      if (!type || !mib || *mib > (UINT64_MAX >> 20)) continue;
      const std::string t = Trimmed(*type);
      MachineDimms& d = by_type[t];
      d.type = t;
      ++d.count;
      d.capacity_bytes += *mib << 20;
    }
  }
  std::vector<MachineDimms> out;
  for (auto& [type, d] : by_type) out.push_back(std::move(d));
  return out;
}

// The first of `paths` that reads, trimmed; "" when none does.
std::string FirstReadable(const std::string& root, std::initializer_list<const char*> paths) {
  for (const char* p : paths) {
    if (std::optional<std::string> s = ReadText(root + p)) return Trimmed(*s);
  }
  return "";
}

}  // namespace

MachineInfo ReadMachineInfo(const MachineReadOptions& options, int64_t now_ns) {
  const std::string& root = options.root;
  MachineInfo m;
  m.timestamp_ns = now_ns;
  m.machine_id = FirstReadable(root, {"/etc/machine-id", "/var/lib/dbus/machine-id"});
  m.boot_id = FirstReadable(root, {"/proc/sys/kernel/random/boot_id"});
  m.system_uuid = FirstReadable(root, {"/sys/class/dmi/id/product_uuid"});

  const std::vector<Cpu> cpus = ReadCpus(root + "/sys/devices/system/cpu");
  std::optional<parse::CpuinfoCounts> counts;
  if (std::optional<std::string> s = ReadText(root + "/proc/cpuinfo")) {
    counts = parse::ParseCpuinfo(*s);
  } else {
    m.error = "cannot read /proc/cpuinfo";
  }
  // What /proc/cpuinfo leaves out, sysfs tells (cAdvisor falls back the same way).
  std::set<std::pair<uint32_t, uint32_t>> sys_cores;
  std::set<uint32_t> sys_sockets;
  for (const Cpu& c : cpus) {
    sys_cores.emplace(c.socket, c.core);
    sys_sockets.insert(c.socket);
  }
  if (!cpus.empty()) {
    m.cpu_cores = cpus.size();
  } else if (counts && counts->processors > 0) {
    m.cpu_cores = counts->processors;
  }
  if (counts) {
    m.cpu_physical_cores = counts->physical_cores;
    m.cpu_sockets = counts->sockets;
    m.cpu_books = counts->books;
    m.cpu_drawers = counts->drawers;
  }
  if (!m.cpu_physical_cores && !sys_cores.empty()) m.cpu_physical_cores = sys_cores.size();
  if (!m.cpu_sockets && !sys_sockets.empty()) m.cpu_sockets = sys_sockets.size();

  if (std::optional<std::string> s = ReadText(root + "/proc/meminfo")) {
    m.memory_bytes = parse::ParseMeminfoBytes(*s, "MemTotal");
    m.swap_bytes = parse::ParseMeminfoBytes(*s, "SwapTotal");
    if (!m.memory_bytes && m.error.empty()) m.error = "no MemTotal in /proc/meminfo";
  } else if (m.error.empty()) {
    m.error = "cannot read /proc/meminfo";
  }
  m.dimms = ReadDimms(root + "/sys/devices/system/edac/mc");
  if (options.topology) {
    m.topology = ReadTopology(root, cpus);
    m.topology_read = true;
  }
  return m;
}

}  // namespace statlet
