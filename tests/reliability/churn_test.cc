// Container churn as a busy node makes it: containers made, seen by a scrape, removed,
// over and over. What statlet holds for a removed cgroup (inotify watches, kept fds,
// memory) must go with it: the watch budget is shared with the kubelet, containerd and
// systemd, and a node runs for months.
// This is the quick form; churn_soak_test.cc churns 10,000 containers.
#include <gtest/gtest.h>
#include <unistd.h>

#include "tests/reliability/churn.h"
#include "tests/support/wait_for.h"

namespace statlet::testing {
namespace {

TEST(ContainerChurn, HundredContainersLeaveNothingBehind) {
  const std::string root = "/statlet-churn-" + std::to_string(::getpid());
  ContainerTree tree(root);
  ASSERT_TRUE(tree.ok()) << tree.error();
  // Exit records keep a removed container's final values for their retention on purpose,
  // bounded by count and bytes (tests/collector, tests/live/live_exit_test.cc): off here, so
  // that what is left after a removal is only what must not be.
  Daemon d({.flags = {"--collector.exit-retention=0"}, .cgroup_subtree = root});
  ASSERT_TRUE(d.ok()) << d.error();
  ChurnResult r = Churn(d, tree, 5, 20, 4);
  Report("quick churn", r);
  EXPECT_EQ(r.churned, 100);
  // Against the first round: by then the tree's root has had processes, so it is reported
  // and its limits are watched (collector/limit_watch.h) for as long as it exists.
  EXPECT_LE(r.end.inotify_watches, r.warm.inotify_watches) << "inotify watches of removed cgroups are kept";
  // Against the first round: a collection with processes opens a few fds once (netns). The
  // last scrape's connection may still be closing on the daemon's side.
  EXPECT_TRUE(WaitFor([&] { return CostOf(d.pid()).fds <= r.warm.fds; }, std::chrono::seconds(3)))
      << "fds of removed cgroups are kept: " << CostOf(d.pid()).fds << " > " << r.warm.fds;
}

}  // namespace
}  // namespace statlet::testing
