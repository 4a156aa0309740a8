// What `statlet stats -o json|yaml` writes: a limit the kernel reports as "max" is null (jq
// and JavaScript cannot hold 2^64-1 exactly), a known limit a number, an unknown value no
// key at all; YAML says the same.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "cmd/snapshot_json.h"
#include "cmd/structured_output.h"

namespace statlet {
namespace {

TEST(SnapshotJson, UnlimitedIsNullKnownIsANumberUnknownIsAbsent) {
  Snapshot s;
  CgroupStats& c = s.cgroups.emplace_back();
  c.id.cgroup_path = "/a";
  c.memory.max_bytes = kUnlimited;
  c.memory.swap_max_bytes = 1 << 20;
  c.cpu.quota_us = kUnlimited;
  c.process.pids_max = 4096;
  const auto j = nlohmann::json::parse(SnapshotToJson(s, 2));
  const auto& cg = j["cgroups"][0];
  ASSERT_TRUE(cg["memory"].contains("max_bytes")) << cg.dump();
  EXPECT_TRUE(cg["memory"]["max_bytes"].is_null());
  EXPECT_EQ(cg["memory"]["swap_max_bytes"], 1 << 20);
  EXPECT_TRUE(cg["cpu"]["quota_us"].is_null());
  EXPECT_EQ(cg["process"]["pids_max"], 4096);
  EXPECT_FALSE(cg["memory"].contains("usage_bytes"));  // never read: unknown, not 0
  EXPECT_EQ(SnapshotToJson(s, 2).find("18446744073709551615"), std::string::npos);

  const std::string yaml = JsonAsYaml(SnapshotToJson(s, 2));
  EXPECT_NE(yaml.find("max_bytes: ~"), std::string::npos) << yaml;
  EXPECT_NE(yaml.find("swap_max_bytes: 1048576"), std::string::npos) << yaml;
}

}  // namespace
}  // namespace statlet
