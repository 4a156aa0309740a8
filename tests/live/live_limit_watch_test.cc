// Limits served from memory between writes (collector/limit_watch.h), on this machine's
// kernel: a limit is read once, then only after a write of its file; a refused write
// changes nothing; an overflowed event queue makes every limit read again.
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "collector/cgroup_files.h"
#include "collector/collector.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"

namespace statlet {
namespace {

using testing::Child;
using testing::HostHierarchies;
using testing::LiveCgroup;
using testing::UniqueName;

// What the CRI pod stats calls collect: every reported cgroup's files (<root>/work is no
// container), without the detail files.
constexpr CollectParts kPodStatsParts = CollectParts(CollectParts::kNonContainerFiles);

// The host's memory limit file and its pids limit file.
struct LimitFiles {
  Hierarchy memory_h = kNumHierarchies, pids_h = kNumHierarchies;
  const char* memory = nullptr;
  bool ok() const { return memory_h != kNumHierarchies && pids_h != kNumHierarchies; }
};

LimitFiles HostLimitFiles() {
  const CgroupHierarchies& h = HostHierarchies();
  LimitFiles f;
  if (h.v2_memory) f = {kUnified, kNumHierarchies, "memory.max"};
  else if (h.has(kV1Memory)) f = {kV1Memory, kNumHierarchies, "memory.limit_in_bytes"};
  if (h.v2_pids) f.pids_h = kUnified;
  else if (h.has(kV1Pids)) f.pids_h = kV1Pids;
  return f;
}

// A write through a file descriptor of its own: whether the kernel took it.
bool WriteFile(const std::string& path, const std::string& value) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::write(fd, value.data(), value.size()) == static_cast<ssize_t>(value.size());
  ::close(fd);
  return ok;
}

class LiveLimitWatch : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
    files_ = HostLimitFiles();
    if (!files_.ok()) GTEST_SKIP() << "needs the memory and pids controllers";
    root_ = "/" + UniqueName("statlet-limits");
  }
  // <root>/work with a sleeping process in it, its limit files, and a collector of <root>.
  void StartWork(bool watch, size_t max_watches = CollectorOptions().max_limit_watches) {
    top_ = std::make_unique<LiveCgroup>(root_);
    work_ = std::make_unique<LiveCgroup>(root_ + "/work");
    ASSERT_TRUE(work_->ok()) << work_->error();
    sleeper_ = std::make_unique<Child>(Child::Sleeper());
    ASSERT_TRUE(work_->Add(sleeper_->pid()));
    memory_limit_ = work_->Dir(files_.memory_h) + "/" + files_.memory;
    pids_limit_ = work_->Dir(files_.pids_h) + "/pids.max";
    CollectorOptions o;
    o.subtrees = {root_};
    o.watch_limits = watch;
    o.max_limit_watches = max_watches;
    auto c = Collector::Create(o);
    ASSERT_TRUE(c.ok()) << c.status().ToString();
    collector_ = std::move(*c);
  }
  const CgroupStats* Work(const Snapshot& s) const { return s.FindByPath(root_ + "/work"); }

  LimitFiles files_;
  std::string root_, memory_limit_, pids_limit_;
  std::unique_ptr<LiveCgroup> top_, work_;
  std::unique_ptr<Child> sleeper_;  // ends before its cgroups are removed
  std::unique_ptr<Collector> collector_;
};

TEST_F(LiveLimitWatch, AWrittenLimitIsReadAgainTheOthersServedFromMemory) {
  ASSERT_NO_FATAL_FAILURE(StartWork(true));
  Collector* c = collector_.get();
  auto first = c->Collect(kPodStatsParts);
  ASSERT_TRUE(first.ok());
  EXPECT_EQ(first->collection.files_cached, 0u) << "nothing is known before the first read";
  auto second = c->Collect(kPodStatsParts);
  ASSERT_TRUE(second.ok());
  const uint64_t cached = second->collection.files_cached;
  EXPECT_GT(cached, 2u) << "every limit of every reported cgroup (two here), at least the memory and pids ones";
  // The same files, either read or served from memory.
  EXPECT_EQ(second->collection.files_read + cached, first->collection.files_read);

  // A write is seen by the next collection, which reads that one file again.
  ASSERT_TRUE(WriteFile(memory_limit_, std::to_string(64u << 20)));
  auto third = c->Collect(kPodStatsParts);
  ASSERT_TRUE(third.ok());
  const CgroupStats* s = Work(*third);
  ASSERT_NE(s, nullptr);
  ASSERT_TRUE(s->memory.max_bytes.has_value());
  EXPECT_EQ(*s->memory.max_bytes, uint64_t{64} << 20);
  EXPECT_EQ(third->collection.files_cached, cached - 1);
  EXPECT_EQ(third->collection.files_read, second->collection.files_read + 1);

  ASSERT_TRUE(WriteFile(pids_limit_, "77"));
  auto fourth = c->Collect(kPodStatsParts);
  ASSERT_TRUE(fourth.ok());
  s = Work(*fourth);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->process.pids_max, 77u);
  EXPECT_EQ(s->memory.max_bytes, uint64_t{64} << 20) << "served from memory";

  // A write the kernel refuses changes nothing and costs no read.
  EXPECT_FALSE(WriteFile(memory_limit_, "not-a-number"));
  auto fifth = c->Collect(kPodStatsParts);
  ASSERT_TRUE(fifth.ok());
  s = Work(*fifth);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->memory.max_bytes, uint64_t{64} << 20);
  EXPECT_EQ(s->process.pids_max, 77u);
  EXPECT_EQ(fifth->collection.files_cached, cached);
}

TEST_F(LiveLimitWatch, WithoutWatchingEveryLimitIsReadEveryTime) {
  ASSERT_NO_FATAL_FAILURE(StartWork(false));
  auto first = collector_->Collect(kPodStatsParts);
  ASSERT_TRUE(first.ok());
  ASSERT_TRUE(WriteFile(memory_limit_, std::to_string(96u << 20)));
  auto second = collector_->Collect(kPodStatsParts);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->collection.files_cached, 0u);
  EXPECT_EQ(second->collection.files_read, first->collection.files_read);
  const CgroupStats* s = Work(*second);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->memory.max_bytes, uint64_t{96} << 20);
}

// The watches are capped (they count against fs.inotify.max_user_watches, shared by every
// process of the user): the limits beyond the cap are read every time, as right.
TEST_F(LiveLimitWatch, LimitsBeyondTheWatchCapAreReadEveryTime) {
  ASSERT_NO_FATAL_FAILURE(StartWork(true, 2));
  auto first = collector_->Collect(kPodStatsParts);
  ASSERT_TRUE(first.ok());
  auto second = collector_->Collect(kPodStatsParts);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->collection.files_cached, 2u);
  EXPECT_EQ(second->collection.files_read + 2, first->collection.files_read);
  ASSERT_TRUE(WriteFile(memory_limit_, std::to_string(80u << 20)));
  ASSERT_TRUE(WriteFile(pids_limit_, "66"));
  auto third = collector_->Collect(kPodStatsParts);
  ASSERT_TRUE(third.ok());
  const CgroupStats* s = Work(*third);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->memory.max_bytes, uint64_t{80} << 20);
  EXPECT_EQ(s->process.pids_max, 66u);
}

// More events than the queue holds: the kernel drops them and says so once; every limit is
// then read again, so none is left stale.
TEST_F(LiveLimitWatch, AnOverflowedQueueMakesEveryLimitReadAgain) {
  unsigned long queued = 0;
  std::ifstream("/proc/sys/fs/inotify/max_queued_events") >> queued;
  if (queued == 0 || queued > (1u << 20)) GTEST_SKIP() << "fs.inotify.max_queued_events is " << queued;
  ASSERT_NO_FATAL_FAILURE(StartWork(true));
  Collector* c = collector_.get();
  ASSERT_TRUE(c->Collect(kPodStatsParts).ok());
  auto warm = c->Collect(kPodStatsParts);
  ASSERT_TRUE(warm.ok());
  ASSERT_GT(warm->collection.files_cached, 0u);

  // Two files written in turn: consecutive events differ, so the kernel cannot merge them.
  const int mem_fd = ::open(memory_limit_.c_str(), O_WRONLY | O_CLOEXEC);
  const int pids_fd = ::open(pids_limit_.c_str(), O_WRONLY | O_CLOEXEC);
  ASSERT_GE(mem_fd, 0);
  ASSERT_GE(pids_fd, 0);
  for (unsigned long i = 0; i <= queued / 2 + 16; ++i) {
    const std::string mem = std::to_string((uint64_t{32} << 20) + (i % 2) * 4096), pids = std::to_string(100 + i % 7);
    ASSERT_EQ(::pwrite(mem_fd, mem.data(), mem.size(), 0), static_cast<ssize_t>(mem.size()));
    ASSERT_EQ(::pwrite(pids_fd, pids.data(), pids.size(), 0), static_cast<ssize_t>(pids.size()));
  }
  // The last values, written after the queue was full: their events were dropped too.
  ASSERT_EQ(::pwrite(mem_fd, "50331648", 8, 0), 8);
  ASSERT_EQ(::pwrite(pids_fd, "55", 2, 0), 2);
  ::close(mem_fd);
  ::close(pids_fd);

  auto after = c->Collect(kPodStatsParts);
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->collection.files_cached, 0u) << "every limit read again";
  const CgroupStats* s = Work(*after);
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(s->memory.max_bytes, uint64_t{48} << 20);
  EXPECT_EQ(s->process.pids_max, 55u);
  auto again = c->Collect(kPodStatsParts);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->collection.files_cached, warm->collection.files_cached) << "and watched again";
}

}  // namespace
}  // namespace statlet
