// The per-process scans on this machine's kernel: real processes in a real container
// cgroup holding a known number of files and sockets, counted from /proc/<pid>/fd, and the
// soft RLIMIT_NOFILE the first process runs with.
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "collector/collector.h"
#include "collector/process_fd_scanner.h"
#include "collector/sampler.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"

namespace statlet {
namespace {

using testing::Child;
using testing::LiveCgroup;
using testing::UniqueName;

constexpr int kFiles = 37;
constexpr int kSocketPairs = 5;
constexpr int kGrandchildFiles = 3;
constexpr rlim_t kSoftNofile = 777;

// What the process holds already (inherited from the test runner), found without procfs:
// fcntl on every possible fd, fstat for the sockets. Packed as fds | sockets << 32.
uint64_t InheritedFds() {
  uint64_t fds = 0, sockets = 0;
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  for (int fd = 0; fd < static_cast<int>(rl.rlim_cur); ++fd) {
    if (fcntl(fd, F_GETFD) == -1) continue;
    ++fds;
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISSOCK(st.st_mode)) ++sockets;
  }
  return fds | sockets << 32;
}

void OpenFiles(int n) {
  for (int i = 0; i < n; ++i) {
    if (open("/dev/null", O_RDONLY) < 0) _exit(3);
  }
}

// The container's workload: kFiles files and kSocketPairs socket pairs, then a second
// process holding everything inherited plus kGrandchildFiles files of its own.
uint64_t HoldFds() {
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  rl.rlim_cur = kSoftNofile;
  if (setrlimit(RLIMIT_NOFILE, &rl) != 0) _exit(3);
  uint64_t inherited = InheritedFds();
  OpenFiles(kFiles);
  for (int i = 0; i < kSocketPairs; ++i) {
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) != 0) _exit(3);
  }
  int ready[2];
  if (pipe(ready) != 0) _exit(3);
  if (fork() == 0) {
    close(ready[0]);
    OpenFiles(kGrandchildFiles);
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(3);
    while (true) pause();
  }
  close(ready[1]);
  char c;
  if (read(ready[0], &c, 1) != 1) _exit(3);
  close(ready[0]);
  return inherited;
}

class LiveProcessFds : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
    root_ = "/" + UniqueName("statlet-fds");
  }
  SnapshotPtr Collect(bool process_fds) {
    CollectorOptions o;
    o.subtrees = {root_};
    o.process_fds = process_fds;
    auto c = Collector::Create(o);
    EXPECT_TRUE(c.ok()) << c.status().ToString();
    Sampler s(std::move(*c), nullptr, nullptr);
    auto r = s.Get(std::chrono::nanoseconds(0));
    EXPECT_TRUE(r.ok());
    return *r;
  }
  std::string root_;
};

TEST_F(LiveProcessFds, ExactFdSocketAndUlimitCounts) {
  const std::string id(64, 'b');
  LiveCgroup top(root_);
  LiveCgroup pod(root_ + "/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0");
  LiveCgroup ctr(pod.path() + "/" + id);
  Child workload(HoldFds);
  ASSERT_TRUE(workload.StartIn(ctr));
  const std::optional<uint64_t> held = workload.Result();
  ASSERT_TRUE(held.has_value());
  const uint64_t inherited = *held;
  const uint64_t base_fds = inherited & 0xffffffff, base_sockets = inherited >> 32;

  SnapshotPtr s = Collect(true);
  const CgroupStats* c = s->FindByContainerId(id);
  ASSERT_NE(c, nullptr);
  ASSERT_EQ(c->id.kind, CgroupKind::kContainer);
  EXPECT_EQ(c->process.processes, 2u);
  // The first process: inherited + files + 2 per socket pair. The second: all of that
  // (forked with a pipe end it closed again) plus its own files.
  const uint64_t first = base_fds + kFiles + 2 * kSocketPairs;
  const uint64_t second = first + 1 + kGrandchildFiles;
  ASSERT_TRUE(c->process.file_descriptors.has_value());
  EXPECT_EQ(*c->process.file_descriptors, first + second);
  ASSERT_TRUE(c->process.sockets.has_value());
  EXPECT_EQ(*c->process.sockets, 2 * (base_sockets + 2 * kSocketPairs));
  ASSERT_TRUE(c->process.max_open_files_soft.has_value());
  EXPECT_EQ(*c->process.max_open_files_soft, kSoftNofile);
  EXPECT_TRUE(s->read_errors.empty());

  // Only containers are scanned: the pod has processes below it but no counts.
  const CgroupStats* p = s->FindByPath(pod.path());
  ASSERT_NE(p, nullptr);
  EXPECT_FALSE(p->process.file_descriptors.has_value());

  // Off unless asked for.
  SnapshotPtr off = Collect(false);
  const CgroupStats* c2 = off->FindByContainerId(id);
  ASSERT_NE(c2, nullptr);
  EXPECT_FALSE(c2->process.file_descriptors.has_value());
  EXPECT_FALSE(c2->process.max_open_files_soft.has_value());
}

TEST_F(LiveProcessFds, EmptyContainerCountsZero) {
  const std::string id(64, 'c');
  LiveCgroup top(root_);
  LiveCgroup pod(root_ + "/kubepods/besteffort/pod0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f1");
  LiveCgroup ctr(pod.path() + "/" + id);
  SnapshotPtr s = Collect(true);
  const CgroupStats* c = s->FindByContainerId(id);
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->process.file_descriptors, 0u);
  EXPECT_EQ(c->process.sockets, 0u);
  EXPECT_FALSE(c->process.max_open_files_soft.has_value()) << "no process to ask";
}

TEST(ProcessFdScanner, VanishedProcessIsGoneNotAnError) {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(waitpid(pid, nullptr, 0), pid);  // reaped: /proc/<pid> no longer exists
  ProcessFdScanner scanner("/proc");
  ProcessFdCounts counts;
  int err = 0;
  EXPECT_EQ(scanner.Count(static_cast<uint32_t>(pid), &counts, &err), ReadOutcome::kGone);
  EXPECT_EQ(counts.fds, 0u);
  uint64_t soft = 0;
  EXPECT_EQ(scanner.MaxOpenFilesSoft(static_cast<uint32_t>(pid), &soft, &err), ReadOutcome::kGone);
}

TEST(ProcessFdScanner, LimitsFileWhenPrlimitIsNotUsable) {
  // A proc root given by path (not this process's /proc) is read through /proc/<pid>/limits.
  ProcessFdScanner via_file("/proc/.");
  ProcessFdScanner via_prlimit("/proc");
  uint64_t a = 0, b = 0;
  int err = 0;
  ASSERT_EQ(via_file.MaxOpenFilesSoft(static_cast<uint32_t>(getpid()), &a, &err), ReadOutcome::kOk) << err;
  ASSERT_EQ(via_prlimit.MaxOpenFilesSoft(static_cast<uint32_t>(getpid()), &b, &err), ReadOutcome::kOk) << err;
  struct rlimit rl;
  getrlimit(RLIMIT_NOFILE, &rl);
  EXPECT_EQ(a, rl.rlim_cur);
  EXPECT_EQ(b, rl.rlim_cur);
}

}  // namespace
}  // namespace statlet
