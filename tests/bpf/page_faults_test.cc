// The faults probe: fresh anonymous pages give minor faults, uncached file pages major ones.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cstdlib>

#include "tests/bpf/probe_test_support.h"

namespace statlet::testing {
namespace {

constexpr size_t kPage = 4096;

// The calling process's own fault counts, as the kernel keeps them (the counters the
// probe reads at each switch).
struct Faults {
  uint64_t minor = 0, major = 0;
};
Faults OwnFaults() {
  struct rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return {static_cast<uint64_t>(ru.ru_minflt), static_cast<uint64_t>(ru.ru_majflt)};
}
// A child's result: the faults its work caused by the kernel's own count, and an exit code.
uint64_t Report(const Faults& start, int code) {
  const Faults end = OwnFaults();
  return ((end.major - start.major) << 40) | ((end.minor - start.minor) << 8) | static_cast<uint64_t>(code);
}
Faults Reported(uint64_t v) { return {(v >> 8) & 0xffffffff, v >> 40}; }

TEST(PageFaultsProbe, TouchingFreshPagesCountsOneMinorFaultEach) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup cg("faults");
  ASSERT_TRUE(cg.ok()) << cg.error();

  constexpr size_t kPages = 8192;  // 32 MiB
  Child child(
      [] {
        const Faults start = OwnFaults();
        size_t len = kPages * kPage;
        auto* p =
            static_cast<volatile char*>(mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0));
        if (p == MAP_FAILED) return Report(start, 3);
        madvise(const_cast<char*>(p), len, MADV_NOHUGEPAGE);  // one fault per 4 KiB page
        for (size_t i = 0; i < kPages; i++) p[i * kPage] = 1;
        return Report(start, 0);
      },
      Child::kExits);
  ASSERT_TRUE(child.StartIn(cg));
  std::optional<uint64_t> result = child.Result(std::chrono::seconds(30));
  ASSERT_TRUE(result.has_value());
  ASSERT_EQ(*result & 0xff, 0u);
  const Faults own = Reported(*result);
  ASSERT_GE(own.minor, kPages);
  int status = child.Wait(std::chrono::seconds(30));
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;

  // The probe counts everything the child did in the cgroup: its work (the kernel's own
  // count above) plus the few faults before it read its counters and after (writing the
  // result, exiting).
  BpfCgroupStats s =
      CollectUntil(*probes, cg.id(), [&](const BpfCgroupStats& v) { return v.minor_faults.value_or(0) >= own.minor; });
  ASSERT_TRUE(s.minor_faults.has_value());
  ASSERT_TRUE(s.major_faults.has_value());
  EXPECT_GE(*s.minor_faults, own.minor);
  EXPECT_LE(*s.minor_faults, own.minor + 64);
  EXPECT_EQ(*s.major_faults, own.major);
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
        const Faults start = OwnFaults();
        size_t len = kPages * kPage;
        auto* p = static_cast<volatile char*>(mmap(nullptr, len, PROT_READ, MAP_PRIVATE, fd, 0));
        if (p == MAP_FAILED) return Report(start, 3);
        madvise(const_cast<char*>(p), len, MADV_RANDOM);  // no readahead: each page its own read
        int sum = 0;
        for (size_t i = 0; i < kPages; i++) sum += p[i * kPage];
        return Report(start, sum == static_cast<int>(kPages) * 'x' ? 0 : 4);
      },
      Child::kExits);
  ASSERT_TRUE(child.StartIn(cg));
  std::optional<uint64_t> result = child.Result(std::chrono::seconds(30));
  ASSERT_TRUE(result.has_value());
  ASSERT_EQ(*result & 0xff, 0u);
  const Faults own = Reported(*result);
  int status = child.Wait(std::chrono::seconds(30));
  close(fd);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  // How many reads missed the page cache is the kernel's business (pages dropped by
  // fadvise may be back); the probe must count exactly the major faults the kernel
  // counted for the child's work, and that must be most of the pages.
  ASSERT_GE(own.major, kPages / 2);

  BpfCgroupStats s =
      CollectUntil(*probes, cg.id(), [&](const BpfCgroupStats& v) { return v.major_faults.value_or(0) >= own.major; });
  ASSERT_TRUE(s.major_faults.has_value());
  EXPECT_EQ(*s.major_faults, own.major);
}

}  // namespace
}  // namespace statlet::testing
