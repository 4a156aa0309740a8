// PodPullsSettle (cmd/pod_pulls_settle.h): `statlet pull --pod --until-done` ends only when
// the pod's pulls stayed complete for the settle time, on an injected clock.
#include "cmd/pod_pulls_settle.h"

#include <gtest/gtest.h>

namespace statlet {
namespace {

using std::chrono::seconds;
using Clock = PodPullsSettle::Clock;

TEST(PodPullsSettle, TwoSequentialPullsOfOnePodEndOnlyAfterTheSecond) {
  const Clock::time_point t0{};
  PodPullsSettle s(seconds(10));
  EXPECT_FALSE(s.Done(t0)) << "nothing seen";
  EXPECT_FALSE(s.Due());
  s.Saw(t0, false);  // the init container's image, part way
  EXPECT_FALSE(s.Done(t0 + seconds(60))) << "a pull in flight, however long";
  s.Saw(t0 + seconds(2), true);  // its last layer: every pull seen is complete
  EXPECT_FALSE(s.Done(t0 + seconds(2))) << "the next pull of the pod may not have begun";
  EXPECT_FALSE(s.Done(t0 + seconds(11)));
  ASSERT_TRUE(s.Due());
  EXPECT_EQ(*s.Due(), t0 + seconds(12));
  s.Saw(t0 + seconds(5), false);  // the init container ran 3 s; the app's image begins
  EXPECT_FALSE(s.Done(t0 + seconds(12))) << "ended between the two pulls";
  EXPECT_FALSE(s.Due());
  s.Saw(t0 + seconds(9), true);  // the app's image complete
  EXPECT_FALSE(s.Done(t0 + seconds(18)));
  EXPECT_TRUE(s.Done(t0 + seconds(19)));
}

TEST(PodPullsSettle, AnyLineRestartsTheSettleTime) {
  const Clock::time_point t0{};
  PodPullsSettle s(seconds(4));
  s.Saw(t0, true);
  s.Saw(t0 + seconds(3), true);  // a finished pull's last lines, or another image present
  EXPECT_FALSE(s.Done(t0 + seconds(4)));
  EXPECT_TRUE(s.Done(t0 + seconds(7)));
}

TEST(PodPullsSettle, NoSettleTimeEndsAtTheFirstComplete) {
  const Clock::time_point t0{};
  PodPullsSettle s(seconds(0));
  s.Saw(t0, false);
  EXPECT_FALSE(s.Done(t0));
  s.Saw(t0 + seconds(1), true);
  EXPECT_TRUE(s.Done(t0 + seconds(1)));
}

}  // namespace
}  // namespace statlet
