// The machine families' rules (metrics/machine_families.h): which series a MachineInfo gives,
// their labels in name order, absent figures, the failed read, and the selection's machine and
// cpu_topology groups; and their text as /metrics writes it.
#include "metrics/machine_families.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <string>

#include "exporters/extra_exposition.h"

namespace statlet::metrics {
namespace {

MachineInfo TwoNodeMachine() {
  MachineInfo m;
  m.machine_id = "mid";
  m.system_uuid = "uuid";
  m.boot_id = "bid";
  m.cpu_cores = 4;
  m.cpu_physical_cores = 2;
  m.cpu_sockets = 1;
  m.memory_bytes = 8ull << 30;
  m.swap_bytes = 0;
  m.dimms = {{"DDR4", 2, 8ull << 30}};
  m.topology_read = true;
  MachineNode n0;
  n0.id = 0;
  n0.cores = {{0, 0, {0, 2}, {{32768, 1, "Data"}}, {}}, {1, 0, {1, 3}, {}, {}}};
  n0.caches = {{1 << 20, 3, "Unified"}};
  n0.memory_bytes = 4ull << 30;
  n0.hugepages = {{2048, 8}};
  n0.distances = {10, 20};
  MachineNode n1;
  n1.id = 1;
  n1.distances = {20, 10};
  m.topology = {n0, n1};
  return m;
}

const ExtraFamily* Find(const std::vector<ExtraFamily>& fs, std::string_view name) {
  for (const ExtraFamily& f : fs) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

std::string Text(const std::vector<ExtraFamily>& fs) {
  std::string out;
  AppendExtraFamilies(fs, ExpositionFormat::kText004, &out);
  return out;
}

TEST(MachineFamilies, SeriesLabelledAsCadvisorWritesThem) {
  const MachineInfo m = TwoNodeMachine();
  std::vector<ExtraFamily> fs;
  AppendMachineFamilies(&m, MetricSelection(), /*identity_labels=*/true, &fs);
  const std::string text = Text(fs);
  EXPECT_NE(text.find("# HELP machine_cpu_cores Number of logical CPU cores.\n# TYPE machine_cpu_cores gauge\n"
                      "machine_cpu_cores{boot_id=\"bid\",machine_id=\"mid\",system_uuid=\"uuid\"} 4\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("machine_memory_bytes{boot_id=\"bid\",machine_id=\"mid\",system_uuid=\"uuid\"} 8589934592\n"),
            std::string::npos);
  EXPECT_NE(text.find("machine_swap_bytes{boot_id=\"bid\",machine_id=\"mid\",system_uuid=\"uuid\"} 0\n"),
            std::string::npos);
  EXPECT_NE(text.find("machine_dimm_count{boot_id=\"bid\",machine_id=\"mid\",system_uuid=\"uuid\",type=\"DDR4\"} 2\n"),
            std::string::npos);
  EXPECT_NE(text.find("machine_scrape_error 0\n"), std::string::npos);
  // Labels sorted by name, the node's shared cache with an empty core_id.
  EXPECT_NE(text.find("machine_cpu_cache_capacity_bytes{boot_id=\"bid\",core_id=\"0\",level=\"1\",machine_id=\"mid\","
                      "node_id=\"0\",system_uuid=\"uuid\",type=\"Data\"} 32768\n"),
            std::string::npos);
  EXPECT_NE(text.find("machine_cpu_cache_capacity_bytes{boot_id=\"bid\",core_id=\"\",level=\"3\",machine_id=\"mid\","
                      "node_id=\"0\",system_uuid=\"uuid\",type=\"Unified\"} 1048576\n"),
            std::string::npos);
  EXPECT_NE(text.find("machine_thread_siblings_count{boot_id=\"bid\",core_id=\"1\",machine_id=\"mid\",node_id=\"0\","
                      "system_uuid=\"uuid\",thread_id=\"3\"} 2\n"),
            std::string::npos);
  EXPECT_NE(
      text.find("machine_node_hugepages_count{boot_id=\"bid\",machine_id=\"mid\",node_id=\"0\",page_size=\"2048\","
                "system_uuid=\"uuid\"} 8\n"),
      std::string::npos);
  EXPECT_NE(text.find("machine_node_distance{boot_id=\"bid\",machine_id=\"mid\",node_id=\"1\",system_uuid=\"uuid\","
                      "target_node_id=\"0\"} 20\n"),
            std::string::npos);
  // Node 1 has no meminfo: no series, not a zero. No source for NVM or books: no family.
  ASSERT_NE(Find(fs, "machine_node_memory_capacity_bytes"), nullptr);
  EXPECT_EQ(Find(fs, "machine_node_memory_capacity_bytes")->series.size(), 1u);
  EXPECT_EQ(Find(fs, "machine_nvm_capacity"), nullptr);
  EXPECT_EQ(Find(fs, "machine_nvm_avg_power_budget_watts"), nullptr);
  EXPECT_EQ(Find(fs, "machine_cpu_books"), nullptr);
  EXPECT_EQ(Find(fs, "machine_thread_siblings_count")->series.size(), 4u);
  EXPECT_EQ(Find(fs, "machine_node_distance")->series.size(), 4u);
}

TEST(MachineFamilies, WithoutIdentityLabelsForTheResourceEdges) {
  const MachineInfo m = TwoNodeMachine();
  std::vector<ExtraFamily> fs;
  AppendMachineFamilies(&m, MetricSelection(), /*identity_labels=*/false, &fs);
  const ExtraFamily* cache = Find(fs, "machine_cpu_cache_capacity_bytes");
  ASSERT_NE(cache, nullptr);
  EXPECT_EQ(cache->labels, (std::vector<std::string_view>{"core_id", "level", "node_id", "type"}));
  EXPECT_TRUE(Find(fs, "machine_cpu_cores")->labels.empty());
}

TEST(MachineFamilies, AFailedReadServesOnlyTheError) {
  MachineInfo m = TwoNodeMachine();
  m.error = "cannot read /proc/cpuinfo";
  std::vector<ExtraFamily> fs;
  AppendMachineFamilies(&m, MetricSelection(), true, &fs);
  ASSERT_EQ(fs.size(), 1u);
  EXPECT_EQ(Text(fs),
            "# HELP machine_scrape_error 1 if there was an error while getting machine metrics, 0 otherwise.\n"
            "# TYPE machine_scrape_error gauge\nmachine_scrape_error 1\n");
  fs.clear();
  AppendMachineFamilies(nullptr, MetricSelection(), true, &fs);
  EXPECT_TRUE(fs.empty());
}

TEST(MachineFamilies, GroupsAndNamesSelectThem) {
  const MachineInfo m = TwoNodeMachine();
  auto names = [&](const MetricSelection& s) {
    std::vector<ExtraFamily> fs;
    AppendMachineFamilies(&m, s, true, &fs);
    std::vector<std::string> out;
    for (const ExtraFamily& f : fs) out.emplace_back(f.name);
    return out;
  };
  auto make = [](std::vector<std::string> enable, std::vector<std::string> disable) {
    auto s = MetricSelection::Make(enable, disable, {});
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return *s;
  };
  const size_t all = names(MetricSelection()).size();
  EXPECT_EQ(all, 13u);  // all but books, drawers and the two NVM families
  // The kubelet's set: an enable list without cpu_topology keeps the machine group.
  const auto kubelet = names(make({"cpu", "memory"}, {}));
  EXPECT_EQ(kubelet.size(), 8u);
  EXPECT_EQ(std::count(kubelet.begin(), kubelet.end(), "machine_node_distance"), 0);
  EXPECT_EQ(names(make({}, {"machine", "cpu_topology"})).size(), 0u);
  EXPECT_EQ(names(make({}, {"cpu_topology"})).size(), 8u);
  EXPECT_EQ(names(make({}, {"machine_swap_bytes"})).size(), all - 1);
  EXPECT_EQ(names(make({"machine_node_distance"}, {"machine"})), std::vector<std::string>{"machine_node_distance"});

  const ReadNeeds none = ReadNeedsOf(make({}, {"machine", "cpu_topology"}));
  EXPECT_FALSE(none.machine);
  EXPECT_FALSE(none.machine_topology);
  const ReadNeeds flat = ReadNeedsOf(make({}, {"cpu_topology"}));
  EXPECT_TRUE(flat.machine);
  EXPECT_FALSE(flat.machine_topology);
  EXPECT_TRUE(ReadNeedsOf(MetricSelection()).machine_topology);
  EXPECT_FALSE(MetricSelection::CheckName("machine_bogus").ok());
  EXPECT_TRUE(MetricSelection::CheckName("machine").ok());
}

}  // namespace
}  // namespace statlet::metrics
