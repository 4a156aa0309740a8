// Probes that cannot load never take the process down: off mode loads nothing, auto mode
// without BPF capabilities reports every probe down (one log line each) and still
// collects, on mode fails Create with a clear error.
#include <sys/wait.h>

#include <algorithm>
#include <cstdio>
#include <sstream>
#include <string>

#include "tests/bpf/probe_test_support.h"

namespace statlet::testing {
namespace {

struct CommandResult {
  int exit_code = -1;
  std::string output;  // stdout and stderr
};

CommandResult RunShell(const std::string& cmd) {
  CommandResult r;
  FILE* p = popen((cmd + " 2>&1").c_str(), "r");
  if (!p) return r;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

int CountLines(const std::string& text, const std::string& needle) {
  int n = 0;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) n += line.find(needle) != std::string::npos;
  return n;
}

// Runs the check tool with the capabilities that allow BPF tracing removed.
CommandResult RunWithoutBpfCaps(const std::string& mode) {
  return RunShell("capsh --drop=cap_bpf,cap_perfmon,cap_sys_admin -- -c '" STATLET_BPF_PROBE_CHECK " --bpf=" + mode +
                  "'");
}

TEST(BpfFallback, OffModeLoadsNothingAndCollectsNothing) {
  auto probes = BpfProbes::Create(BpfOptions::WithMode(BpfMode::kOff));
  ASSERT_TRUE(probes.ok()) << probes.status().ToString();
  std::vector<BpfProbeStatus> status = (*probes)->ProbeStatus();
  ASSERT_EQ(status.size(), BpfProbes::ProbeNames().size());
  for (const BpfProbeStatus& s : status) {
    EXPECT_FALSE(s.up) << s.probe;
    EXPECT_EQ(s.error, "disabled");
  }
  EXPECT_FALSE((*probes)->AnyUp());
  std::unordered_map<uint64_t, BpfCgroupStats> by_id;
  std::vector<OomEvent> ooms;
  (*probes)->Collect({1, 2, 3}, &by_id, &ooms, true, true);
  EXPECT_TRUE(by_id.empty());
  EXPECT_TRUE(ooms.empty());
  EXPECT_EQ((*probes)->PerCpuNs(1), nullptr);
}

bool IsDefault(const std::string& name) {
  const auto& d = BpfProbes::DefaultProbeNames();
  return std::find(d.begin(), d.end(), name) != d.end();
}

TEST(BpfFallback, AutoModeWithoutBpfCapabilitiesSkipsEveryProbeAndStillCollects) {
  STATLET_REQUIRE_ROOT();
  CommandResult r = RunWithoutBpfCaps("auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string& name : BpfProbes::ProbeNames()) {
    EXPECT_EQ(CountLines(r.output, "probe=" + name + " up=0 error="), 1) << r.output;
    // One log line for each probe that was tried; the others were not selected.
    EXPECT_EQ(CountLines(r.output, "bpf probe " + name + " not loaded"), IsDefault(name) ? 1 : 0) << r.output;
  }
  EXPECT_EQ(CountLines(r.output, "collect=ok entries=0"), 1) << r.output;
}

TEST(BpfFallback, OnModeWithoutBpfCapabilitiesFailsCleanly) {
  STATLET_REQUIRE_ROOT();
  CommandResult r = RunWithoutBpfCaps("on");
  EXPECT_EQ(r.exit_code, 2) << r.output;
  EXPECT_EQ(CountLines(r.output, "did not load"), 1) << r.output;
}

TEST(BpfFallback, WithCapabilitiesEveryDefaultProbeIsUp) {
  STATLET_REQUIRE_ROOT();
  CommandResult r = RunShell(STATLET_BPF_PROBE_CHECK " --bpf=auto");
  ASSERT_EQ(r.exit_code, 0) << r.output;
  for (const std::string& name : BpfProbes::ProbeNames()) {
    const std::string want = IsDefault(name) ? "probe=" + name + " up=1" : "probe=" + name + " up=0 error=not selected";
    EXPECT_EQ(CountLines(r.output, want), 1) << r.output;
  }
}

TEST(BpfMode, ParsesTheThreeModes) {
  BpfMode m;
  ASSERT_TRUE(ParseBpfMode("auto", &m));
  EXPECT_EQ(m, BpfMode::kAuto);
  ASSERT_TRUE(ParseBpfMode("on", &m));
  EXPECT_EQ(m, BpfMode::kOn);
  ASSERT_TRUE(ParseBpfMode("off", &m));
  EXPECT_EQ(m, BpfMode::kOff);
  EXPECT_FALSE(ParseBpfMode("yes", &m));
  EXPECT_FALSE(ParseBpfMode("", &m));
  EXPECT_STREQ(BpfModeName(BpfMode::kOn), "on");
}

TEST(BpfOptions, LoadsOnlySelectedProbes) {
  STATLET_REQUIRE_ROOT();
  BpfOptions options = BpfOptions::WithMode(BpfMode::kOn);
  options.probes = {"oom", "tcp"};
  auto probes = BpfProbes::Create(options);
  ASSERT_TRUE(probes.ok()) << probes.status().ToString();
  for (const BpfProbeStatus& s : (*probes)->ProbeStatus()) {
    const bool selected = s.probe == "oom" || s.probe == "tcp";
    EXPECT_EQ(s.up, selected) << s.probe;
    if (!selected) {
      EXPECT_EQ(s.error, "not selected");
    }
  }
  std::unordered_map<uint64_t, BpfCgroupStats> by_id;
  std::vector<OomEvent> ooms;
  (*probes)->Collect({1}, &by_id, &ooms, true, true);
  EXPECT_TRUE(by_id[1].oom_kills.has_value());
  EXPECT_FALSE(by_id[1].minor_faults.has_value());  // faults probe not loaded
  EXPECT_EQ((*probes)->PerCpuNs(1), nullptr);

  options.probes = {"nosuchprobe"};
  auto bad = BpfProbes::Create(options);
  EXPECT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), StatusCode::kInvalidArgument);
}

TEST(BpfOptions, ZeroMapSizeIsRejected) {
  BpfOptions options;
  options.max_cgroups = 0;
  auto probes = BpfProbes::Create(options);
  EXPECT_FALSE(probes.ok());
  EXPECT_EQ(probes.status().code(), StatusCode::kInvalidArgument);
}

}  // namespace
}  // namespace statlet::testing
