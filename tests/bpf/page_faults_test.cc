// The faults probe: fresh anonymous pages give minor faults, uncached file pages major ones.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdlib>

#include "tests/bpf/probe_test_support.h"

namespace statlet::testing {
namespace {

constexpr size_t kPage = 4096;

TEST(PageFaultsProbe, TouchingFreshPagesCountsOneMinorFaultEach) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup cg("faults");
  ASSERT_TRUE(cg.ok()) << cg.error();

  constexpr size_t kPages = 8192;  // 32 MiB
  Child child(
      [] {
        size_t len = kPages * kPage;
        auto* p =
            static_cast<volatile char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (p == MAP_FAILED) return 3;
        madvise(const_cast<char*>(p), len, MADV_NOHUGEPAGE);  // one fault per 4 KiB page
        for (size_t i = 0; i < kPages; i++) p[i * kPage] = 1;
        return 0;
      },
      Child::kExits);
  ASSERT_TRUE(child.StartIn(cg));
  int status = child.Wait(std::chrono::seconds(30));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  BpfCgroupStats s = CollectUntil(*probes, cg.id(), [](const BpfCgroupStats& v) {
    return v.minor_faults.value_or(0) >= kPages;
  });
  ASSERT_TRUE(s.minor_faults.has_value());
  ASSERT_TRUE(s.major_faults.has_value());
  EXPECT_GE(*s.minor_faults, kPages);
  // The rest: copy-on-write of the forked image and exit, a few hundred at most.
  EXPECT_LE(*s.minor_faults, kPages + 1024);
  EXPECT_EQ(*s.major_faults, 0u);
}

TEST(PageFaultsProbe, ReadingUncachedFilePagesCountsMajorFaults) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup cg("majfaults");
  ASSERT_TRUE(cg.ok()) << cg.error();

  constexpr size_t kPages = 256;
  char path[] = "/var/tmp/statlet-bpf-majfault-XXXXXX";
  int fd = mkstemp(path);
  ASSERT_GE(fd, 0);
  unlink(path);  // gone with the fd, also when the test fails
  std::vector<char> data(kPages * kPage, 'x');
  ASSERT_EQ(write(fd, data.data(), data.size()), static_cast<ssize_t>(data.size()));
  ASSERT_EQ(fsync(fd), 0);  // clean pages can be dropped from the page cache
  ASSERT_EQ(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);

  Child child(
      [fd] {
        size_t len = kPages * kPage;
        auto* p = static_cast<volatile char*>(mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0));
        if (p == MAP_FAILED) return 3;
        madvise(const_cast<char*>(p), len, MADV_RANDOM);  // no readahead: each page its own read
        int sum = 0;
        for (size_t i = 0; i < kPages; i++) sum += p[i * kPage];
        return sum == static_cast<int>(kPages) * 'x' ? 0 : 4;
      },
      Child::kExits);
  ASSERT_TRUE(child.StartIn(cg));
  int status = child.Wait(std::chrono::seconds(30));
  close(fd);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  BpfCgroupStats s = CollectUntil(*probes, cg.id(), [](const BpfCgroupStats& v) {
    return v.major_faults.value_or(0) >= kPages / 2;
  });
  ASSERT_TRUE(s.major_faults.has_value());
  EXPECT_GE(*s.major_faults, kPages / 2);
  EXPECT_LE(*s.major_faults, kPages + 16);
}

}  // namespace
}  // namespace statlet::testing
