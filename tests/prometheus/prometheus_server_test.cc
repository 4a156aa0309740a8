// statlet against a real Prometheus server: a CPU burner in a real cgroup (cgroup v1 cpu /
// cpuacct plus the unified hierarchy on this host), the statlet daemon scraped every second
// by Debian's prometheus on 127.0.0.1, and Prometheus' HTTP API asked for the burn rate.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "tests/prometheus/promtool.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/prometheus_server.h"
#include "tests/support/wait_for.h"
#include "tests/support/workloads.h"

namespace statlet::testing {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

TEST(PrometheusServer, ScrapesStatletAndSeesTheBurnRate) {
  const std::string root = "/statlet-promtest-" + std::to_string(::getpid());
  LiveCgroup top(root);
  LiveCgroup burner_cg(root + "/burner");
  ASSERT_TRUE(burner_cg.ok()) << burner_cg.error() << " (needs root)";
  // Half a CPU through the CFS quota, so the burn is steady on a busy 2-core machine.
  ASSERT_TRUE(burner_cg.Write(kV1Cpu, "cpu.cfs_quota_us", "50000"));
  Child burner(SpinForever);
  ASSERT_TRUE(burner.StartIn(burner_cg));
  // The burner's true CPU seconds over time, for its burn over any window.
  WallClockSeries burn([pid = burner.pid()] { return static_cast<double>(ProcessCpuNs(pid)) / 1e9; },
                       milliseconds(100));

  char dir_template[] = "/tmp/statlet-prom-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const int statlet_port = FreeLoopbackPort();
  BinaryProcess statlet(
      {STATLET_BINARY, "--web.listen-address=127.0.0.1:" + std::to_string(statlet_port), "--collector.subtree=" + root,
       "--cri.listen=", "--runtime.endpoint=none", "--log.level=debug"},
      dir + "/statlet.log");
  httplib::Client exporter("127.0.0.1", statlet_port);
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = exporter.Get("/readyz");
        return r && r->status == 200;
      },
      milliseconds(10000)))
      << ReadWholeFile(dir + "/statlet.log");

  std::string prom_error;
  auto prom = PrometheusServer::Start(dir, {"statlet", "127.0.0.1:" + std::to_string(statlet_port), "1s"}, &prom_error);
  ASSERT_NE(prom, nullptr) << prom_error;

  const std::string id = burner_cg.path();
  const std::string series = "container_cpu_usage_seconds_total{id=\"" + id + "\",cpu=\"total\"}";
  const std::string rate = "rate(" + series + "[6s])";
  // Wait until the series is older than the rate window (scrapes every second), so that
  // Prometheus' rate() is not cut short by extrapolation limits at the series' start.
  double at = 0;
  nlohmann::json result;
  ASSERT_TRUE(WaitFor(
      [&] {
        at = WallSeconds() - 1;
        auto n = prom->Query("count_over_time(" + series + "[10s])", at);
        if (n == nullptr || n.empty() || std::stod(n[0]["value"][1].get<std::string>()) < 9) return false;
        result = prom->Query(rate, at);
        return result != nullptr && result.size() == 1;
      },
      milliseconds(40000)))
      << prom->Log();

  const double scraped = std::stod(result[0]["value"][1].get<std::string>());
  const double truth = burn.Rate(at - 6, at);
  EXPECT_GT(truth, 0.2) << "the burner did not run";
  EXPECT_NEAR(scraped, truth, 0.10 * truth) << "Prometheus rate " << scraped << " vs burned " << truth;

  const auto& labels = result[0]["metric"];
  EXPECT_EQ(labels["id"], id);
  EXPECT_EQ(labels["cpu"], "total");
  EXPECT_EQ(labels["job"], "statlet");
  EXPECT_EQ(labels["instance"], "127.0.0.1:" + std::to_string(statlet_port));

  auto quota = prom->Query("container_spec_cpu_quota{id=\"" + id + "\"}", at);
  ASSERT_TRUE(quota != nullptr && quota.size() == 1);
  EXPECT_EQ(quota[0]["value"][1], "50000");
  auto up = prom->Query("up{job=\"statlet\"}", at);
  ASSERT_TRUE(up != nullptr && up.size() == 1);
  EXPECT_EQ(up[0]["value"][1], "1") << "Prometheus failed to parse the (OpenMetrics) scrape";

  // promtool on a live scrape.
  auto live = exporter.Get("/metrics");
  ASSERT_TRUE(live && live->status == 200);
  PromtoolResult check = PromtoolCheckMetrics(live->body);
  EXPECT_TRUE(check.Parsed()) << check.exit_code << ": " << check.output;
  EXPECT_TRUE(check.unexpected_findings.empty()) << check.output;
  EXPECT_NE(live->body.find("container_cpu_usage_seconds_total{id=\"" + id + "\",cpu=\"total\"} "), std::string::npos);

  prom->Stop();
  EXPECT_EQ(statlet.Stop(), 0) << "statlet should exit 0 on SIGTERM";
  EXPECT_NE(ReadWholeFile(dir + "/statlet.log").find("received SIGTERM"), std::string::npos);
  burner.Kill();
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace statlet::testing
