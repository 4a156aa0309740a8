// Where the net probe attaches: each root once, none under another.
#include "bpf/net_roots.h"

#include <gtest/gtest.h>

namespace statlet::bpf {
namespace {

using Roots = std::vector<std::string>;

TEST(OutermostCgroupRoots, NoneIsTheMountsRoot) { EXPECT_EQ(OutermostCgroupRoots({}), Roots{""}); }

TEST(OutermostCgroupRoots, SlashesDoNotMakeADifferentRoot) {
  EXPECT_EQ(OutermostCgroupRoots({"/kubepods/", "kubepods", "//kubepods"}), Roots{"kubepods"});
  EXPECT_EQ(OutermostCgroupRoots({"/"}), Roots{""});
}

TEST(OutermostCgroupRoots, ARootUnderAnotherIsLeftOut) {
  EXPECT_EQ(OutermostCgroupRoots({"/kubepods/burstable", "/kubepods", "/system.slice"}),
            (Roots{"kubepods", "system.slice"}));
  EXPECT_EQ(OutermostCgroupRoots({"/kubepods", "/"}), Roots{""});
  // A shared prefix is not a parent.
  EXPECT_EQ(OutermostCgroupRoots({"/kubepods", "/kubepods-besteffort"}), (Roots{"kubepods", "kubepods-besteffort"}));
}

}  // namespace
}  // namespace statlet::bpf
