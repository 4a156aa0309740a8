// The churn soak: 10,000 containers (2,500 in a sanitized build) made, scraped and removed in
// rounds of 250, a tenth with a process. Watches, fds and RSS end where the first round left them. Bounded in time by
// its ctest timeout.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "tests/reliability/churn.h"
#include "tests/support/wait_for.h"

namespace statlet::testing {
namespace {

TEST(ContainerChurnSoak, TenThousandContainersKeepWatchesFdsAndMemoryFlat) {
  // The release stage churns 10,000 and holds RSS flat; the sanitized run (whose allocator
  // keeps freed memory in quarantine, so RSS says nothing) churns a quarter of that for what
  // a sanitizer adds: a leak or a use after free on the removal path, which every container
  // takes alike, shows in the first rounds as well as in the fortieth.
  const int total = std::getenv("STATLET_SOAK_CONTAINERS") ? std::atoi(std::getenv("STATLET_SOAK_CONTAINERS"))
                    : kSanitizedBuild                      ? 2500
                                                           : 10000;
  const int per_round = 250;
  const std::string root = "/statlet-soak-" + std::to_string(::getpid());
  ContainerTree tree(root);
  ASSERT_TRUE(tree.ok()) << tree.error();
  // Exit records keep a removed container's final values for their retention on purpose,
  // bounded by count and bytes (tests/collector, tests/live/live_exit_test.cc): off here, so
  // that what is left after a removal is only what must not be.
  Daemon d({.flags = {"--collector.exit-retention=0"}, .cgroup_subtree = root});
  ASSERT_TRUE(d.ok()) << d.error();
  const ProcessCost idle = CostOf(d.pid());
  ChurnResult r = Churn(d, tree, (total + per_round - 1) / per_round, per_round, 10);
  Report("soak", r);
  std::printf("figure: soak: idle daemon before churn: watches %d, fds %d, RSS %.1f MiB\n", idle.inotify_watches,
              idle.fds, idle.rss_kib / 1024.0);
  EXPECT_GE(r.churned, total);
  // Against the first round, as the quick churn does (the root's limits are watched once
  // it has had processes).
  EXPECT_LE(r.end.inotify_watches, r.warm.inotify_watches);
  EXPECT_TRUE(WaitFor([&] { return CostOf(d.pid()).fds <= r.warm.fds; }, std::chrono::seconds(3)))
      << "fds " << CostOf(d.pid()).fds << " > " << r.warm.fds;
  if (!kSanitizedBuild) {
    // Flat: what the first round allocated (buffers sized for 250 containers) is reused;
    // the last round may hold a little more from allocator fragmentation.
    EXPECT_LT(r.end.rss_kib, r.warm.rss_kib + 4 * 1024) << "RSS grows with churned containers";
  }
}

}  // namespace
}  // namespace statlet::testing
