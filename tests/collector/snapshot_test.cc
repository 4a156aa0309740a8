#include "snapshot/snapshot.h"

#include <gtest/gtest.h>

namespace statlet {
namespace {

TEST(Snapshot, NearestAncestorsSkipsUnreportedLevelsAndSiblingPrefixes) {
  Snapshot s;
  for (const char* p : {"/", "/a", "/a/b/c", "/a/b/c/d", "/ab", "/ab/x", "/z"}) {
    s.cgroups.emplace_back().id.cgroup_path = p;
  }
  EXPECT_EQ(s.NearestAncestors(), (std::vector<int32_t>{-1, 0, 1, 2, 0, 4, 0}));
}

TEST(Snapshot, NearestAncestorsWithoutRoot) {
  Snapshot s;
  for (const char* p : {"/kubepods", "/kubepods/pod1", "/kubepods/pod1/c", "/kubepods/pod2", "/other"}) {
    s.cgroups.emplace_back().id.cgroup_path = p;
  }
  EXPECT_EQ(s.NearestAncestors(), (std::vector<int32_t>{-1, 0, 1, 0, -1}));
}

}  // namespace
}  // namespace statlet
