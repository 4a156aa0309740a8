// hugetlb readers on fixture trees: the v2 files (hugetlb.<size>.current/max/events) and
// the v1 ones (usage_in_bytes, max_usage_in_bytes, limit_in_bytes, failcnt), one entry per
// huge page size the (fixture) kernel lists. This host mounts no hugetlb hierarchy and has
// no huge pages, so the formats come from the kernel's cgroup documentation.
#include <gtest/gtest.h>

#include "collector/cgroup_files.h"
#include "collector/collector.h"
#include "collector/sampler.h"
#include "tests/collector/fixture_tree.h"

namespace statlet {
namespace {

using testing::MakeDirs;
using testing::TempDir;
using testing::WriteFile;

const std::string kCtr = "/kubepods/burstable/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0/" + std::string(64, 'a');

class HugetlbFixture : public ::testing::Test {
 protected:
  void SetUp() override {
    pages_ = tmp_.path() + "/hugepages";
    MakeDirs(pages_ + "/hugepages-1048576kB");
    MakeDirs(pages_ + "/hugepages-2048kB");
    MakeDirs(pages_ + "/not-a-size");
  }
  // Creates every directory of `path` under `root` with empty process lists.
  void Dirs(const std::string& root, const std::string& path, const char* threads_file) {
    std::string d = root;
    MakeDirs(d);
    WriteFile(d + "/cgroup.procs", "");
    size_t pos = 1;
    while (pos <= path.size()) {
      size_t next = path.find('/', pos);
      if (next == std::string::npos) next = path.size();
      d = root + path.substr(0, next);
      MakeDirs(d);
      WriteFile(d + "/cgroup.procs", "");
      WriteFile(d + "/" + threads_file, "");
      pos = next + 1;
    }
  }
  const CgroupStats& Collect(const std::string& mount) {
    CollectorOptions o;
    o.cgroup_mount = mount;
    o.proc_root = tmp_.path() + "/noproc";
    o.hugepages_dir = pages_;
    auto c = Collector::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    sampler_ = std::make_unique<Sampler>(std::move(*c), nullptr, nullptr);
    auto s = sampler_->Get(std::chrono::nanoseconds(0));
    EXPECT_TRUE(s.ok());
    snap_ = *s;
    const CgroupStats* cs = snap_->FindByPath(kCtr);
    EXPECT_NE(cs, nullptr);
    return *cs;
  }
  TempDir tmp_;
  std::string pages_;
  std::unique_ptr<Sampler> sampler_;
  SnapshotPtr snap_;
};

TEST(HugePageSizes, SmallestFirstInTheControllersNaming) {
  TempDir t;
  MakeDirs(t.path() + "/hugepages-1048576kB");
  MakeDirs(t.path() + "/hugepages-2048kB");
  MakeDirs(t.path() + "/hugepages-64kB");
  EXPECT_EQ(HugePageSizes(t.path()), (std::vector<std::string>{"64KB", "2MB", "1GB"}));
  EXPECT_TRUE(HugePageSizes(t.path() + "/missing").empty());
}

TEST_F(HugetlbFixture, CgroupV2FilesPerPageSize) {
  std::string root = tmp_.path() + "/v2";
  MakeDirs(root);
  WriteFile(root + "/cgroup.controllers", "cpuset cpu io memory hugetlb pids\n");
  Dirs(root, kCtr, "cgroup.threads");
  WriteFile(root + kCtr + "/hugetlb.2MB.current", "4194304\n");
  WriteFile(root + kCtr + "/hugetlb.2MB.max", "8388608\n");
  WriteFile(root + kCtr + "/hugetlb.2MB.events", "max 3\n");
  WriteFile(root + kCtr + "/hugetlb.1GB.current", "0\n");
  WriteFile(root + kCtr + "/hugetlb.1GB.max", "max\n");
  WriteFile(root + kCtr + "/hugetlb.1GB.events", "max 0\n");
  const CgroupStats& c = Collect(root);
  ASSERT_EQ(c.memory.hugetlb.size(), 2u);
  const auto& two = c.memory.hugetlb[0];
  EXPECT_EQ(two.page_size, "2MB");
  EXPECT_EQ(two.usage_bytes, 4194304u);
  EXPECT_EQ(two.limit_bytes, 8388608u);
  EXPECT_EQ(two.failcnt, 3u);
  EXPECT_FALSE(two.max_usage_bytes.has_value()) << "cgroup v2 records no hugetlb peak";
  const auto& gig = c.memory.hugetlb[1];
  EXPECT_EQ(gig.page_size, "1GB");
  EXPECT_EQ(gig.usage_bytes, 0u);
  EXPECT_EQ(gig.limit_bytes, kUnlimited);
  EXPECT_EQ(gig.failcnt, 0u);
  EXPECT_TRUE(snap_->read_errors.empty());
  // The pod has no hugetlb files: no entries, not zeros.
  const CgroupStats* pod = snap_->FindByPath(kCtr.substr(0, kCtr.rfind('/')));
  ASSERT_NE(pod, nullptr);
  EXPECT_TRUE(pod->memory.hugetlb.empty());
}

TEST_F(HugetlbFixture, CgroupV1FilesPerPageSize) {
  std::string root = tmp_.path() + "/v1";
  Dirs(root + "/hugetlb", kCtr, "tasks");
  std::string d = root + "/hugetlb" + kCtr;
  WriteFile(d + "/hugetlb.2MB.usage_in_bytes", "2097152\n");
  WriteFile(d + "/hugetlb.2MB.max_usage_in_bytes", "6291456\n");
  WriteFile(d + "/hugetlb.2MB.limit_in_bytes", "9223372036852678656\n");  // LONG_MAX rounded to 2 MiB
  WriteFile(d + "/hugetlb.2MB.failcnt", "1\n");
  WriteFile(d + "/hugetlb.1GB.usage_in_bytes", "1073741824\n");
  WriteFile(d + "/hugetlb.1GB.max_usage_in_bytes", "2147483648\n");
  WriteFile(d + "/hugetlb.1GB.limit_in_bytes", "2147483648\n");
  WriteFile(d + "/hugetlb.1GB.failcnt", "bogus\n");
  const CgroupStats& c = Collect(root);
  ASSERT_EQ(c.memory.hugetlb.size(), 2u);
  const auto& two = c.memory.hugetlb[0];
  EXPECT_EQ(two.page_size, "2MB");
  EXPECT_EQ(two.usage_bytes, 2097152u);
  EXPECT_EQ(two.max_usage_bytes, 6291456u);
  EXPECT_EQ(two.limit_bytes, kUnlimited);
  EXPECT_EQ(two.failcnt, 1u);
  const auto& gig = c.memory.hugetlb[1];
  EXPECT_EQ(gig.page_size, "1GB");
  EXPECT_EQ(gig.usage_bytes, 1073741824u);
  EXPECT_EQ(gig.max_usage_bytes, 2147483648u);
  EXPECT_EQ(gig.limit_bytes, 2147483648u);
  EXPECT_FALSE(gig.failcnt.has_value()) << "a malformed file costs only its own field";
  bool counted = false;
  for (const auto& e : snap_->read_errors) counted |= e.file == "hugetlb.1GB.failcnt" && e.reason == "parse";
  EXPECT_TRUE(counted);
}

}  // namespace
}  // namespace statlet
