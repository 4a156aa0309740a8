// The machine reader and its parsers, on files copied from this host and on recorded trees
// of shapes it cannot show (tests/collector/fixtures/machine/README.md).
#include "collector/machine_reader.h"

#include <gtest/gtest.h>

#include <string>

#include "collector/machine_source.h"
#include "collector/parse/machine_parsers.h"

namespace statlet {
namespace {

std::string Fixture(const std::string& name) {
  return std::string(STATLET_SOURCE_DIR) + "/tests/collector/fixtures/machine/" + name;
}

MachineInfo Read(const std::string& name, bool topology = true) {
  MachineReadOptions o;
  o.root = Fixture(name);
  o.topology = topology;
  return ReadMachineInfo(o, 1234);
}

TEST(MachineParsers, CpuinfoCountsDistinctPackagesAndCores) {
  // Core ids restart in each package: four cores, not two.
  const std::string cpuinfo =
      "processor\t: 0\nphysical id\t: 0\ncore id\t\t: 0\n\n"
      "processor\t: 1\nphysical id\t: 0\ncore id\t\t: 1\n\n"
      "processor\t: 2\nphysical id\t: 1\ncore id\t\t: 0\n\n"
      "processor\t: 3\nphysical id\t: 1\ncore id\t\t: 1\n\n"
      "processor\t: 4\nphysical id\t: 1\ncore id\t\t: 1\n";
  const parse::CpuinfoCounts c = parse::ParseCpuinfo(cpuinfo);
  EXPECT_EQ(c.processors, 5u);
  EXPECT_EQ(c.physical_cores, 4u);
  EXPECT_EQ(c.sockets, 2u);
  EXPECT_FALSE(c.books.has_value());
  EXPECT_FALSE(c.drawers.has_value());
}

TEST(MachineParsers, CpuinfoWithoutIdsLeavesCountsAbsent) {
  const parse::CpuinfoCounts c = parse::ParseCpuinfo("processor\t: 0\nBogoMIPS\t: 50.00\n\nprocessor\t: 1\n");
  EXPECT_EQ(c.processors, 2u);
  EXPECT_FALSE(c.physical_cores.has_value());
  EXPECT_FALSE(c.sockets.has_value());
  EXPECT_EQ(parse::ParseCpuinfo("").processors, 0u);
  EXPECT_FALSE(parse::ParseCpuinfo("core id : x\n").physical_cores.has_value());
}

TEST(MachineParsers, CpuinfoBooksAndDrawers) {
  const parse::CpuinfoCounts c = parse::ParseCpuinfo(
      "cpu number      : 0\nphysical id     : 1\ncore id         : 0\nbook id         : 1\ndrawer id       : 0\n\n"
      "cpu number      : 1\nphysical id     : 1\ncore id         : 0\nbook id         : 2\ndrawer id       : 0\n");
  EXPECT_EQ(c.books, 2u);
  EXPECT_EQ(c.drawers, 1u);
  EXPECT_EQ(c.sockets, 2u);  // package 1 of book 1 and of book 2
  EXPECT_EQ(c.physical_cores, 2u);
}

TEST(MachineParsers, Meminfo) {
  const std::string meminfo = "MemTotal:       24683656 kB\nMemFree:  1 kB\nSwapTotal:             0 kB\n";
  EXPECT_EQ(parse::ParseMeminfoBytes(meminfo, "MemTotal"), 24683656ull * 1024);
  EXPECT_EQ(parse::ParseMeminfoBytes(meminfo, "SwapTotal"), 0u);
  EXPECT_FALSE(parse::ParseMeminfoBytes(meminfo, "Hugetlb").has_value());
  EXPECT_EQ(parse::ParseMeminfoBytes("Node 1 MemTotal:  32768000 kB\n", "MemTotal"), 32768000ull * 1024);
  EXPECT_FALSE(parse::ParseMeminfoBytes("MemTotal: 12\n", "MemTotal").has_value());
  EXPECT_FALSE(parse::ParseMeminfoBytes("MemTotal: x kB\n", "MemTotal").has_value());
}

TEST(MachineParsers, CpuListsMasksSizesDistances) {
  EXPECT_EQ(parse::ParseCpuList("0-3,8,10-11\n"), (std::vector<uint32_t>{0, 1, 2, 3, 8, 10, 11}));
  EXPECT_EQ(parse::ParseCpuList("\n"), std::vector<uint32_t>{});
  EXPECT_FALSE(parse::ParseCpuList("3-1").has_value());
  EXPECT_FALSE(parse::ParseCpuList("0-4294967295").has_value());
  EXPECT_FALSE(parse::ParseCpuList("a").has_value());
  EXPECT_EQ(parse::CountCpuMask("00000000,0000000f\n"), 4u);
  EXPECT_EQ(parse::CountCpuMask("cc"), 4u);
  EXPECT_FALSE(parse::CountCpuMask("xyz").has_value());
  EXPECT_EQ(parse::ParseCacheSizeBytes("48K\n"), 48u * 1024);
  EXPECT_EQ(parse::ParseCacheSizeBytes("32M"), 32u << 20);
  EXPECT_EQ(parse::ParseCacheSizeBytes("512"), 512u);
  EXPECT_FALSE(parse::ParseCacheSizeBytes("K").has_value());
  EXPECT_EQ(parse::ParseDistances("10 21 31\n"), (std::vector<uint64_t>{10, 21, 31}));
  EXPECT_FALSE(parse::ParseDistances("10 x").has_value());
  EXPECT_EQ(parse::ParseHugepagesDirKb("hugepages-1048576kB"), 1048576u);
  EXPECT_FALSE(parse::ParseHugepagesDirKb("hugepages-kB").has_value());
  EXPECT_EQ(parse::NumberedName("cpu12", "cpu"), 12u);
  EXPECT_FALSE(parse::NumberedName("cpufreq", "cpu").has_value());
  EXPECT_FALSE(parse::NumberedName("mc_fake", "mc").has_value());
}

// The files of this host as copied: 2 vCPUs of one package, one NUMA node.
TEST(MachineReader, ThisHostsFiles) {
  const MachineInfo m = Read("host-2cpu");
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(m.timestamp_ns, 1234);
  EXPECT_EQ(m.machine_id, "0123456789abcdef0123456789abcdef");
  EXPECT_EQ(m.boot_id, "00000000-1111-2222-3333-444444444444");
  EXPECT_EQ(m.system_uuid, "");  // no DMI on this host
  EXPECT_EQ(m.cpu_cores, 2u);
  EXPECT_EQ(m.cpu_physical_cores, 2u);
  EXPECT_EQ(m.cpu_sockets, 1u);
  EXPECT_FALSE(m.cpu_books.has_value());
  EXPECT_EQ(m.memory_bytes, 24683656ull * 1024);
  EXPECT_EQ(m.swap_bytes, 0u);
  EXPECT_TRUE(m.dimms.empty());
  ASSERT_EQ(m.topology.size(), 1u);
  const MachineNode& n = m.topology[0];
  EXPECT_EQ(n.memory_bytes, 14903072ull * 1024);
  EXPECT_EQ(n.distances, std::vector<uint64_t>{10});
  ASSERT_EQ(n.hugepages.size(), 2u);
  EXPECT_EQ(n.hugepages[0].page_size_kb, 2048u);
  EXPECT_EQ(n.hugepages[1].page_size_kb, 1048576u);
  ASSERT_EQ(n.cores.size(), 2u);
  EXPECT_EQ(n.cores[0].threads, std::vector<uint32_t>{0});
  EXPECT_EQ(n.cores[1].threads, std::vector<uint32_t>{1});
  // L1d 48K, L1i 64K, L2 2048K per core; the L3 (shared_cpu_map 3) is the node's.
  ASSERT_EQ(n.cores[0].caches.size(), 3u);
  EXPECT_EQ(n.cores[0].caches[0].size_bytes, 48u * 1024);
  EXPECT_EQ(n.cores[0].caches[0].type, "Data");
  EXPECT_EQ(n.cores[0].caches[2].level, 2u);
  EXPECT_TRUE(n.cores[0].uncore_caches.empty());
  ASSERT_EQ(n.caches.size(), 1u);
  EXPECT_EQ(n.caches[0].size_bytes, 491520ull * 1024);
  EXPECT_EQ(n.caches[0].level, 3u);
}

TEST(MachineReader, TwoSocketsTwoNodesAndMemoryModules) {
  const MachineInfo m = Read("two-socket-numa");
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(m.system_uuid, "4c4c4544-0042-3010-8058-b7c04f4e4e32");
  EXPECT_EQ(m.cpu_cores, 8u);
  EXPECT_EQ(m.cpu_physical_cores, 4u);
  EXPECT_EQ(m.cpu_sockets, 2u);
  EXPECT_EQ(m.memory_bytes, 65536000ull * 1024);
  EXPECT_EQ(m.swap_bytes, 8388604ull * 1024);
  ASSERT_EQ(m.dimms.size(), 2u);  // by type, sorted; mc0/power and dimm_label_only are no modules
  EXPECT_EQ(m.dimms[0].type, "Registered-DDR4");
  EXPECT_EQ(m.dimms[0].count, 3u);
  EXPECT_EQ(m.dimms[0].capacity_bytes, 3 * (16384ull << 20));
  EXPECT_EQ(m.dimms[1].type, "Unbuffered-DDR4");
  EXPECT_EQ(m.dimms[1].count, 1u);
  EXPECT_EQ(m.dimms[1].capacity_bytes, 8192ull << 20);
  ASSERT_EQ(m.topology.size(), 2u);
  for (const MachineNode& n : m.topology) {
    SCOPED_TRACE(n.id);
    ASSERT_EQ(n.cores.size(), 2u);
    EXPECT_EQ(n.cores[0].socket, n.id);
    EXPECT_EQ(n.cores[0].threads.size(), 2u);
    EXPECT_EQ(n.cores[0].caches.size(), 3u);
    ASSERT_EQ(n.caches.size(), 1u);  // the package's L3, once
    EXPECT_EQ(n.caches[0].size_bytes, 28160ull * 1024);
    EXPECT_EQ(n.memory_bytes, 32768000ull * 1024);
  }
  EXPECT_EQ(m.topology[0].cores[0].threads, (std::vector<uint32_t>{0, 4}));
  EXPECT_EQ(m.topology[1].cores[1].threads, (std::vector<uint32_t>{3, 7}));
  EXPECT_EQ(m.topology[0].distances, (std::vector<uint64_t>{10, 21}));
  EXPECT_EQ(m.topology[1].distances, (std::vector<uint64_t>{21, 10}));
  EXPECT_EQ(m.topology[0].hugepages[0].pages, 4u);
}

TEST(MachineReader, TopologyOnlyWhenAsked) {
  const MachineInfo m = Read("two-socket-numa", /*topology=*/false);
  EXPECT_FALSE(m.topology_read);
  EXPECT_TRUE(m.topology.empty());
  EXPECT_EQ(m.cpu_cores, 8u);
}

TEST(MachineReader, WithoutNumaNodesPackagesStandIn) {
  const MachineInfo m = Read("no-numa-arm");
  EXPECT_EQ(m.error, "");
  EXPECT_EQ(m.cpu_cores, 4u);
  // cpuinfo names no package or core: sysfs does.
  EXPECT_EQ(m.cpu_physical_cores, 4u);
  EXPECT_EQ(m.cpu_sockets, 1u);
  ASSERT_EQ(m.topology.size(), 1u);
  EXPECT_EQ(m.topology[0].cores.size(), 4u);
  EXPECT_FALSE(m.topology[0].memory_bytes.has_value());
  EXPECT_TRUE(m.topology[0].distances.empty());
  ASSERT_EQ(m.topology[0].caches.size(), 1u);
  EXPECT_EQ(m.topology[0].caches[0].size_bytes, 32u << 20);
  EXPECT_EQ(m.topology[0].cores[0].caches.size(), 2u);
}

TEST(MachineReader, MissingAndMalformedFilesAreValues) {
  const MachineInfo m = Read("broken");
  EXPECT_EQ(m.error, "cannot read /proc/cpuinfo");
  EXPECT_EQ(m.machine_id, "");
  EXPECT_EQ(m.boot_id, "");
  EXPECT_FALSE(m.memory_bytes.has_value());
  EXPECT_FALSE(m.swap_bytes.has_value());
  EXPECT_EQ(m.cpu_cores, 2u);  // cpu2 has no core_id
  EXPECT_TRUE(m.dimms.empty());
  ASSERT_EQ(m.topology.size(), 1u);
  EXPECT_FALSE(m.topology[0].memory_bytes.has_value());
  EXPECT_TRUE(m.topology[0].distances.empty());
  EXPECT_TRUE(m.topology[0].cores[0].caches.empty());

  const MachineInfo none = Read("does-not-exist");
  EXPECT_EQ(none.error, "cannot read /proc/cpuinfo");
  EXPECT_FALSE(none.cpu_cores.has_value());
  EXPECT_TRUE(none.topology.empty());
}

TEST(MachineSource, ReadsAtStartThenOnlyAfterTheRefreshInterval) {
  int64_t now = 0;
  MachineReadOptions o;
  o.root = Fixture("host-2cpu");
  MachineSource source(
      o, std::chrono::minutes(5), [&] { return now; }, [&] { return now + 7; });
  EXPECT_EQ(source.reads(), 1u);
  const auto first = source.Current();
  now += std::chrono::nanoseconds(std::chrono::minutes(5)).count() - 1;
  EXPECT_EQ(source.Current(), first);
  EXPECT_EQ(source.reads(), 1u);
  now += 1;
  const auto second = source.Current();
  EXPECT_NE(second, first);
  EXPECT_EQ(source.reads(), 2u);
  EXPECT_EQ(second->timestamp_ns, now + 7);
  EXPECT_EQ(second->cpu_cores, 2u);
}

}  // namespace
}  // namespace statlet
