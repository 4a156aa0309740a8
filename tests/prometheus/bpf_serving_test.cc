// The eBPF probe families served end to end: the statlet daemon with its probes on this
// machine's kernel, real cgroups with CPU burners (run-queue waits), an allocator over its
// memory limit (a real OOM kill) and a pinned burner in a unified-only cgroup (per-CPU time
// from the probe), scraped by Debian's prometheus (OpenMetrics, every second) and asked
// through its HTTP API.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/prometheus/promtool.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/wait_for.h"
#include "tests/support/workloads.h"

namespace statlet::testing {
namespace {

using std::chrono::milliseconds;

double WallNow() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

nlohmann::json Query(httplib::Client& prom, const std::string& promql) {
  httplib::Params params{{"query", promql}};
  auto r = prom.Get("/api/v1/query", params, httplib::Headers{});
  if (!r || r->status != 200) return nullptr;
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || j["status"] != "success") return nullptr;
  return j["data"]["result"];
}

double ValueOf(const nlohmann::json& sample) { return std::stod(sample["value"][1].get<std::string>()); }

// A child that names itself and allocates far past any small limit, touching every
// page; it exits 0 only if it was not killed.
Child Allocator() {
  return Child(
      [] {
        ::prctl(PR_SET_NAME, "statlet-oomer");
        for (int i = 0; i < 1024; ++i) {
          void* p = std::malloc(1 << 20);
          if (p == nullptr) return 4;
          std::memset(p, 0x5a, 1 << 20);
        }
        return 0;
      },
      Child::kExits);
}

// Sample lines of one name for one cgroup, from an exposition.
std::vector<std::string> SamplesOf(const std::string& text, const std::string& name, const std::string& id) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) {
    if (l.rfind(name + "{", 0) == 0 && l.find("id=\"" + id + "\"") != std::string::npos) out.push_back(l);
  }
  return out;
}

TEST(BpfServing, RunqueueHistogramOomKillsAndProbeStatesReachPrometheus) {
  const std::string root = "/statlet-bpfserve-" + std::to_string(::getpid());
  LiveCgroup top(root);
  LiveCgroup busy(root + "/busy");
  ASSERT_TRUE(busy.ok()) << busy.error() << " (needs root)";
  LiveCgroup oom(root + "/oom");
  ASSERT_TRUE(oom.ok()) << oom.error();
  ASSERT_TRUE(oom.SetMemoryLimit(32 << 20));
  // Three burners on two CPUs: their threads wait on the run queues.
  std::vector<Child> burners;
  for (int i = 0; i < 3; ++i) {
    burners.emplace_back(SpinForever);
    ASSERT_TRUE(burners.back().StartIn(busy));
  }
  // A resident of the limited cgroup, as a container's main process: the cgroup is
  // populated, so statlet reports it before the allocator arrives.
  Child resident = Child::Sleeper();
  ASSERT_TRUE(oom.Add(resident.pid()));

  // A cgroup in the unified hierarchy only (no cpuacct.usage_percpu): its per-CPU time
  // comes from the cpu probe. One burner pinned to the last CPU.
  LiveCgroup v2only(root + "/v2only", {kUnified});
  ASSERT_TRUE(v2only.ok()) << v2only.error();
  Child pinned_burner(SpinForever);
  const int pinned_cpu = static_cast<int>(::sysconf(_SC_NPROCESSORS_ONLN)) - 1;
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(pinned_cpu, &set);
  ASSERT_EQ(::sched_setaffinity(pinned_burner.pid(), sizeof set, &set), 0);
  ASSERT_TRUE(pinned_burner.StartIn(v2only));

  char dir_template[] = "/tmp/statlet-bpfserve-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const int statlet_port = FreeLoopbackPort();
  BinaryProcess statlet({STATLET_BINARY, "--web.listen-address=127.0.0.1:" + std::to_string(statlet_port),
                         "--collector.subtree=" + root, "--cri.listen=", "--runtime.endpoint=none", "--bpf=auto", "--collector.per-cpu",
                         "--bpf.probes=cpu,runqlat,faults,oom,tcp,cgroup_stats"},
                        dir + "/statlet.log");
  httplib::Client exporter("127.0.0.1", statlet_port);
  ASSERT_TRUE(WaitFor([&] { auto r = exporter.Get("/readyz"); return r && r->status == 200; }, milliseconds(20000)))
      << ReadWholeFile(dir + "/statlet.log");

  const int prom_port = FreeLoopbackPort();
  std::ofstream(dir + "/prometheus.yml") << "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                                            "scrape_configs:\n  - job_name: statlet\n    static_configs:\n"
                                            "      - targets: ['127.0.0.1:"
                                         << statlet_port << "']\n";
  BinaryProcess prometheus({"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                            "--storage.tsdb.path=" + dir + "/data",
                            "--web.listen-address=127.0.0.1:" + std::to_string(prom_port)},
                           dir + "/prometheus.log");
  httplib::Client prom("127.0.0.1", prom_port);
  ASSERT_TRUE(WaitFor([&] { auto r = prom.Get("/-/ready"); return r && r->status == 200; }, milliseconds(30000)))
      << ReadWholeFile(dir + "/prometheus.log");

  // The probes this test needs loaded; every probe has its state series.
  nlohmann::json probes;
  ASSERT_TRUE(WaitFor([&] { probes = Query(prom, "statlet_bpf_probe_up"); return probes != nullptr && probes.size() == 6; },
                      milliseconds(30000)))
      << ReadWholeFile(dir + "/statlet.log");
  for (const auto& p : probes) {
    const std::string name = p["metric"]["probe"];
    if (name == "runqlat" || name == "oom") {
      EXPECT_EQ(ValueOf(p), 1) << name << "\n" << ReadWholeFile(dir + "/statlet.log");
    }
  }
  auto lost = Query(prom, "statlet_bpf_lost_events_total");
  ASSERT_TRUE(lost != nullptr);
  EXPECT_EQ(lost.size(), 6u);

  // A real OOM kill in the limited cgroup.
  const double before_kill = WallNow();
  Child oomer = Allocator();
  ASSERT_TRUE(oomer.StartIn(oom));
  const int status = oomer.Wait(milliseconds(60000));
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "allocator not OOM-killed, status " << status;
  const double after_kill = WallNow();

  const std::string oom_id = oom.path();
  nlohmann::json kills;
  ASSERT_TRUE(WaitFor(
      [&] {
        kills = Query(prom, "statlet_oom_kill_timestamp_seconds{pid=\"" + std::to_string(oomer.pid()) + "\"}");
        return kills != nullptr && !kills.empty();
      },
      milliseconds(30000)))
      << ReadWholeFile(dir + "/statlet.log");
  ASSERT_EQ(kills.size(), 1u) << kills.dump();
  const auto& labels = kills[0]["metric"];
  EXPECT_EQ(labels["id"], oom_id);
  EXPECT_EQ(labels["comm"], "statlet-oomer");
  EXPECT_EQ(labels["constraint"], "memcg");
  EXPECT_GE(ValueOf(kills[0]), std::floor(before_kill));
  EXPECT_LE(ValueOf(kills[0]), after_kill + 1);
  auto kill_count = Query(prom, "statlet_oom_kills_total{id=\"" + oom_id + "\"}");
  ASSERT_TRUE(kill_count != nullptr && kill_count.size() == 1) << kill_count.dump();
  EXPECT_EQ(ValueOf(kill_count[0]), 1);

  // The run-queue histogram as Prometheus ingested it: quantiles of the burners' waits.
  const std::string busy_id = busy.path();
  const std::string p90 =
      "histogram_quantile(0.9, rate(statlet_cpu_runqueue_latency_seconds_bucket{id=\"" + busy_id + "\"}[5s]))";
  nlohmann::json q;
  ASSERT_TRUE(WaitFor(
      [&] {
        q = Query(prom, p90);
        return q != nullptr && q.size() == 1 && std::isfinite(ValueOf(q[0])) && ValueOf(q[0]) > 0;
      },
      milliseconds(30000)))
      << (q == nullptr ? "no answer" : q.dump());
  // The histogram against the kernel's own account of the burners' waits (run_delay in
  // /proc/<pid>/schedstat): two direct scrapes bracketed by kernel readings. The probe
  // counts a wait when the stay that ended it ends, the kernel when it ends: each side may
  // hold the waits of the three running stays that the other has not yet counted.
  auto kernel_waits = [&] {
    SchedStat total;
    for (Child& b : burners) {
      std::optional<SchedStat> st = ReadSchedStat(b.pid());
      if (st) {
        total.wait_ns += st->wait_ns;
        total.arrivals += st->arrivals;
      }
    }
    return total;
  };
  auto scraped_sum = [&] {
    auto r = exporter.Get("/metrics");
    if (!r || r->status != 200) return -1.0;
    auto sums = SamplesOf(r->body, "statlet_cpu_runqueue_latency_seconds_sum", busy_id);
    return sums.size() == 1 ? std::stod(sums[0].substr(sums[0].rfind(' ') + 1)) : -1.0;
  };
  const SchedStat k0 = kernel_waits();
  const double sum0 = scraped_sum();
  const SchedStat k0_after = kernel_waits();
  ASSERT_GE(sum0, 0);
  ASSERT_TRUE(WaitFor([&] { return kernel_waits().wait_ns >= k0_after.wait_ns + 500'000'000; }, milliseconds(20000)));
  const SchedStat k1_before = kernel_waits();
  const double sum1 = scraped_sum();
  const SchedStat k1 = kernel_waits();
  ASSERT_GE(sum1, 0);
  const double probe_s = sum1 - sum0;
  const double kernel_lo = static_cast<double>(k1_before.wait_ns - k0_after.wait_ns) / 1e9;
  const double kernel_hi = static_cast<double>(k1.wait_ns - k0.wait_ns) / 1e9;
  const double mean_wait_s =
      static_cast<double>(k1.wait_ns - k0.wait_ns) / 1e9 / static_cast<double>(k1.arrivals - k0.arrivals);
  std::cout << "waits between two scrapes: probe " << probe_s << " s, kernel " << kernel_lo << ".." << kernel_hi
            << " s; kernel mean wait " << mean_wait_s * 1e3 << " ms; p90 " << ValueOf(q[0]) * 1e3 << " ms\n";
  EXPECT_GE(probe_s, kernel_lo - 3 * 4 * mean_wait_s);
  EXPECT_LE(probe_s, kernel_hi + 3 * 4 * mean_wait_s);
  // The 90th percentile of spinners' waits lies within a few times their mean: log2
  // buckets place a quantile anywhere in a bucket twice as wide as its lower bound.
  EXPECT_GT(ValueOf(q[0]), mean_wait_s / 4);
  EXPECT_LT(ValueOf(q[0]), mean_wait_s * 4);
  auto waits = Query(prom, "rate(statlet_cpu_runqueue_latency_seconds_count{id=\"" + busy_id + "\"}[5s])");
  ASSERT_TRUE(waits != nullptr && waits.size() == 1);
  EXPECT_GT(ValueOf(waits[0]), 1) << "waits per second";

  auto up = Query(prom, "up{job=\"statlet\"}");
  ASSERT_TRUE(up != nullptr && up.size() == 1);
  EXPECT_EQ(ValueOf(up[0]), 1) << "Prometheus failed to parse the (OpenMetrics) scrape";

  // The same scrape in both formats: the histogram is cumulative and closes at +Inf = _count.
  for (const char* accept : {"text/plain;version=0.0.4", "application/openmetrics-text;version=1.0.0"}) {
    auto r = exporter.Get("/metrics", httplib::Headers{{"Accept", accept}});
    ASSERT_TRUE(r && r->status == 200) << accept;
    auto buckets = SamplesOf(r->body, "statlet_cpu_runqueue_latency_seconds_bucket", busy_id);
    auto count = SamplesOf(r->body, "statlet_cpu_runqueue_latency_seconds_count", busy_id);
    ASSERT_GE(buckets.size(), 2u) << accept;
    ASSERT_EQ(count.size(), 1u) << accept;
    uint64_t prev = 0;
    for (const std::string& b : buckets) {
      uint64_t v = std::stoull(b.substr(b.rfind(' ') + 1));
      EXPECT_GE(v, prev) << b;
      prev = v;
    }
    EXPECT_NE(buckets.back().find("le=\"+Inf\""), std::string::npos);
    EXPECT_EQ(prev, std::stoull(count[0].substr(count[0].rfind(' ') + 1))) << accept;
    if (std::string(accept).rfind("text/plain", 0) == 0) {
      PromtoolResult check = PromtoolCheckMetrics(r->body);
      EXPECT_NE(check.exit_code, 1) << check.output;
      EXPECT_TRUE(check.unexpected_findings.empty()) << check.output;
    }
  }

  // Per-CPU usage of the unified-only cgroup, from the probe: cAdvisor's cpuNN labels, the
  // pinned CPU carrying the time, no cpu="total".
  const std::string v2_id = root + "/v2only";
  char pinned_label[16];
  std::snprintf(pinned_label, sizeof pinned_label, "cpu%02d", pinned_cpu);
  std::vector<std::string> per_cpu;
  double pinned = 0, all = 0;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = exporter.Get("/metrics");
        if (!r || r->status != 200) return false;
        per_cpu = SamplesOf(r->body, "container_cpu_usage_seconds_total", v2_id);
        pinned = all = 0;
        for (const std::string& l : per_cpu) {
          const double v = std::stod(l.substr(l.rfind(' ') + 1));
          all += v;
          if (l.find(std::string("cpu=\"") + pinned_label + "\"") != std::string::npos) pinned += v;
        }
        return pinned > 0.5;
      },
      milliseconds(20000)))
      << "per-CPU series of " << v2_id << ": " << per_cpu.size();
  for (const std::string& l : per_cpu) EXPECT_EQ(l.find("cpu=\"total\""), std::string::npos) << l;
  EXPECT_GT(pinned, 0.95 * all) << "the pinned CPU should carry the burner's time";

  prometheus.Stop();
  EXPECT_EQ(statlet.Stop(), 0);
  std::system(("rm -rf " + dir).c_str());
}

// A killed container's cgroup is usually gone by the next collection. The collection that
// drains the OOM event then no longer has the cgroup; the series still names it, from the
// collection before.
TEST(BpfServing, OomKillInACgroupRemovedBeforeTheNextCollectionKeepsItsLabels) {
  const std::string root = "/statlet-bpfgone-" + std::to_string(::getpid());
  LiveCgroup top(root);
  LiveCgroup victim(root + "/victim");
  ASSERT_TRUE(victim.ok()) << victim.error() << " (needs root)";
  ASSERT_TRUE(victim.SetMemoryLimit(32 << 20));
  Child resident = Child::Sleeper();
  ASSERT_TRUE(victim.Add(resident.pid()));

  char dir_template[] = "/tmp/statlet-bpfgone-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  const int port = FreeLoopbackPort();
  // No snapshot reuse: every scrape is a collection.
  BinaryProcess statlet({STATLET_BINARY, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                         "--collector.subtree=" + root, "--cri.listen=", "--runtime.endpoint=none", "--bpf=auto", "--bpf.probes=oom", "--collector.max-age=0s"},
                        dir + "/statlet.log");
  httplib::Client exporter("127.0.0.1", port);
  ASSERT_TRUE(WaitFor([&] { auto r = exporter.Get("/readyz"); return r && r->status == 200; }, milliseconds(20000)))
      << ReadWholeFile(dir + "/statlet.log");
  const std::string victim_id = victim.path();
  auto first = exporter.Get("/metrics");
  ASSERT_TRUE(first && first->status == 200);
  ASSERT_NE(first->body.find("statlet_bpf_probe_up{probe=\"oom\"} 1\n"), std::string::npos)
      << ReadWholeFile(dir + "/statlet.log");
  ASSERT_FALSE(SamplesOf(first->body, "container_last_seen", victim_id).empty()) << "the victim cgroup is reported";

  Child oomer = Allocator();
  ASSERT_TRUE(oomer.StartIn(victim));
  const int status = oomer.Wait(milliseconds(60000));
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL) << "allocator not OOM-killed, status " << status;
  resident.Kill();
  victim.Destroy();

  std::vector<std::string> kills;
  std::string body;
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = exporter.Get("/metrics");
        if (!r || r->status != 200) return false;
        body = r->body;
        kills.clear();
        std::istringstream in(body);
        for (std::string l; std::getline(in, l);) {
          if (l.rfind("statlet_oom_kill_timestamp_seconds{", 0) == 0 &&
              l.find("pid=\"" + std::to_string(oomer.pid()) + "\"") != std::string::npos) {
            kills.push_back(l);
          }
        }
        return !kills.empty();
      },
      milliseconds(20000)))
      << ReadWholeFile(dir + "/statlet.log");
  EXPECT_TRUE(SamplesOf(body, "container_last_seen", victim_id).empty()) << "the cgroup is gone";
  ASSERT_EQ(kills.size(), 1u);
  EXPECT_NE(kills[0].find("{id=\"" + victim_id + "\","), std::string::npos) << kills[0];
  EXPECT_NE(kills[0].find("comm=\"statlet-oomer\",constraint=\"memcg\""), std::string::npos) << kills[0];

  EXPECT_EQ(statlet.Stop(), 0);
  std::system(("rm -rf " + dir).c_str());
}

}  // namespace
}  // namespace statlet::testing
