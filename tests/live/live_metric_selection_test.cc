// A disabled metric group's files are not read: the same real cgroups collected with every
// file set and with the sets --metrics.disable=diskIO,pressure,psi,memory_qos,hugetlb,process
// leaves out (metrics::ReadNeedsOf), on this machine's hierarchies.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "collector/cgroup_files.h"
#include "collector/collector.h"
#include "metrics/metric_selection.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"

namespace statlet {
namespace {

using testing::Child;
using testing::HostHierarchies;
using testing::LiveCgroup;
using testing::UniqueName;

TEST(LiveMetricSelection, ADisabledGroupsFilesAreNotRead) {
  if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
  const std::string root = "/" + UniqueName("statlet-select");
  // The shared parents belong to `top`, made first and removed last: a container's
  // LiveCgroup removes the parents it made, and one shared by the others would stay busy
  // (retried until its timeout) while they are still there.
  LiveCgroup top(root + "/kubepods/burstable");
  std::vector<std::unique_ptr<LiveCgroup>> ctrs;
  std::vector<Child> sleepers;
  for (int i = 0; i < 4; ++i) {
    const std::string id(64, static_cast<char>('a' + i));
    ctrs.push_back(std::make_unique<LiveCgroup>(root + "/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1d" +
                                                std::to_string(i) + "/" + id));
    sleepers.push_back(Child::Sleeper());
    ASSERT_TRUE(ctrs.back()->Add(sleepers.back().pid()));
  }
  auto sel = metrics::MetricSelection::Make({}, {"diskIO", "pressure", "psi", "memory_qos", "hugetlb", "process"}, {});
  ASSERT_TRUE(sel.ok());
  const metrics::ReadNeeds needs = metrics::ReadNeedsOf(*sel);
  FileSets lean_sets{
      .pressure = needs.pressure_files, .io = needs.io_files, .hugetlb = needs.hugetlb_files, .pids = needs.pids_files};
  auto collect = [&](const FileSets& sets, bool process_fds) {
    CollectorOptions o;
    o.subtrees = {root};
    o.files = sets;
    o.process_fds = process_fds;
    auto c = Collector::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    StatusOr<Snapshot> s = (*c)->Collect(CollectParts::All());  // the first: every file read, none cached
    EXPECT_TRUE(s.ok());
    return std::move(*s);
  };
  const Snapshot full = collect(FileSets{}, true);
  const Snapshot lean = collect(lean_sets, needs.process_fds);
  ASSERT_EQ(full.cgroups.size(), lean.cgroups.size());

  // Exactly the left-out readers' files that exist for the reported cgroups are not read.
  const CgroupHierarchies& h = HostHierarchies();
  const auto sizes = HugePageSizes("/sys/kernel/mm/hugepages");
  const auto all_plan = BuildReadPlan(h, sizes), lean_plan = BuildReadPlan(h, sizes, lean_sets);
  size_t left_out = 0;
  for (const CgroupStats& c : full.cgroups) {
    for (const CgroupFileReader* r : all_plan) {
      if (std::find(lean_plan.begin(), lean_plan.end(), r) != lean_plan.end()) continue;
      left_out += ::access((h.mount[r->hierarchy] + c.id.cgroup_path + "/" + r->name).c_str(), F_OK) == 0;
    }
  }
  ASSERT_GT(left_out, 0u);
  EXPECT_EQ(full.collection.files_read - lean.collection.files_read, left_out);
  std::printf(
      "files read per collection of %zu cgroups: %llu with every group, %llu with "
      "diskIO,pressure,psi,memory_qos,hugetlb,process disabled (%zu fewer); plan %zu -> %zu readers\n",
      full.cgroups.size(), static_cast<unsigned long long>(full.collection.files_read),
      static_cast<unsigned long long>(lean.collection.files_read), left_out, all_plan.size(), lean_plan.size());
  // What stays is read as before.
  for (size_t i = 0; i < full.cgroups.size(); ++i) {
    EXPECT_EQ(full.cgroups[i].memory.usage_bytes.has_value(), lean.cgroups[i].memory.usage_bytes.has_value());
    EXPECT_EQ(full.cgroups[i].cpu.usage_ns.has_value(), lean.cgroups[i].cpu.usage_ns.has_value());
    EXPECT_FALSE(lean.cgroups[i].cpu.psi.present());
    EXPECT_TRUE(lean.cgroups[i].io.devices.empty());
  }
}

}  // namespace
}  // namespace statlet
