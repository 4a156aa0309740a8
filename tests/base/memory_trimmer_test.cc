// MemoryTrimmer on glibc's real allocator: the memory a burst of small allocations leaves
// in malloc's free lists goes back to the kernel, also when a trim came in the middle of the
// burst (while the memory was still in use) and freed nothing.
#include "base/memory_trimmer.h"

#include <malloc.h>

#include <atomic>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/wait_for.h"

namespace statlet {
namespace {

constexpr size_t kMiB = 1 << 20;
constexpr size_t kBurst = 96 * kMiB;
constexpr size_t kChunk = 512;  // below mmap's threshold: from the heap, like protobuf's messages

// A burst of small blocks, touched so that they are resident.
std::vector<std::unique_ptr<char[]>> Burst() {
  std::vector<std::unique_ptr<char[]>> blocks(kBurst / kChunk);
  for (auto& b : blocks) {
    b.reset(new char[kChunk]);
    for (size_t i = 0; i < kChunk; i += 64) b[i] = static_cast<char>(i);
  }
  return blocks;
}

TEST(MemoryTrimmer, ABurstTrimmedWhileInUseIsHandedBackOnceFreed) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer's allocator is not glibc's: malloc_trim does not reach it";
#endif
  // free() alone never hands memory back here (glibc would trim a heap's top beyond this
  // threshold): what goes back, the trimmer gave back.
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, 1 << 30), 1);
  MemoryTrimmer trimmer(std::chrono::milliseconds(20), 4 * kMiB);
  const size_t before = ResidentBytes();
  ASSERT_GT(before, 0u);
  trimmer.Start();
  auto blocks = Burst();
  const size_t peak = ResidentBytes();
  ASSERT_GT(peak, before + kBurst / 2);
  // The trimmer sees the growth and trims while the burst is still in use: nothing to free.
  ASSERT_TRUE(testing::WaitFor([&] { return trimmer.trims() >= 1; }, std::chrono::seconds(10)));
  const uint64_t trims_in_use = trimmer.trims();
  EXPECT_GT(ResidentBytes(), before + kBurst / 2) << "a trim cannot free memory in use";
  blocks.clear();
  // Then it is handed back by a later trim.
  EXPECT_TRUE(testing::WaitFor([&] { return trimmer.trims() > trims_in_use && ResidentBytes() < before + kBurst / 4; },
                               std::chrono::seconds(10)))
      << "resident " << ResidentBytes() / kMiB << " MiB, before the burst " << before / kMiB << " MiB, trims "
      << trimmer.trims() << " (" << trims_in_use << " while in use)";
  trimmer.Stop();
}

// A burst held in use through every backoff (the trims during it free nothing, and the
// looks are kMaxBackoff periods apart) and only then freed: the resident set does not move
// when it is freed, yet it goes back. Once a set that held that long became the trimmer's
// level and nothing was trimmed again: after a flood of its CRI proxy socket the daemon kept
// 62.8 MiB resident against 27.6 MiB before it (tests/proxy/hostile_test.cc).
TEST(MemoryTrimmer, ABurstHeldThroughEveryBackoffIsHandedBackOnceFreed) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer's allocator is not glibc's: malloc_trim does not reach it";
#endif
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, 1 << 30), 1);
  MemoryTrimmer trimmer(std::chrono::milliseconds(5), 4 * kMiB);
  const size_t before = ResidentBytes();
  trimmer.Start();
  auto blocks = Burst();
  // Six fruitless trims once the whole burst is resident: its backoff has reached 32
  // periods, however far it had gone while the burst grew.
  const uint64_t trims_at_peak = trimmer.trims();
  ASSERT_TRUE(testing::WaitFor([&] { return trimmer.trims() >= trims_at_peak + 6; }, std::chrono::seconds(30)))
      << "the trimmer stopped trying while the resident set stayed above its level: " << trimmer.trims() << " trims, "
      << trims_at_peak << " when the burst was resident";
  EXPECT_GT(ResidentBytes(), before + kBurst / 2) << "a trim cannot free memory in use";
  const uint64_t trims_in_use = trimmer.trims();
  blocks.clear();
  EXPECT_TRUE(testing::WaitFor([&] { return ResidentBytes() < before + kBurst / 4; }, std::chrono::seconds(10)))
      << "resident " << ResidentBytes() / kMiB << " MiB, before the burst " << before / kMiB << " MiB, trims "
      << trimmer.trims() << " (" << trims_in_use << " while in use)";
  trimmer.Stop();
}

// What the owner's release drops (the Sampler's stale snapshot) goes back at that look,
// although the resident set never grew: the trimmer started with it in use.
TEST(MemoryTrimmer, WhatAReleaseDropsIsHandedBackAtOnce) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "the sanitizer's allocator is not glibc's: malloc_trim does not reach it";
#endif
  ASSERT_EQ(mallopt(M_TRIM_THRESHOLD, 1 << 30), 1);
  auto blocks = Burst();
  const size_t with_burst = ResidentBytes();
  std::atomic<bool> drop{false};
  std::atomic<int> looks{0};
  MemoryTrimmer trimmer(std::chrono::milliseconds(20), 4 * kMiB);
  trimmer.SetRelease([&] {
    ++looks;
    if (!drop.exchange(false)) return kMiB / 2;  // small releases: left to malloc
    blocks.clear();
    return kBurst;
  });
  trimmer.Start();
  ASSERT_TRUE(testing::WaitFor([&] { return looks.load() >= 3; }, std::chrono::seconds(10)));
  EXPECT_EQ(trimmer.trims(), 0u) << "nothing grew, releases below a quarter of the slack: no trim";
  drop = true;
  EXPECT_TRUE(testing::WaitFor([&] { return trimmer.trims() >= 1 && ResidentBytes() < with_burst - kBurst / 2; },
                               std::chrono::seconds(10)))
      << "resident " << ResidentBytes() / kMiB << " MiB, with the burst " << with_burst / kMiB << " MiB, trims "
      << trimmer.trims();
  trimmer.Stop();
}

}  // namespace
}  // namespace statlet
