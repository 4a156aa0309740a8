// The collector with a CgroupFileSource (what the eBPF cgroup iterator provides): files
// it renders replace reads where its walk saw the cgroup, the rest comes from the files,
// a failed walk degrades to the files with a count, and a file a cgroup lacks stays absent.
#include <sys/stat.h>

#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>

#include "collector/cgroup_file_source.h"
#include "collector/collector.h"
#include "tests/collector/fixture_tree.h"

namespace statlet {
namespace {

using testing::MakeDirs;
using testing::TempDir;
using testing::WriteFile;

class FakeSource : public CgroupFileSource {
 public:
  int FileIndex(Hierarchy h, std::string_view file) const override {
    if (h != kUnified) return -1;
    if (file == "cpu.stat") return 0;
    if (file == "memory.current") return 1;
    return -1;
  }
  Status Refresh(uint32_t hierarchies) override {
    refreshes++;
    last_hierarchies = hierarchies;
    return fail ? Status(StatusCode::kInternal, "walk did not complete") : Status::Ok();
  }
  bool Render(uint64_t id, int index, ReadBuffer* buf) const override {
    auto it = content.find({id, index});
    if (it == content.end()) return false;
    std::memcpy(buf->data(), it->second.data(), it->second.size());
    buf->set_len(it->second.size());
    return true;
  }
  std::map<std::pair<uint64_t, int>, std::string> content;
  bool fail = false;
  int refreshes = 0;
  uint32_t last_hierarchies = 0;
};

class FileSourceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_.path() + "/cgroup";
    MakeDirs(root_);
    WriteFile(root_ + "/cgroup.controllers", "cpu memory pids\n");
    WriteFile(root_ + "/cgroup.procs", "");
    for (const char* name : {"a", "b", "c"}) {
      const std::string d = root_ + "/" + name;
      MakeDirs(d);
      WriteFile(d + "/cgroup.procs", "");
      WriteFile(d + "/cpu.stat", "usage_usec 100\nuser_usec 60\nsystem_usec 40\n");
      if (std::string(name) != "c") WriteFile(d + "/memory.current", "4096\n");  // c has none
      struct stat st;
      stat(d.c_str(), &st);
      ids_[name] = st.st_ino;
    }
  }

  Snapshot Collect(Collector* c) {
    auto s = c->Collect();
    EXPECT_TRUE(s.ok()) << s.status().ToString();
    return std::move(*s);
  }

  std::unique_ptr<Collector> NewCollector(size_t min_walked_files = 0) {
    CollectorOptions o;
    o.cgroup_mount = root_;
    o.proc_root = tmp_.path() + "/noproc";
    o.include_empty = true;
    o.file_source = &source_;
    o.min_walked_files = min_walked_files;  // 0: a walk for the few cgroups here too
    auto c = Collector::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    return std::move(*c);
  }

  const CgroupStats& Of(const Snapshot& s, const std::string& path) {
    const CgroupStats* c = s.FindByPath(path);
    EXPECT_NE(c, nullptr) << path;
    static const CgroupStats none;
    return c ? *c : none;
  }

  TempDir tmp_;
  std::string root_;
  std::map<std::string, uint64_t> ids_;
  FakeSource source_;
};

TEST_F(FileSourceTest, RenderedFilesReplaceReadsWhereTheWalkSawTheCgroup) {
  source_.content[{ids_["a"], 0}] = "usage_usec 7\nuser_usec 5\nsystem_usec 2\n";
  source_.content[{ids_["a"], 1}] = "8192\n";
  auto c = NewCollector();
  Snapshot s = Collect(c.get());
  EXPECT_EQ(source_.refreshes, 1);
  EXPECT_EQ(Of(s, "/a").cpu.usage_ns, 7000u);
  EXPECT_EQ(Of(s, "/a").cpu.user_ns, 5000u);
  EXPECT_EQ(Of(s, "/a").memory.usage_bytes, 8192u);
  // The walk did not see b: its files are read.
  EXPECT_EQ(Of(s, "/b").cpu.usage_ns, 100000u);
  EXPECT_EQ(Of(s, "/b").memory.usage_bytes, 4096u);
  EXPECT_TRUE(s.read_errors.empty());
}

// A walk covers a whole hierarchy at a fixed cost: it is asked for only when the collection
// reads enough of its files there (4 cgroups x 2 rendered files here), and only for that
// hierarchy; below, the files are read.
TEST_F(FileSourceTest, AWalkOnlyWhereEnoughFilesPayForIt) {
  source_.content[{ids_["a"], 0}] = "usage_usec 7\nuser_usec 5\nsystem_usec 2\n";
  auto few = NewCollector(9);
  Snapshot s = Collect(few.get());
  EXPECT_EQ(source_.refreshes, 0);
  EXPECT_EQ(Of(s, "/a").cpu.usage_ns, 100000u) << "read from its file";
  auto enough = NewCollector(8);
  s = Collect(enough.get());
  EXPECT_EQ(source_.refreshes, 1);
  EXPECT_EQ(source_.last_hierarchies, 1u << kUnified);
  EXPECT_EQ(Of(s, "/a").cpu.usage_ns, 7000u) << "rendered";
}

TEST_F(FileSourceTest, AFileTheCgroupLacksStaysAbsent) {
  source_.content[{ids_["c"], 0}] = "usage_usec 9\nuser_usec 9\nsystem_usec 0\n";
  source_.content[{ids_["c"], 1}] = "12288\n";  // c has no memory.current
  auto c = NewCollector();
  Snapshot s = Collect(c.get());
  EXPECT_EQ(Of(s, "/c").cpu.usage_ns, 9000u);
  EXPECT_FALSE(Of(s, "/c").memory.usage_bytes.has_value());
}

TEST_F(FileSourceTest, AFailedWalkReadsTheFilesAndIsCounted) {
  source_.content[{ids_["a"], 0}] = "usage_usec 7\nuser_usec 5\nsystem_usec 2\n";
  source_.fail = true;
  auto c = NewCollector();
  Collect(c.get());
  Snapshot s = Collect(c.get());
  EXPECT_EQ(Of(s, "/a").cpu.usage_ns, 100000u);
  ASSERT_EQ(s.read_errors.size(), 1u);
  EXPECT_EQ(s.read_errors[0].file, "cgroup iterator");
  EXPECT_EQ(s.read_errors[0].reason, "io");
  EXPECT_EQ(s.read_errors[0].count, 2u);
  // The walk works again: its values are back.
  source_.fail = false;
  EXPECT_EQ(Of(Collect(c.get()), "/a").cpu.usage_ns, 7000u);
}

TEST_F(FileSourceTest, UnparsableRenderingIsCountedAsTheFilesParseError) {
  source_.content[{ids_["a"], 1}] = "not a number\n";
  auto c = NewCollector();
  Snapshot s = Collect(c.get());
  EXPECT_FALSE(Of(s, "/a").memory.usage_bytes.has_value());
  ASSERT_EQ(s.read_errors.size(), 1u);
  EXPECT_EQ(s.read_errors[0].file, "memory.current");
  EXPECT_EQ(s.read_errors[0].reason, "parse");
}

}  // namespace
}  // namespace statlet
