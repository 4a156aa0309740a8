// `statlet stats --cri.endpoint`: the arguments of the CRI stats view.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "cmd/cri_stats_view.h"

namespace statlet {
namespace {

StatusOr<CriStatsViewOptions> Parse(std::vector<std::string> args) {
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  return ParseCriStatsViewArgs(static_cast<int>(argv.size()), argv.data());
}

TEST(StatsView, ParsesArguments) {
  auto o = Parse({"stats", "--cri.endpoint=unix:///run/s.sock", "-o", "yaml", "--label", "app=web", "--label",
                  "tier=front", "--pod", "abc", "--pods"});
  ASSERT_TRUE(o.ok()) << o.status().message();
  EXPECT_EQ(o->endpoint, "unix:///run/s.sock");
  EXPECT_EQ(o->output, "yaml");
  EXPECT_EQ(o->labels.size(), 2u);
  EXPECT_EQ(o->pod, "abc");
  EXPECT_TRUE(o->pods);
  EXPECT_FALSE(Parse({"--cri.endpoint", "unix:///x", "-o", "xml"}).ok());
  EXPECT_FALSE(Parse({"--cri.endpoint", "unix:///x", "--label", "novalue"}).ok());
  EXPECT_FALSE(Parse({"--cri.endpoint", "tcp://x"}).ok());
  EXPECT_FALSE(Parse({"-o", "json"}).ok());  // no endpoint
  EXPECT_FALSE(Parse({"--cri.endpoint"}).ok());
}

}  // namespace
}  // namespace statlet
