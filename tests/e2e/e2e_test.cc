// The e2e stage: statlet beside a real containerd 1.6 and runc, pods started over CRI,
// statlet's CRI and Prometheus answers checked against the pods and against containerd's
// own CRI answers taken at the same moment.
//
// Tolerances (each assertion names its own):
//  - discovery: a container's and a pod's cgroup series are in the first scrape that starts
//    after StartContainer returned, and gone from the first scrape that starts after
//    RemoveContainer (RemovePodSandbox plus the kubelet's rmdir of the pod cgroup) returned;
//    names from the runtime (pod, namespace, container, image) follow within one refresh of
//    the runtime client (200 ms here) plus one scrape.
//  - CPU: statlet's cumulative usage within 2 % (at least 5 ms, a scheduler tick's worth) of
//    containerd's, interpolated linearly to statlet's timestamp between two containerd
//    answers taken just before and just after statlet's.
//  - memory working set: within 1 MiB of the range of those two containerd answers.
//  - network counters: between the two containerd answers (counters only grow).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <thread>

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/cri_driver.h"
#include "tests/e2e/e2e_shared.h"
#include "tests/e2e/e2e_stage.h"
#include "tests/support/http_client.h"
#include "tests/support/prometheus_server.h"

namespace statlet::e2e {

E2eStage* g_stage = nullptr;
std::string g_setup_error;
std::map<std::string, Workload> g_pods;

namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr uint64_t kMiB = 1024 * 1024;
constexpr uint64_t kAllocBytes = 48 * kMiB;             // the allocator's tmpfs fill
constexpr uint64_t kPairPayloadBytes = 4000000;         // server → client over the pod's lo
constexpr uint64_t kPingCount = 20, kPingBytes = 1000;  // client → bridge gateway over eth0
constexpr char kGateway[] = "10.213.78.1";              // 10-bridge.conflist.in
constexpr int kScrapeTimeoutMs = 10000;

// ---------------------------------------------------------------------------- the stage
std::vector<std::string> Sh(const std::string& script) { return {"sh", "-c", script}; }

const std::map<std::string, std::pair<std::string, std::vector<std::pair<std::string, std::vector<std::string>>>>>&
WorkloadSpecs() {
  // pod name → (namespace, [(container name, command)])
  static const auto* specs =
      new std::map<std::string, std::pair<std::string, std::vector<std::pair<std::string, std::vector<std::string>>>>>{
          {"cpu-burner", {"e2e-a", {{"burn", Sh("while :; do :; done")}}}},
          {"mem-alloc",
           {"e2e-a",
            {{"alloc", Sh("dd if=/dev/zero of=/dev/shm/fill bs=1M count=" + std::to_string(kAllocBytes / kMiB) +
                          " 2>/dev/null; exec sleep 2147483647")}}}},
          {"forker",
           {"e2e-b",
            {{"fork", Sh("for i in 1 2 3 4; do sleep 2147483647 & done; while :; do /bin/true; usleep 20000; done")}}}},
          {"net-pair",
           {"e2e-b",
            {{"server", Sh("nc -l -p 7000 -e sh -c 'head -c " + std::to_string(kPairPayloadBytes) +
                           " /dev/zero'; exec sleep 2147483647")},
             {"client", Sh("until nc 127.0.0.1 7000 > /tmp/got; do usleep 100000; done; ping -A -q -c " +
                           std::to_string(kPingCount) + " -s " + std::to_string(kPingBytes) + " " + kGateway +
                           " > /tmp/ping 2>&1; exec sleep 2147483647")}}}},
      };
  return *specs;
}

class StageEnvironment : public ::testing::Environment {
 public:
  void SetUp() override {
    StageOptions options;
    options.agent_binary = STATLET_E2E_AGENT;
    options.harness_script = STATLET_E2E_HARNESS;
    // The agent asks containerd's ListContainerStats once at start (the writable layers),
    // then not for an hour: containerd computes usage_nano_cores against the previous such
    // call, whoever made it, and UsageNanoCoresAgreesWithContainerd needs that to be its own.
    // One eBPF probe, `net` (per-container traffic from the containers' own sockets,
    // PairsOwnSocketsCountTheirOwnDirections), required to load; the other values come from
    // cgroupfs, as the comparisons with containerd's own figures want them.
    options.agent_flags = {"--runtime.refresh-period=200ms", "--cri.max-age=0s", "--runtime.stats-period=1h",
                           "--bpf=on", "--bpf.probes=net"};
    auto stage = E2eStage::Start(options);
    if (!stage.ok()) {
      g_setup_error = stage.status().ToString();
      return;
    }
    stage_ = std::move(*stage);
    for (const auto& [name, spec] : WorkloadSpecs()) {
      auto pod = stage_->driver().RunPod({name, spec.first, {{"app", name}}});
      if (!pod.ok()) {
        g_setup_error = "RunPod " + name + ": " + pod.status().ToString() + "\n" + stage_->Logs();
        return;
      }
      Workload w{*pod, {}};
      for (const auto& [cname, command] : spec.second) {
        auto id = stage_->driver().StartContainer(w.pod, {cname, command});
        if (!id.ok()) {
          g_setup_error = "StartContainer " + cname + ": " + id.status().ToString() + "\n" + stage_->Logs();
          return;
        }
        w.containers[cname] = *id;
      }
      g_pods[name] = std::move(w);
    }
    g_stage = stage_.get();
    std::printf("e2e stage: %s, metrics on 127.0.0.1:%d, agent pid %d\n", stage_->dir().c_str(), stage_->metrics_port(),
                static_cast<int>(stage_->agent_pid()));
    std::fflush(stdout);
    // For a look at a live stage by hand: STATLET_E2E_HOLD=<seconds> keeps it up that long.
    if (const char* hold = std::getenv("STATLET_E2E_HOLD"))
      std::this_thread::sleep_for(std::chrono::seconds(std::atoi(hold)));
  }
  void TearDown() override {
    if (stage_ != nullptr) {
      for (const auto& [name, w] : g_pods) {
        Status s = stage_->driver().RemovePod(w.pod);
        if (!s.ok()) std::fprintf(stderr, "remove %s: %s\n", name.c_str(), s.ToString().c_str());
      }
      g_stage = nullptr;
      stage_->Stop();
    }
  }

 private:
  std::unique_ptr<E2eStage> stage_;
};

// ---------------------------------------------------------------------------- helpers
StatusOr<std::vector<Sample>> Scrape() {
  auto resp = testing::TimedGet(g_stage->metrics_port(), "/metrics", "", milliseconds(kScrapeTimeoutMs)).response;
  if (!resp) return Unavailable("no answer to GET /metrics within " + std::to_string(kScrapeTimeoutMs) + " ms");
  if (resp->status != 200) return Internal("HTTP " + std::to_string(resp->status) + ": " + resp->body);
  return ParseExposition(resp->body);
}

std::string ContainerCgroup(const Pod& pod, const std::string& id) { return pod.cgroup_parent + "/" + id; }

// CPU time of a cgroup straight from the kernel (cpuacct.usage, else the unified cpu.stat);
// 0 when neither is readable. Reading it does not move either side's rate window.
uint64_t KernelCpuNs(const std::string& cgroup) {
  for (const char* v1 : {"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct"}) {
    if (FILE* f = std::fopen((v1 + cgroup + "/cpuacct.usage").c_str(), "r")) {
      unsigned long long ns = 0;
      const bool ok = std::fscanf(f, "%llu", &ns) == 1;
      std::fclose(f);
      if (ok) return ns;
    }
  }
  for (const char* v2 : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (FILE* f = std::fopen((v2 + cgroup + "/cpu.stat").c_str(), "r")) {
      unsigned long long us = 0;
      const bool ok = std::fscanf(f, "usage_usec %llu", &us) == 1;
      std::fclose(f);
      if (ok) return us * 1000;
    }
  }
  return 0;
}

// The kernel's user/system split of a cgroup's CPU time, in ns: the unified cpu.stat when
// the cgroup has one (what statlet reports on every host with a cgroup2 tree), else
// cpuacct.usage_user/usage_sys. {0, 0} when unreadable.
std::pair<uint64_t, uint64_t> KernelCpuSplitNs(const std::string& cgroup) {
  for (const char* v2 : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    std::ifstream stat(v2 + cgroup + "/cpu.stat");
    std::string key;
    unsigned long long value;
    uint64_t user = 0, system = 0;
    bool any = false;
    while (stat >> key >> value) {
      if (key == "user_usec") user = value * 1000, any = true;
      if (key == "system_usec") system = value * 1000;
    }
    if (any) return {user, system};
  }
  for (const char* v1 : {"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct"}) {
    std::ifstream user(v1 + cgroup + "/cpuacct.usage_user"), sys(v1 + cgroup + "/cpuacct.usage_sys");
    unsigned long long u, k;
    if (user >> u && sys >> k) return {u, k};
  }
  return {0, 0};
}

const Sample* FindSample(const std::vector<Sample>& samples, const std::string& name, const std::string& cgroup) {
  for (const Sample& s : samples) {
    if (s.name == name) {
      auto it = s.labels.find("id");
      if (it != s.labels.end() && it->second == cgroup) return &s;
    }
  }
  return nullptr;
}

std::set<std::string> CgroupIds(const std::vector<Sample>& samples) {
  std::set<std::string> ids;
  for (const Sample& s : samples) {
    if (auto it = s.labels.find("id"); it != s.labels.end()) ids.insert(it->second);
  }
  return ids;
}

// The cgroups kept only as exit records (their final values, for the exit retention).
std::set<std::string> ExitedIds(const std::vector<Sample>& samples) {
  std::set<std::string> ids;
  for (const Sample& s : samples) {
    if (s.name != "statlet_container_exit_time_seconds") continue;
    if (auto it = s.labels.find("id"); it != s.labels.end()) ids.insert(it->second);
  }
  return ids;
}

// The cgroups a scrape shows as running: every id but the exit records'.
std::set<std::string> LiveCgroupIds(const std::vector<Sample>& samples) {
  std::set<std::string> ids = CgroupIds(samples);
  for (const std::string& exited : ExitedIds(samples)) ids.erase(exited);
  return ids;
}

std::string Label(const Sample* s, const std::string& key) {
  if (s == nullptr) return "<no series>";
  auto it = s->labels.find(key);
  return it == s->labels.end() ? "" : it->second;
}

// Polls `check` (returns an empty string when it holds, else why not) until `timeout`.
v1::ListContainerStatsResponse ListContainerStats(v1::RuntimeService::Stub* stub) {
  v1::ListContainerStatsResponse resp;
  grpc::Status s = stub->ListContainerStats(CallContext().get(), v1::ListContainerStatsRequest(), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp;
}

v1::ListPodSandboxStatsResponse ListPodSandboxStats(v1::RuntimeService::Stub* stub) {
  v1::ListPodSandboxStatsResponse resp;
  grpc::Status s = stub->ListPodSandboxStats(CallContext().get(), v1::ListPodSandboxStatsRequest(), &resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  return resp;
}

const v1::ContainerStats* ById(const v1::ListContainerStatsResponse& r, const std::string& id) {
  for (const auto& s : r.stats()) {
    if (s.attributes().id() == id) return &s;
  }
  return nullptr;
}

// Pointers into a response: never into a temporary one.
const v1::ContainerStats* ById(v1::ListContainerStatsResponse&& r, const std::string& id) = delete;
const v1::PodSandboxStats* PodById(v1::ListPodSandboxStatsResponse&& r, const std::string& id) = delete;
const v1::PodSandboxStats* PodById(const v1::ListPodSandboxStatsResponse& r, const std::string& id) {
  for (const auto& s : r.stats()) {
    if (s.attributes().id() == id) return &s;
  }
  return nullptr;
}

// containerd's value at time t, interpolated between its answers before (a) and after (b).
double Interpolate(int64_t ta, double a, int64_t tb, double b, int64_t t) {
  if (tb <= ta) return a;
  double f = std::clamp(static_cast<double>(t - ta) / static_cast<double>(tb - ta), 0.0, 1.0);
  return a + f * (b - a);
}

void ExpectCpuAgrees(const std::string& what, const v1::CpuUsage& before, const v1::CpuUsage& ours,
                     const v1::CpuUsage& after) {
  ASSERT_TRUE(before.has_usage_core_nano_seconds() && after.has_usage_core_nano_seconds()) << what;
  ASSERT_TRUE(ours.has_usage_core_nano_seconds()) << what;
  double expected =
      Interpolate(before.timestamp(), static_cast<double>(before.usage_core_nano_seconds().value()), after.timestamp(),
                  static_cast<double>(after.usage_core_nano_seconds().value()), ours.timestamp());
  double got = static_cast<double>(ours.usage_core_nano_seconds().value());
  double tolerance = std::max(0.02 * expected, 5e6);
  EXPECT_NEAR(got, expected, tolerance) << what << ": containerd " << before.usage_core_nano_seconds().value() << " @"
                                        << before.timestamp() << " and " << after.usage_core_nano_seconds().value()
                                        << " @" << after.timestamp() << ", statlet " << got << " @" << ours.timestamp();
}

void ExpectWorkingSetAgrees(const std::string& what, const v1::MemoryUsage& before, const v1::MemoryUsage& ours,
                            const v1::MemoryUsage& after) {
  ASSERT_TRUE(ours.has_working_set_bytes()) << what;
  uint64_t lo = std::min(before.working_set_bytes().value(), after.working_set_bytes().value());
  uint64_t hi = std::max(before.working_set_bytes().value(), after.working_set_bytes().value());
  uint64_t got = ours.working_set_bytes().value();
  EXPECT_GE(got + kMiB, lo) << what << ": statlet " << got << ", containerd " << lo << ".." << hi;
  EXPECT_LE(got, hi + kMiB) << what << ": statlet " << got << ", containerd " << lo << ".." << hi;
}

// ---------------------------------------------------------------------------- tests
TEST(E2e, WorkloadsAreNamedInTheScrape) {
  REQUIRE_STAGE();
  std::string why = Eventually(milliseconds(5000), [] {
    auto samples = Scrape();
    if (!samples.ok()) return "scrape: " + samples.status().ToString();
    for (const auto& [pod_name, w] : g_pods) {
      const Sample* pod = FindSample(*samples, "container_cpu_usage_seconds_total", w.pod.cgroup_parent);
      if (pod == nullptr) return "no series for pod " + pod_name;
      if (Label(pod, "pod") != pod_name || Label(pod, "namespace") != w.pod.namespace_) {
        return "pod " + pod_name + " labelled pod=" + Label(pod, "pod") + " namespace=" + Label(pod, "namespace");
      }
      for (const auto& [cname, id] : w.containers) {
        const Sample* c = FindSample(*samples, "container_cpu_usage_seconds_total", ContainerCgroup(w.pod, id));
        if (c == nullptr) return "no series for container " + cname;
        if (Label(c, "container") != cname || Label(c, "pod") != pod_name ||
            Label(c, "namespace") != w.pod.namespace_ || Label(c, "image") != g_stage->driver().image() ||
            Label(c, "name") != id) {
          return "container " + cname + " labelled container=" + Label(c, "container") + " pod=" + Label(c, "pod") +
                 " namespace=" + Label(c, "namespace") + " image=" + Label(c, "image") + " name=" + Label(c, "name");
        }
      }
    }
    return std::string();
  });
  EXPECT_EQ(why, "");
}

// The series kubernetes-mixin's dashboards and recording rules select, with the labels
// they group by (namespace, pod, container) and filter on (image!="", container!="").
TEST(E2e, ScrapeHasTheSeriesKubernetesMixinQueries) {
  REQUIRE_STAGE();
  const std::vector<std::string> per_container = {"container_cpu_usage_seconds_total",
                                                  "container_memory_working_set_bytes",
                                                  "container_memory_rss",
                                                  "container_memory_cache",
                                                  "container_memory_swap",
                                                  "container_spec_cpu_shares",
                                                  "container_spec_memory_limit_bytes"};
  const std::vector<std::string> per_pod_network = {
      "container_network_receive_bytes_total",           "container_network_transmit_bytes_total",
      "container_network_receive_packets_total",         "container_network_transmit_packets_total",
      "container_network_receive_packets_dropped_total", "container_network_transmit_packets_dropped_total"};
  const Workload& burner = g_pods.at("cpu-burner");
  const std::string burn_id = burner.containers.at("burn");
  auto cpu_ns = [&] {  // the burner's CPU time as containerd reads its cgroup
    auto r = ListContainerStats(g_stage->containerd());
    const v1::ContainerStats* c = ById(r, burn_id);
    return c == nullptr ? uint64_t{0} : c->cpu().usage_core_nano_seconds().value();
  };
  const uint64_t cpu_before = cpu_ns();
  auto samples = Scrape();
  const uint64_t cpu_after = cpu_ns();
  ASSERT_TRUE(samples.ok()) << samples.status().ToString();
  ASSERT_GT(cpu_before, 0u);
  for (const auto& [pod_name, w] : g_pods) {
    for (const auto& [cname, id] : w.containers) {
      for (const std::string& family : per_container) {
        const Sample* s = FindSample(*samples, family, ContainerCgroup(w.pod, id));
        ASSERT_NE(s, nullptr) << family << " for " << pod_name << "/" << cname;
        for (const char* key : {"container", "pod", "namespace", "image"}) {
          EXPECT_FALSE(Label(s, key).empty()) << family << " " << key << " for " << pod_name << "/" << cname;
        }
      }
    }
    // Network series: per pod, with its namespace and name (cAdvisor puts them on the pod's
    // sandbox; kubernetes-mixin sums them by namespace and pod).
    for (const std::string& family : per_pod_network) {
      bool found = false;
      for (const Sample& s : *samples) {
        if (s.name == family && Label(&s, "pod") == pod_name && Label(&s, "namespace") == w.pod.namespace_ &&
            Label(&s, "interface") == "eth0") {
          found = true;
        }
      }
      EXPECT_TRUE(found) << family << "{interface=\"eth0\"} for pod " << pod_name;
    }
  }
  // The values behind the workloads.
  const Workload& alloc = g_pods.at("mem-alloc");
  const Sample* ws = FindSample(*samples, "container_memory_working_set_bytes",
                                ContainerCgroup(alloc.pod, alloc.containers.at("alloc")));
  ASSERT_NE(ws, nullptr);
  EXPECT_GE(ws->value, static_cast<double>(kAllocBytes));
  const Sample* cpu = FindSample(*samples, "container_cpu_usage_seconds_total", ContainerCgroup(burner.pod, burn_id));
  ASSERT_NE(cpu, nullptr);
  // The scraped CPU seconds lie between containerd's readings of the same cgroup just
  // before and after the scrape (1 us of slack for the decimal rendering).
  EXPECT_GE(cpu->value, static_cast<double>(cpu_before) / 1e9 - 1e-6);
  EXPECT_LE(cpu->value, static_cast<double>(cpu_after) / 1e9 + 1e-6);
}

TEST(E2e, DiscoveredWithinOneScrapeAndDroppedWithinOneScrape) {
  REQUIRE_STAGE();
  CriDriver& driver = g_stage->driver();
  auto pod = driver.RunPod({"probe", "e2e-probe", {}});
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  auto id = driver.StartContainer(*pod, {"probe-c", Sh("exec sleep 2147483647")});
  ASSERT_TRUE(id.ok()) << id.status().ToString();
  const std::string cgroup = ContainerCgroup(*pod, *id);

  auto first = Scrape();
  ASSERT_TRUE(first.ok()) << first.status().ToString();
  std::set<std::string> ids = CgroupIds(*first);
  EXPECT_TRUE(ids.count(cgroup)) << "container not in the first scrape after StartContainer";
  EXPECT_TRUE(ids.count(pod->cgroup_parent)) << "pod not in the first scrape after StartContainer";
  // statlet's CRI answer lists it at once too.
  v1::ListContainerStatsResponse listed = ListContainerStats(g_stage->statlet());
  EXPECT_NE(ById(listed, *id), nullptr) << "container not in statlet's first ListContainerStats";

  // Names: one runtime refresh (200 ms) and one scrape.
  std::string why = Eventually(milliseconds(200 + 500), [&] {
    auto samples = Scrape();
    if (!samples.ok()) return samples.status().ToString();
    const Sample* c = FindSample(*samples, "container_cpu_usage_seconds_total", cgroup);
    if (Label(c, "container") != "probe-c" || Label(c, "pod") != "probe" || Label(c, "namespace") != "e2e-probe") {
      return "labels container=" + Label(c, "container") + " pod=" + Label(c, "pod");
    }
    return std::string();
  });
  EXPECT_EQ(why, "") << "names did not follow within one refresh";

  ASSERT_TRUE(driver.RemoveContainer(*id).ok());
  auto after_container = Scrape();
  ASSERT_TRUE(after_container.ok());
  // Gone as a running container at once; kept as its exit record (final values) for the
  // retention, which the watcher writes as the cgroup empties.
  EXPECT_FALSE(LiveCgroupIds(*after_container).count(cgroup))
      << "container still running in the first scrape after removal";
  why = Eventually(milliseconds(2000), [&] {
    auto samples = Scrape();
    if (!samples.ok()) return samples.status().ToString();
    return ExitedIds(*samples).count(cgroup) ? std::string() : std::string("no exit record");
  });
  EXPECT_EQ(why, "") << "the removed container's final values were not kept";
  ASSERT_TRUE(driver.RemovePod(*pod).ok());
  auto after_pod = Scrape();
  ASSERT_TRUE(after_pod.ok());
  EXPECT_FALSE(CgroupIds(*after_pod).count(pod->cgroup_parent)) << "pod still in the first scrape after removal";
  const std::set<std::string> records = ExitedIds(*after_pod);
  for (const Sample& s : *after_pod) {
    if (records.count(Label(&s, "id"))) continue;  // the container's exit record names its pod
    EXPECT_NE(Label(&s, "pod"), "probe") << s.name << " still names the removed pod";
  }
}

TEST(E2e, StatletServesTheMetricCallsContainerdLeavesUnimplemented) {
  REQUIRE_STAGE();
  {
    v1::ListMetricDescriptorsResponse theirs;
    grpc::Status s =
        g_stage->containerd()->ListMetricDescriptors(CallContext().get(), v1::ListMetricDescriptorsRequest(), &theirs);
    std::printf("containerd ListMetricDescriptors: code %d (%zu descriptors)\n", s.error_code(),
                static_cast<size_t>(theirs.descriptors_size()));
    v1::ListPodSandboxMetricsResponse their_metrics;
    s = g_stage->containerd()->ListPodSandboxMetrics(CallContext().get(), v1::ListPodSandboxMetricsRequest(),
                                                     &their_metrics);
    std::printf("containerd ListPodSandboxMetrics: code %d\n", s.error_code());
    // Debian 12's containerd 1.6 does not implement them; statlet fills the gap.
    EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  }
  v1::ListMetricDescriptorsResponse descriptors;
  grpc::Status s =
      g_stage->statlet()->ListMetricDescriptors(CallContext().get(), v1::ListMetricDescriptorsRequest(), &descriptors);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::map<std::string, std::vector<std::string>> label_keys;
  for (const auto& d : descriptors.descriptors()) {
    label_keys[d.name()].assign(d.label_keys().begin(), d.label_keys().end());
  }
  for (const char* name : {"container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
                           "container_network_receive_bytes_total", "container_processes"}) {
    EXPECT_TRUE(label_keys.count(name)) << name << " not described";
  }

  v1::ListPodSandboxMetricsResponse metrics;
  s = g_stage->statlet()->ListPodSandboxMetrics(CallContext().get(), v1::ListPodSandboxMetricsRequest(), &metrics);
  ASSERT_TRUE(s.ok()) << s.error_message();
  // value of `name` for a container (or the pod when container_id is empty), by label.
  auto value = [&](const std::string& pod_id, const std::string& container_id, const std::string& name,
                   const std::map<std::string, std::string>& want) -> std::optional<uint64_t> {
    for (const auto& pm : metrics.pod_metrics()) {
      if (pm.pod_sandbox_id() != pod_id) continue;
      auto scan = [&](const auto& list) -> std::optional<uint64_t> {
        for (const auto& m : list) {
          if (m.name() != name) continue;
          const auto& keys = label_keys[name];
          bool match = true;
          for (const auto& [k, v] : want) {
            auto it = std::find(keys.begin(), keys.end(), k);
            size_t i = static_cast<size_t>(it - keys.begin());
            if (it == keys.end() || i >= static_cast<size_t>(m.label_values_size()) || m.label_values(i) != v) {
              match = false;
            }
          }
          if (match) return m.value().value();
        }
        return std::nullopt;
      };
      if (container_id.empty()) return scan(pm.metrics());
      for (const auto& cm : pm.container_metrics()) {
        if (cm.container_id() == container_id) return scan(cm.metrics());
      }
    }
    return std::nullopt;
  };
  for (const auto& [pod_name, w] : g_pods) {
    EXPECT_TRUE(value(w.pod.id, "", "container_network_receive_bytes_total", {{"interface", "eth0"}}).has_value())
        << pod_name;
    for (const auto& [cname, id] : w.containers) {
      auto cpu = value(w.pod.id, id, "container_cpu_usage_seconds_total", {{"container", cname}});
      EXPECT_TRUE(cpu.has_value()) << pod_name << "/" << cname;
    }
  }
  // CPU seconds are whole seconds on this wire (the kubelet reads value as uint64, both
  // runtimes truncate): the burner's lies between statlet's own CRI usage before and after.
  const Workload& burner = g_pods.at("cpu-burner");
  const std::string burn_id = burner.containers.at("burn");
  auto usage_s = [&] {
    const v1::ListContainerStatsResponse listed = ListContainerStats(g_stage->statlet());
    const v1::ContainerStats* c = ById(listed, burn_id);
    return c == nullptr ? uint64_t{0} : c->cpu().usage_core_nano_seconds().value() / 1000000000;
  };
  std::string why = Eventually(
      milliseconds(20000), [&] { return usage_s() >= 1 ? std::string() : std::string("burner below one CPU second"); });
  ASSERT_EQ(why, "");
  uint64_t lo = usage_s();
  s = g_stage->statlet()->ListPodSandboxMetrics(CallContext().get(), v1::ListPodSandboxMetricsRequest(), &metrics);
  ASSERT_TRUE(s.ok()) << s.error_message();
  uint64_t hi = usage_s();
  auto burned = value(burner.pod.id, burn_id, "container_cpu_usage_seconds_total", {});
  ASSERT_TRUE(burned.has_value());
  EXPECT_GE(*burned, lo);
  EXPECT_LE(*burned, hi);
  const Workload& alloc = g_pods.at("mem-alloc");
  EXPECT_GE(value(alloc.pod.id, alloc.containers.at("alloc"), "container_memory_working_set_bytes", {}).value_or(0),
            kAllocBytes);
  const Workload& forker = g_pods.at("forker");
  EXPECT_GE(value(forker.pod.id, forker.containers.at("fork"), "container_processes", {}).value_or(0), 5u);
}

TEST(E2e, ContainerStatsAgreeWithContainerd) {
  REQUIRE_STAGE();
  // The allocator must have filled its tmpfs before the comparison means anything.
  const Workload& alloc = g_pods.at("mem-alloc");
  std::string why = Eventually(milliseconds(20000), [&] {
    auto r = ListContainerStats(g_stage->containerd());
    const v1::ContainerStats* s = ById(r, alloc.containers.at("alloc"));
    if (s == nullptr || s->memory().working_set_bytes().value() < kAllocBytes) return std::string("not filled");
    return std::string();
  });
  ASSERT_EQ(why, "");
  // Names come with the runtime client's first listing after the stage started (a test run
  // alone may come before it); this is also the previous reading usage_nano_cores needs.
  why = Eventually(milliseconds(5000), [&] {
    auto r = ListContainerStats(g_stage->statlet());
    for (const auto& c : r.stats()) {
      if (c.attributes().metadata().name().empty()) return "unnamed " + c.attributes().id();
    }
    return r.stats().empty() ? std::string("no containers") : std::string();
  });
  ASSERT_EQ(why, "");

  const Workload& burner = g_pods.at("cpu-burner");
  const std::string burner_cgroup = ContainerCgroup(burner.pod, burner.containers.at("burn"));
  auto before = ListContainerStats(g_stage->containerd());
  const auto split_before = KernelCpuSplitNs(burner_cgroup);
  auto ours = ListContainerStats(g_stage->statlet());
  const auto split_after = KernelCpuSplitNs(burner_cgroup);
  auto after = ListContainerStats(g_stage->containerd());
  // The same containers: sandboxes (pause containers) are not containers in either answer.
  std::set<std::string> their_ids, our_ids;
  for (const auto& c : before.stats()) their_ids.insert(c.attributes().id());
  for (const auto& c : ours.stats()) our_ids.insert(c.attributes().id());
  EXPECT_EQ(our_ids, their_ids);
  const unsigned cpus = static_cast<unsigned>(sysconf(_SC_NPROCESSORS_ONLN));
  for (const auto& [pod_name, w] : g_pods) {
    for (const auto& [cname, id] : w.containers) {
      const std::string what = pod_name + "/" + cname;
      const v1::ContainerStats* b = ById(before, id);
      const v1::ContainerStats* o = ById(ours, id);
      const v1::ContainerStats* a = ById(after, id);
      ASSERT_TRUE(b && o && a) << what << " missing from an answer";
      EXPECT_EQ(o->attributes().metadata().name(), b->attributes().metadata().name()) << what;
      EXPECT_EQ(o->attributes().labels().at("io.kubernetes.container.name"), cname) << what;
      ExpectCpuAgrees(what, b->cpu(), o->cpu(), a->cpu());
      ExpectWorkingSetAgrees(what, b->memory(), o->memory(), a->memory());

      // What statlet fills beyond containerd: containerd 1.6 never sets these.
      EXPECT_FALSE(b->cpu().has_usage_kernel_nano_seconds() || b->cpu().per_cpu_usage_nano_seconds_size() > 0 ||
                   b->memory().has_failcnt() || b->has_process() || b->has_network())
          << what << ": containerd now fills statlet's fields; the comparison should cover them";
      const v1::CpuUsage& cpu = o->cpu();
      EXPECT_TRUE(cpu.has_usage_nano_cores()) << what;
      ASSERT_TRUE(cpu.has_usage_kernel_nano_seconds() && cpu.has_usage_user_nano_seconds()) << what;
      // user and system: checked against the kernel's split below, for the burner.
      double usage = static_cast<double>(cpu.usage_core_nano_seconds().value());
      ASSERT_EQ(cpu.per_cpu_usage_nano_seconds_size(), static_cast<int>(cpus)) << what;
      uint64_t per_cpu_sum = 0;
      for (uint64_t v : cpu.per_cpu_usage_nano_seconds()) per_cpu_sum += v;
      EXPECT_NEAR(static_cast<double>(per_cpu_sum), usage, 0.02 * usage + 5e6) << what << ": per-CPU sum vs usage";
      const v1::MemoryUsage& mem = o->memory();
      EXPECT_TRUE(mem.has_failcnt()) << what;
      EXPECT_TRUE(mem.has_usage_bytes() && mem.has_rss_bytes() && mem.has_page_faults() && mem.has_major_page_faults())
          << what;
      EXPECT_GT(mem.page_faults().value(), 0u) << what;
      ASSERT_TRUE(o->has_process() && o->process().has_process_count()) << what;
      EXPECT_GE(o->process().process_count().value(), 1u) << what;
      ASSERT_TRUE(o->has_network()) << what;
      EXPECT_EQ(o->network().default_interface().name(), "eth0") << what;
      EXPECT_EQ(o->pod_sandbox_id(), w.pod.id) << what;
    }
  }
  const v1::ContainerStats* burn = ById(ours, burner.containers.at("burn"));
  ASSERT_NE(burn, nullptr);
  // user and kernel time: the kernel's own split of the burner's cgroup, read around the call.
  ASSERT_GT(split_after.first, 0u);
  EXPECT_GE(burn->cpu().usage_user_nano_seconds().value(), split_before.first);
  EXPECT_LE(burn->cpu().usage_user_nano_seconds().value(), split_after.first);
  EXPECT_GE(burn->cpu().usage_kernel_nano_seconds().value(), split_before.second);
  EXPECT_LE(burn->cpu().usage_kernel_nano_seconds().value(), split_after.second);
  const Workload& forker = g_pods.at("forker");
  const v1::ContainerStats* f = ById(ours, forker.containers.at("fork"));
  ASSERT_NE(f, nullptr);
  EXPECT_GE(f->process().process_count().value(), 5u) << "sh and its four sleeps";
  const v1::ContainerStats* m = ById(ours, alloc.containers.at("alloc"));
  ASSERT_NE(m, nullptr);
  EXPECT_GE(m->memory().shmem_bytes().value(), kAllocBytes) << "the tmpfs fill is shared memory";
}

TEST(E2e, UsageNanoCoresAgreesWithContainerd) {
  REQUIRE_STAGE();
  // Both compute the rate against their own previous sample: take the two samples of each
  // side back to back, so that the two windows match to within one call's duration.
  const Workload& burner = g_pods.at("cpu-burner");
  const std::string id = burner.containers.at("burn");
  auto cpu_of = [&](const v1::ListContainerStatsResponse& r) {
    const v1::ContainerStats* c = ById(r, id);
    return c == nullptr ? v1::CpuUsage() : c->cpu();
  };
  const v1::CpuUsage ours0 = cpu_of(ListContainerStats(g_stage->statlet()));
  const v1::CpuUsage theirs0 = cpu_of(ListContainerStats(g_stage->containerd()));
  // A window of at least half a CPU second of the burner's work, watched in the cgroup.
  const std::string cgroup = ContainerCgroup(burner.pod, id);
  std::string why = Eventually(milliseconds(20000), [&] {
    return KernelCpuNs(cgroup) >= theirs0.usage_core_nano_seconds().value() + 500'000'000
               ? std::string()
               : std::string("burner below half a CPU second since the first sample");
  });
  ASSERT_EQ(why, "");
  const v1::CpuUsage ours1 = cpu_of(ListContainerStats(g_stage->statlet()));
  const v1::CpuUsage theirs1 = cpu_of(ListContainerStats(g_stage->containerd()));
  ASSERT_TRUE(ours1.has_usage_nano_cores() && theirs1.has_usage_nano_cores());
  ASSERT_GT(theirs1.timestamp(), theirs0.timestamp());
  // Each rate is over that side's own two samples; the windows start and end one call
  // apart. statlet's counters over its window must give its rate exactly, and its rate
  // must agree with containerd's over nearly the same window.
  const double theirs = static_cast<double>(theirs1.usage_nano_cores().value());
  const double ours = static_cast<double>(ours1.usage_nano_cores().value());
  EXPECT_GT(theirs, 1e8) << "the burner uses at least a tenth of a CPU";
  const double ours_from_counters =
      static_cast<double>(ours1.usage_core_nano_seconds().value() - ours0.usage_core_nano_seconds().value()) * 1e9 /
      static_cast<double>(ours1.timestamp() - ours0.timestamp());
  EXPECT_NEAR(ours, ours_from_counters, 0.02 * ours_from_counters) << "statlet's rate vs its own counters";
  // The windows differ by a call's duration at each end (~10 ms of >= 0.5 s): 5 %.
  EXPECT_NEAR(ours, theirs, 0.05 * theirs) << "statlet " << ours << " vs containerd " << theirs;
}

TEST(E2e, PodSandboxStatsAgreeWithContainerd) {
  REQUIRE_STAGE();
  auto before = ListPodSandboxStats(g_stage->containerd());
  auto ours = ListPodSandboxStats(g_stage->statlet());
  auto after = ListPodSandboxStats(g_stage->containerd());
  for (const auto& [pod_name, w] : g_pods) {
    const v1::PodSandboxStats* b = PodById(before, w.pod.id);
    const v1::PodSandboxStats* o = PodById(ours, w.pod.id);
    const v1::PodSandboxStats* a = PodById(after, w.pod.id);
    ASSERT_TRUE(b && o && a) << pod_name << " missing from an answer";
    EXPECT_EQ(o->attributes().metadata().name(), pod_name);
    EXPECT_EQ(o->attributes().metadata().namespace_(), w.pod.namespace_);
    EXPECT_EQ(o->attributes().metadata().uid(), w.pod.uid);
    ExpectCpuAgrees(pod_name, b->linux().cpu(), o->linux().cpu(), a->linux().cpu());
    ExpectWorkingSetAgrees(pod_name, b->linux().memory(), o->linux().memory(), a->linux().memory());

    // The pod's eth0: counters only grow, so statlet's lie between containerd's two.
    const auto& bi = b->linux().network().default_interface();
    const auto& oi = o->linux().network().default_interface();
    const auto& ai = a->linux().network().default_interface();
    EXPECT_EQ(oi.name(), "eth0") << pod_name;
    EXPECT_EQ(bi.name(), "eth0") << pod_name;
    EXPECT_GE(oi.rx_bytes().value(), bi.rx_bytes().value()) << pod_name;
    EXPECT_LE(oi.rx_bytes().value(), ai.rx_bytes().value()) << pod_name;
    EXPECT_GE(oi.tx_bytes().value(), bi.tx_bytes().value()) << pod_name;
    EXPECT_LE(oi.tx_bytes().value(), ai.tx_bytes().value()) << pod_name;

    // The same containers in both.
    std::set<std::string> theirs, mine;
    for (const auto& c : b->linux().containers()) theirs.insert(c.attributes().id());
    for (const auto& c : o->linux().containers()) mine.insert(c.attributes().id());
    EXPECT_EQ(mine, theirs) << pod_name;
    // The pod's processes counted as containerd counts them: the app containers' only,
    // the pause process left out. Every workload's count is steady but the forker's: its
    // shell and four sleeps, and most of the time one child of its loop (usleep or true),
    // so any of the three answers may see 5 or 6 there.
    ASSERT_TRUE(o->linux().process().has_process_count()) << pod_name;
    ASSERT_TRUE(b->linux().process().has_process_count() && a->linux().process().has_process_count()) << pod_name;
    const uint64_t theirs_before = b->linux().process().process_count().value();
    const uint64_t ours_count = o->linux().process().process_count().value();
    if (pod_name == "forker") {
      for (uint64_t n : {theirs_before, ours_count, a->linux().process().process_count().value()}) {
        EXPECT_TRUE(n == 5 || n == 6) << pod_name << ": " << n << " processes";
      }
    } else {
      EXPECT_EQ(theirs_before, a->linux().process().process_count().value()) << pod_name;
      EXPECT_EQ(ours_count, theirs_before) << pod_name;
    }
    EXPECT_GE(theirs_before, w.containers.size()) << pod_name;
    std::printf("%s: %llu processes (containerd %llu)\n", pod_name.c_str(),
                static_cast<unsigned long long>(o->linux().process().process_count().value()),
                static_cast<unsigned long long>(theirs_before));
  }
}

TEST(E2e, PairInOnePodExchangesTheKnownBytes) {
  REQUIRE_STAGE();
  const Workload& pair = g_pods.at("net-pair");
  // The client saw every byte (read back through the runtime's ExecSync)…
  std::string why = Eventually(milliseconds(30000), [&] {
    v1::ExecSyncRequest req;
    req.set_container_id(pair.containers.at("client"));
    for (const char* arg : {"sh", "-c", "wc -c < /tmp/got; grep -c ' 0% packet loss' /tmp/ping"}) req.add_cmd(arg);
    req.set_timeout(5);
    v1::ExecSyncResponse resp;
    grpc::Status s = g_stage->containerd()->ExecSync(CallContext().get(), req, &resp);
    if (!s.ok()) return "ExecSync: " + s.error_message();
    std::string expect = std::to_string(kPairPayloadBytes) + "\n1\n";
    if (resp.stdout() != expect) return "client says: " + resp.stdout() + resp.stderr();
    return std::string();
  });
  ASSERT_EQ(why, "");
  // …and statlet counts at least as many on the pod's lo in its own per-interface family
  // (container_network_* leaves lo out, as cAdvisor does, on every edge) and the pings on
  // eth0 (CRI).
  auto samples = Scrape();
  ASSERT_TRUE(samples.ok());
  double lo_rx = -1, lo_tx = -1;
  for (const Sample& s : *samples) {
    if (Label(&s, "pod") != "net-pair" || Label(&s, "interface") != "lo") continue;
    EXPECT_NE(s.name.rfind("container_network_", 0), 0u) << "loopback in " << s.name;
    if (s.name != "statlet_pod_network_bytes_total") continue;
    if (Label(&s, "direction") == "receive") lo_rx = std::max(lo_rx, s.value);
    if (Label(&s, "direction") == "transmit") lo_tx = std::max(lo_tx, s.value);
  }
  EXPECT_GE(lo_rx, static_cast<double>(kPairPayloadBytes));
  EXPECT_GE(lo_tx, static_cast<double>(kPairPayloadBytes));
  auto pods = ListPodSandboxStats(g_stage->statlet());
  const v1::PodSandboxStats* p = PodById(pods, pair.pod.id);
  ASSERT_NE(p, nullptr);
  const auto& eth0 = p->linux().network().default_interface();
  EXPECT_GE(eth0.tx_bytes().value(), kPingCount * kPingBytes);
  EXPECT_GE(eth0.rx_bytes().value(), kPingCount * kPingBytes);
  EXPECT_GE(eth0.tx_packets().value(), kPingCount);
}

// The `net` probe beside a real runtime: the pair's two containers share the pod's network
// namespace, so its interfaces cannot tell them apart; their sockets can. The server's
// 4 MB go out of the server's cgroup and into the client's, each side's other direction is
// TCP's acknowledgements (and the client's pings), and every byte a container's sockets sent
// left through one of the pod's interfaces, which count it with its link header.
TEST(E2e, PairsOwnSocketsCountTheirOwnDirections) {
  REQUIRE_STAGE();
  const Workload& pair = g_pods.at("net-pair");
  std::map<std::string, double> got;  // "<container> <direction>" → bytes
  double lo_tx = -1;
  std::string why = Eventually(milliseconds(30000), [&] {
    auto samples = Scrape();
    if (!samples.ok()) return samples.status().ToString();
    got.clear();
    lo_tx = -1;
    for (const Sample& s : *samples) {
      if (Label(&s, "pod") != "net-pair") continue;
      if (s.name == "statlet_pod_network_bytes_total" && Label(&s, "interface") == "lo" &&
          Label(&s, "direction") == "transmit")
        lo_tx = s.value;
      const std::string c = Label(&s, "container");
      if (c != "server" && c != "client") continue;
      if (s.name == "statlet_container_network_transmit_bytes_total") got[c + " transmit"] = s.value;
      if (s.name == "statlet_container_network_receive_bytes_total") got[c + " receive"] = s.value;
    }
    if (got.size() != 4) return "the pair's containers have " + std::to_string(got.size()) + " of 4 series";
    // The transfer ran before the stage was ready; wait out only a scrape that came first.
    if (got["client receive"] < kPairPayloadBytes) return "client received " + std::to_string(got["client receive"]);
    return std::string();
  });
  ASSERT_EQ(why, "");
  const double payload = static_cast<double>(kPairPayloadBytes);
  EXPECT_GE(got["server transmit"], payload);
  EXPECT_GE(got["client receive"], payload);
  // The other directions: acknowledgements (a few per 64 KiB), and the client's pings.
  EXPECT_LT(got["server receive"], payload / 10) << "the server's counters read the client's direction";
  EXPECT_LT(got["client transmit"], payload / 10 + 2.0 * kPingCount * (kPingBytes + 28))
      << "the client's counters read the server's direction";
  // Sockets count IP packets; lo and eth0 count them with their 14-byte link header, and
  // the kernel's own packets (ARP, neighbour discovery) besides.
  auto pods = ListPodSandboxStats(g_stage->statlet());
  const v1::PodSandboxStats* p = PodById(pods, pair.pod.id);
  ASSERT_NE(p, nullptr);
  ASSERT_GE(lo_tx, 0) << "no lo series of the pod";
  const double eth0_tx = static_cast<double>(p->linux().network().default_interface().tx_bytes().value());
  EXPECT_LE(got["server transmit"] + got["client transmit"], lo_tx + eth0_tx);
  std::printf("net probe: server tx %.0f rx %.0f, client tx %.0f rx %.0f; pod lo tx %.0f, eth0 tx %.0f\n",
              got["server transmit"], got["server receive"], got["client transmit"], got["client receive"], lo_tx,
              eth0_tx);
}

// ---------------------------------------------------------------------------- kubernetes-mixin
// A cgroup's first process (the cgroup.procs of any hierarchy that has it), or -1.
pid_t FirstPid(const std::string& cgroup) {
  for (const char* root :
       {"/sys/fs/cgroup/pids", "/sys/fs/cgroup/memory", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    std::ifstream procs(root + cgroup + "/cgroup.procs");
    long pid = 0;
    if (procs >> pid && pid > 0) return static_cast<pid_t>(pid);
  }
  return -1;
}

// Bytes received on a pod's interfaces but lo, from its network namespace's /proc/net/dev
// as seen by one of its processes; -1 when unreadable.
double PodReceiveBytes(const Workload& w) {
  for (const auto& [cname, id] : w.containers) {
    const pid_t pid = FirstPid(ContainerCgroup(w.pod, id));
    if (pid <= 0) continue;
    std::ifstream dev("/proc/" + std::to_string(pid) + "/net/dev");
    std::string line;
    double sum = 0;
    bool any = false;
    while (std::getline(dev, line)) {
      const size_t colon = line.find(':');
      if (colon == std::string::npos) continue;
      std::string name = line.substr(0, colon);
      name.erase(0, name.find_first_not_of(' '));
      unsigned long long rx = 0;
      if (std::sscanf(line.c_str() + colon + 1, "%llu", &rx) != 1) continue;
      any = true;
      if (name != "lo") sum += static_cast<double>(rx);
    }
    if (any) return sum;
  }
  return -1;
}

// A cgroup's working set as cAdvisor defines it (usage less inactive file pages, at least
// 0), straight from the kernel; -1 when unreadable.
double KernelWorkingSet(const std::string& cgroup) {
  auto stat_value = [](const std::string& path, const std::string& key) -> std::optional<double> {
    std::ifstream stat(path);
    std::string k;
    unsigned long long v;
    while (stat >> k >> v) {
      if (k == key) return static_cast<double>(v);
    }
    return std::nullopt;
  };
  for (const char* v2 : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    std::ifstream current(v2 + cgroup + "/memory.current");
    unsigned long long usage = 0;
    if (!(current >> usage)) continue;
    const double inactive = stat_value(v2 + cgroup + "/memory.stat", "inactive_file").value_or(0);
    return std::max(0.0, static_cast<double>(usage) - inactive);
  }
  std::ifstream v1("/sys/fs/cgroup/memory" + cgroup + "/memory.usage_in_bytes");
  unsigned long long usage = 0;
  if (!(v1 >> usage)) return -1;
  const double inactive =
      stat_value("/sys/fs/cgroup/memory" + cgroup + "/memory.stat", "total_inactive_file").value_or(0);
  return std::max(0.0, static_cast<double>(usage) - inactive);
}

using testing::WallSeconds;

// An instant query's result as {group labels joined by '/' → value}; nullopt on failure.
std::optional<std::map<std::string, double>> PromQuery(const testing::PrometheusServer& prom, const std::string& promql,
                                                       const std::vector<std::string>& by, double at) {
  nlohmann::json result = prom.Query(promql, at);
  if (result == nullptr) return std::nullopt;
  std::map<std::string, double> out;
  for (const auto& row : result) {
    std::string key;
    for (const std::string& label : by) {
      if (!key.empty()) key += "/";
      key += row["metric"].value(label, "");
    }
    out[key] = std::stod(row["value"][1].get<std::string>());
  }
  return out;
}

std::map<std::string, std::string> MixinQueries() {
  std::map<std::string, std::string> q;
  std::ifstream in(STATLET_E2E_MIXIN_QUERIES);
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    const size_t space = line.find(' ');
    q[line.substr(0, space)] = line.substr(space + 1);
  }
  return q;
}

// Debian's Prometheus scrapes statlet as job="cadvisor" (every 500 ms) and evaluates
// kubernetes-mixin's expressions (tests/e2e/kubernetes_mixin_queries.txt). Each result
// equals what the test pods' cgroups and interfaces give — a pod's own cgroup never counted
// beside its containers, loopback never counted — and the same sums computed with the same
// label selectors from one ListPodSandboxMetrics answer agree.
TEST(E2e, KubernetesMixinExpressionsEqualTheCgroupsAndListPodSandboxMetrics) {
  REQUIRE_STAGE();
  const auto queries = MixinQueries();
  for (const char* name :
       {"pod_cpu_irate", "pod_cpu_seconds", "pod_working_set", "namespace_receive_bytes", "namespace_receive_irate"}) {
    ASSERT_TRUE(queries.count(name)) << name << " missing from " << STATLET_E2E_MIXIN_QUERIES;
  }
  const std::set<std::string> namespaces = {"e2e-a", "e2e-b"};
  std::map<std::string, std::vector<std::string>> pod_cgroups;  // "namespace/pod" → container cgroups
  for (const auto& [pod_name, w] : g_pods) {
    for (const auto& [cname, id] : w.containers) {
      pod_cgroups[w.pod.namespace_ + "/" + pod_name].push_back(ContainerCgroup(w.pod, id));
    }
  }
  // Each pod's containers' kernel CPU seconds over time, to read off at scrape timestamps.
  std::map<std::string, std::unique_ptr<testing::WallClockSeries>> cpu;
  for (const auto& [key, cgroups] : pod_cgroups) {
    cpu[key] = std::make_unique<testing::WallClockSeries>(
        [cgroups] {
          uint64_t ns = 0;
          for (const auto& c : cgroups) ns += KernelCpuNs(c);
          return static_cast<double>(ns) / 1e9;
        },
        milliseconds(20));
  }

  const std::string dir = g_stage->dir() + "/prometheus";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
  std::string prom_error;
  auto prom = testing::PrometheusServer::Start(
      dir, {"cadvisor", "127.0.0.1:" + std::to_string(g_stage->metrics_port()), "500ms"}, &prom_error);
  ASSERT_NE(prom, nullptr) << prom_error;
  // Four scrapes in Prometheus (irate needs two; the series must exist in both).
  std::string why = Eventually(milliseconds(40000), [&] {
    auto n = PromQuery(*prom, "count_over_time(up{job=\"cadvisor\"}[1m])", {}, WallSeconds());
    if (!n || n->empty()) return std::string("no scrapes yet");
    return n->begin()->second >= 4 ? std::string() : "scrapes: " + std::to_string(n->begin()->second);
  });
  ASSERT_EQ(why, "") << prom->Log();
  auto up = PromQuery(*prom, "up{job=\"cadvisor\"}", {}, WallSeconds());
  ASSERT_TRUE(up && up->size() == 1 && up->begin()->second == 1) << "statlet's scrape failed in Prometheus";

  // Interface counters before and after the evaluation bracket the scraped ones (they only
  // grow); the last scrape taken into the evaluation is younger than the first read.
  std::map<std::string, double> rx_before, rx_after, ws_before, ws_after;
  auto read_kernel = [&](std::map<std::string, double>* rx, std::map<std::string, double>* ws) {
    for (const auto& [pod_name, w] : g_pods) {
      (*rx)[w.pod.namespace_] += PodReceiveBytes(w);
      for (const auto& [cname, id] : w.containers)
        (*ws)[w.pod.namespace_ + "/" + pod_name] += KernelWorkingSet(ContainerCgroup(w.pod, id));
    }
  };
  read_kernel(&rx_before, &ws_before);
  const double first_read = WallSeconds();
  why = Eventually(milliseconds(5000), [&] {
    auto t = PromQuery(*prom, "timestamp(up{job=\"cadvisor\"})", {}, WallSeconds());
    if (!t || t->empty()) return std::string("no up");
    return t->begin()->second > first_read ? std::string() : std::string("no scrape after the first read");
  });
  ASSERT_EQ(why, "");
  const double at = WallSeconds();
  auto pod_cpu = PromQuery(*prom, queries.at("pod_cpu_irate"), {"namespace", "pod"}, at);
  auto pod_seconds = PromQuery(*prom, queries.at("pod_cpu_seconds"), {"namespace", "pod"}, at);
  auto pod_ws = PromQuery(*prom, queries.at("pod_working_set"), {"namespace", "pod"}, at);
  auto ns_rx = PromQuery(*prom, queries.at("namespace_receive_bytes"), {"namespace"}, at);
  auto ns_rx_rate = PromQuery(*prom, queries.at("namespace_receive_irate"), {"namespace"}, at);
  // The two scrapes irate used: the last two samples of the burner's container series.
  const Workload& burner = g_pods.at("cpu-burner");
  nlohmann::json range = prom->Query("container_cpu_usage_seconds_total{job=\"cadvisor\",id=\"" +
                                         ContainerCgroup(burner.pod, burner.containers.at("burn")) + "\"}[1m]",
                                     at);
  // How long each scrape took: statlet collected somewhere inside [timestamp, timestamp + duration].
  nlohmann::json durations = prom->Query("scrape_duration_seconds{job=\"cadvisor\"}[1m]", at);
  read_kernel(&rx_after, &ws_after);
  ASSERT_TRUE(pod_cpu && pod_seconds && pod_ws && ns_rx && ns_rx_rate && range != nullptr && range.size() == 1);
  ASSERT_TRUE(durations != nullptr && durations.size() == 1);
  const auto& values = range[0]["values"];
  ASSERT_GE(values.size(), 2u);
  const double t1 = values[values.size() - 2][0].get<double>(), t2 = values[values.size() - 1][0].get<double>();
  std::map<double, double> took;  // scrape timestamp → its duration
  for (const auto& v : durations[0]["values"]) took[v[0].get<double>()] = std::stod(v[1].get<std::string>());
  ASSERT_TRUE(took.count(t1) && took.count(t2)) << "no scrape_duration_seconds at the samples' timestamps";
  const double d1 = took.at(t1), d2 = took.at(t2);

  for (const auto& [key, cgroups] : pod_cgroups) {
    ASSERT_TRUE(pod_cpu->count(key)) << key << " missing from " << queries.at("pod_cpu_irate");
    // The pods' containers used this much CPU between the two scrapes. statlet collects when
    // scraped, so each scrape's value is the cgroups' at some moment inside that scrape: the
    // irate lies between the cgroups' rates over the narrowest and the widest such window.
    const double truth = (cpu[key]->At(t2) - cpu[key]->At(t1)) / (t2 - t1);
    const double lowest = (cpu[key]->At(t2) - cpu[key]->At(t1 + d1)) / (t2 - t1);
    const double highest = (cpu[key]->At(t2 + d2) - cpu[key]->At(t1)) / (t2 - t1);
    EXPECT_GE(pod_cpu->at(key), lowest * 0.99 - 0.005)
        << key << ": Prometheus irate " << pod_cpu->at(key) << " cores, the cgroups " << lowest << ".." << highest;
    EXPECT_LE(pod_cpu->at(key), highest * 1.01 + 0.005)
        << key << ": Prometheus irate " << pod_cpu->at(key) << " cores, the cgroups " << lowest << ".." << highest;
    // The cumulative seconds of the last scrape against the cgroups' during that scrape.
    ASSERT_TRUE(pod_seconds->count(key)) << key;
    EXPECT_GE(pod_seconds->at(key), cpu[key]->At(t2) - 0.005)
        << key << ": Prometheus " << pod_seconds->at(key) << " s, the cgroups " << cpu[key]->At(t2) << " s";
    EXPECT_LE(pod_seconds->at(key), cpu[key]->At(t2 + d2) + 0.005)
        << key << ": Prometheus " << pod_seconds->at(key) << " s, the cgroups " << cpu[key]->At(t2 + d2) << " s";
    ASSERT_TRUE(pod_ws->count(key)) << key;
    EXPECT_GE(pod_ws->at(key), std::min(ws_before[key], ws_after[key]) - kMiB) << key;
    EXPECT_LE(pod_ws->at(key), std::max(ws_before[key], ws_after[key]) + kMiB) << key;
    std::printf(
        "mixin %s: cpu %.3f cores (cgroups %.3f, scrapes took %.0f/%.0f ms), working set %.0f (cgroups %.0f..%.0f)\n",
        key.c_str(), pod_cpu->at(key), truth, d1 * 1e3, d2 * 1e3, pod_ws->at(key), ws_before[key], ws_after[key]);
  }
  for (const std::string& ns : namespaces) {
    ASSERT_TRUE(ns_rx->count(ns)) << ns;
    EXPECT_GE(ns_rx->at(ns), rx_before[ns]) << ns << ": Prometheus " << ns_rx->at(ns) << " bytes";
    EXPECT_LE(ns_rx->at(ns), rx_after[ns]) << ns << ": Prometheus " << ns_rx->at(ns) << " bytes";
    // The bridge is quiet after the workloads' exchanges: the rate cannot exceed what the
    // interfaces received over the whole evaluation, over the two scrapes' own interval
    // (irate's; a scrape may start a few ms off its 500 ms schedule).
    EXPECT_GE(ns_rx_rate->at(ns), 0.0);
    EXPECT_LE(ns_rx_rate->at(ns), (rx_after[ns] - rx_before[ns]) / (t2 - t1) + 1)
        << ns << ": scrapes " << (t2 - t1) * 1e3 << " ms apart";
    std::printf("mixin %s: receive %.0f bytes (interfaces %.0f..%.0f)\n", ns.c_str(), ns_rx->at(ns), rx_before[ns],
                rx_after[ns]);
  }
  // The net-pair's 4 MB went over lo: counting lo would put e2e-b far above its interfaces.
  EXPECT_LT(ns_rx->at("e2e-b"), static_cast<double>(kPairPayloadBytes));

  // The same selectors over one ListPodSandboxMetrics answer.
  v1::ListMetricDescriptorsResponse descriptors;
  grpc::Status s =
      g_stage->statlet()->ListMetricDescriptors(CallContext().get(), v1::ListMetricDescriptorsRequest(), &descriptors);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::map<std::string, std::vector<std::string>> keys;
  for (const auto& d : descriptors.descriptors()) keys[d.name()].assign(d.label_keys().begin(), d.label_keys().end());
  std::map<std::string, double> rx_lo, rx_hi;
  read_kernel(&rx_lo, &ws_before);
  v1::ListPodSandboxMetricsResponse metrics;
  s = g_stage->statlet()->ListPodSandboxMetrics(CallContext().get(), v1::ListPodSandboxMetricsRequest(), &metrics);
  ASSERT_TRUE(s.ok()) << s.error_message();
  read_kernel(&rx_hi, &ws_after);
  // sum by (group) (name{selectors}) over every metric of the answer, pod-level and container-level.
  auto sum_by = [&](const std::string& name, const std::vector<std::string>& group,
                    const std::function<bool(const std::map<std::string, std::string>&)>& select) {
    std::map<std::string, double> out;
    auto add = [&](const v1::Metric& m) {
      if (m.name() != name) return;
      std::map<std::string, std::string> labels;
      const auto& k = keys[name];
      for (size_t i = 0; i < k.size() && i < static_cast<size_t>(m.label_values_size()); ++i)
        labels[k[i]] = m.label_values(static_cast<int>(i));
      if (!select(labels)) return;
      std::string key;
      for (const std::string& g : group) key += (key.empty() ? "" : "/") + labels[g];
      out[key] += static_cast<double>(m.value().value());
    };
    for (const auto& pm : metrics.pod_metrics()) {
      for (const auto& m : pm.metrics()) add(m);
      for (const auto& cm : pm.container_metrics()) {
        for (const auto& m : cm.metrics()) add(m);
      }
    }
    return out;
  };
  auto image_set = [](const std::map<std::string, std::string>& l) {
    return l.count("image") && !l.at("image").empty();
  };
  auto container_and_image = [&](const std::map<std::string, std::string>& l) {
    return image_set(l) && l.count("container") && !l.at("container").empty();
  };
  auto cri_seconds = sum_by("container_cpu_usage_seconds_total", {"namespace", "pod"}, image_set);
  auto cri_ws = sum_by("container_memory_working_set_bytes", {"namespace", "pod"}, container_and_image);
  auto cri_rx = sum_by(
      "container_network_receive_bytes_total", {"namespace"},
      [](const std::map<std::string, std::string>& l) { return l.count("namespace") && !l.at("namespace").empty(); });
  const double since = WallSeconds() - at;  // seconds between Prometheus' evaluation and the answer
  for (const auto& [key, cgroups] : pod_cgroups) {
    ASSERT_TRUE(cri_seconds.count(key)) << key;
    // Whole seconds per container on this wire (truncated), plus what ran since the evaluation.
    const double slack = static_cast<double>(cgroups.size()) + pod_cpu->at(key) * since + 0.1;
    EXPECT_NEAR(cri_seconds.at(key), pod_seconds->at(key), slack) << key;
    ASSERT_TRUE(cri_ws.count(key)) << key;
    EXPECT_NEAR(cri_ws.at(key), pod_ws->at(key), 2.0 * kMiB) << key;
  }
  for (const std::string& ns : namespaces) {
    ASSERT_TRUE(cri_rx.count(ns)) << ns;
    EXPECT_GE(cri_rx.at(ns), rx_lo[ns]) << ns;
    EXPECT_LE(cri_rx.at(ns), rx_hi[ns]) << ns;
  }
  prom->Stop();
}

// 50 containers (each in a pod of its own, five alive at a time) created and removed while
// a scraper polls every 200 ms.
// The Memory QoS view beside containerd: a container created with a memory limit (and, on a
// cgroup v2 host with a memory controller, the kubelet's unified memory.min / memory.high).
// statlet shows what the runtime reports next to what the cgroup has. On a host without
// cgroup v2 memory knobs the view says "not applied" and serves no expected numbers.
const Sample* FindWith(const std::vector<Sample>& samples, const std::string& name, const std::string& cgroup,
                       const std::string& key, const std::string& value) {
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    auto id = s.labels.find("id");
    auto l = s.labels.find(key);
    if (id != s.labels.end() && id->second == cgroup && l != s.labels.end() && l->second == value) return &s;
  }
  return nullptr;
}

bool HostHasCgroupV2Memory() {
  for (const char* f : {"/sys/fs/cgroup/cgroup.controllers", "/sys/fs/cgroup/unified/cgroup.controllers"}) {
    std::ifstream in(f);
    std::string word;
    while (in >> word) {
      if (word == "memory") return true;
    }
  }
  return false;
}

// One run of the view for the host's kind: v2 (a memory controller on cgroup v2) or not.
void CheckMemoryQosView(bool v2) {
  constexpr int64_t kLimit = 64 * kMiB, kRequest = 16 * kMiB;
  ContainerSpec spec{"qos", Sh("exec sleep 2147483647")};
  spec.memory_limit_bytes = kLimit;
  // floor[(16Mi + 0.9 × (64Mi − 16Mi)) / 4096] × 4096, the kubelet's v1.27 value.
  constexpr uint64_t kHigh = 62074880;
  if (v2) spec.unified = {{"memory.min", std::to_string(kRequest)}, {"memory.high", std::to_string(kHigh)}};
  PodSpec pod_spec{"memqos", "e2e-q", {{"app", "memqos"}}};
  pod_spec.qos_class = "burstable";  // a request below its limit
  auto pod = g_stage->driver().RunPod(pod_spec);
  ASSERT_TRUE(pod.ok()) << pod.status().ToString() << g_stage->Logs();
  auto id = g_stage->driver().StartContainer(*pod, spec);
  ASSERT_TRUE(id.ok()) << id.status().ToString() << g_stage->Logs();
  const std::string cg = ContainerCgroup(*pod, *id);
  std::string why = Eventually(milliseconds(10000), [&]() -> std::string {
    auto samples = Scrape();
    if (!samples.ok()) return "scrape: " + samples.status().ToString();
    const Sample* limit = FindWith(*samples, "statlet_container_memory_qos_resource_bytes", cg, "resource", "limit");
    if (limit == nullptr) return "no resource_bytes{resource=limit} yet";
    if (limit->value != static_cast<double>(kLimit)) return "runtime limit " + std::to_string(limit->value);
    const Sample* actual = FindSample(*samples, "container_spec_memory_limit_bytes", cg);
    if (actual == nullptr || actual->value != static_cast<double>(kLimit)) return "cgroup limit differs";
    const Sample* applied = FindSample(*samples, "statlet_container_memory_qos_applied", cg);
    if (applied == nullptr) return "no applied series";
    int hot = 0;
    for (const char* z : {"below_request", "above_request", "throttling", "at_limit"}) {
      const Sample* s = FindWith(*samples, "statlet_container_memory_qos_zone", cg, "zone", z);
      if (s == nullptr) return std::string("no zone series ") + z;
      hot += s->value == 1;
    }
    if (hot != 1) return "zones not one-hot";
    const Sample* exp_min = FindWith(*samples, "statlet_container_memory_qos_expected_bytes", cg, "knob", "min");
    const Sample* exp_high = FindWith(*samples, "statlet_container_memory_qos_expected_bytes", cg, "knob", "high");
    if (!v2) {
      if (applied->value != 0) return "applied on a host without cgroup v2 memory knobs";
      if (exp_min != nullptr || exp_high != nullptr) return "expected values on a host that does not apply them";
      if (FindSample(*samples, "statlet_memory_min_bytes", cg) != nullptr) return "a memory.min on cgroup v1";
      return "";
    }
    if (applied->value != 1) return "not applied on cgroup v2 with unified knobs";
    if (exp_min == nullptr || exp_min->value != static_cast<double>(kRequest)) return "expected min differs";
    if (exp_high == nullptr || exp_high->value != static_cast<double>(kHigh)) return "expected high differs";
    const Sample* min = FindSample(*samples, "statlet_memory_min_bytes", cg);
    if (min == nullptr || min->value != static_cast<double>(kRequest)) return "cgroup memory.min differs";
    return "";
  });
  EXPECT_EQ(why, "") << (v2 ? "cgroup v2 host" : "host without cgroup v2 memory knobs");
  // The same view in statlet's CRI stats.
  v1::ListContainerStatsResponse stats = ListContainerStats(g_stage->statlet());
  const v1::ContainerStats* ours = ById(stats, *id);
  ASSERT_NE(ours, nullptr);
  ASSERT_TRUE(ours->memory().has_memory_qos());
  EXPECT_EQ(ours->memory().memory_qos().applied(), v2);
  EXPECT_EQ(ours->memory().memory_qos().has_expected_high_bytes(), v2);
  EXPECT_FALSE(ours->memory().memory_qos().zone().empty());
  EXPECT_FALSE(ours->memory().memory_qos().high_stalled());
  Status removed = g_stage->driver().RemovePod(*pod);
  EXPECT_TRUE(removed.ok()) << removed.ToString();
}

TEST(E2e, MemoryQosViewSaysNotAppliedWithoutCgroupV2Memory) {
  REQUIRE_STAGE();
  if (HostHasCgroupV2Memory()) GTEST_SKIP() << "this host has a cgroup v2 memory controller: the applied test runs";
  CheckMemoryQosView(false);
}

// The applied path needs the runtime to write memory.min / memory.high on a cgroup v2 memory
// controller; tests/vm (runtime_checks.py) runs it with containerd and runc in the guest.
TEST(E2e, MemoryQosViewAppliesTheRuntimesUnifiedKnobs) {
  REQUIRE_STAGE();
  if (!HostHasCgroupV2Memory()) {
    GTEST_SKIP() << "no cgroup v2 memory controller on this host (neither /sys/fs/cgroup nor /sys/fs/cgroup/unified "
                    "lists memory): the runtime cannot apply memory.min / memory.high here; the vm_cgroup_v2 stage "
                    "checks the applied path against containerd and runc on a cgroup-v2 kernel";
  }
  CheckMemoryQosView(true);
}

TEST(E2e, FiftyContainersChurnUnderScraping) {
  REQUIRE_STAGE();
  constexpr int kContainers = 50, kAlive = 5;
  const milliseconds kPeriod(200);
  CriDriver& driver = g_stage->driver();

  struct ScrapeRecord {
    Clock::time_point start, end;
    std::set<std::string> ids;
  };
  std::mutex mu;
  std::vector<ScrapeRecord> scrapes;
  std::vector<std::string> failures;
  std::atomic<bool> stop{false};
  // Warm the agent's connections and caches before the fd baseline.
  ASSERT_TRUE(Scrape().ok());
  ListContainerStats(g_stage->statlet());
  const int fds_before = CountFds(g_stage->agent_pid());
  ASSERT_GT(fds_before, 0);

  std::thread scraper([&] {
    auto next = Clock::now();
    while (!stop.load()) {
      ScrapeRecord r;
      r.start = Clock::now();
      auto samples = Scrape();
      r.end = Clock::now();
      std::lock_guard<std::mutex> lock(mu);
      if (!samples.ok()) {
        failures.push_back(samples.status().ToString());
      } else {
        r.ids = LiveCgroupIds(*samples);  // a removed container's exit record is not it running
        scrapes.push_back(std::move(r));
      }
      next += kPeriod;
      std::this_thread::sleep_until(next);
    }
  });

  struct Life {
    Pod pod;
    std::string id, cgroup;
    Clock::time_point started, removing, removed, pod_removing, pod_removed;
  };
  std::vector<Life> lives;
  lives.reserve(kContainers);
  auto remove = [&](Life& l) {
    l.removing = Clock::now();
    Status s = driver.RemoveContainer(l.id);
    l.removed = Clock::now();
    EXPECT_TRUE(s.ok()) << s.ToString();
    l.pod_removing = Clock::now();
    s = driver.RemovePod(l.pod);
    l.pod_removed = Clock::now();
    EXPECT_TRUE(s.ok()) << s.ToString();
  };
  for (int i = 0; i < kContainers; ++i) {
    auto pod = driver.RunPod({"churn-" + std::to_string(i), "e2e-churn", {}});
    ASSERT_TRUE(pod.ok()) << pod.status().ToString();
    auto id = driver.StartContainer(*pod, {"c", Sh("exec sleep 2147483647")});
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    lives.push_back({*pod, *id, ContainerCgroup(*pod, *id), Clock::now(), {}, {}, {}, {}});
    if (i >= kAlive) remove(lives[static_cast<size_t>(i - kAlive)]);
  }
  for (int i = std::max(0, kContainers - kAlive); i < kContainers; ++i) remove(lives[static_cast<size_t>(i)]);
  std::this_thread::sleep_for(3 * kPeriod);  // a few more scrapes after the last removal
  stop = true;
  scraper.join();

  EXPECT_TRUE(failures.empty()) << failures.size()
                                << " failed scrapes, first: " << (failures.empty() ? "" : failures[0]);
  EXPECT_GE(scrapes.size(), 20u);
  // Every scrape that started after a start returned shows it; every scrape that started
  // after a removal returned does not.
  for (const Life& l : lives) {
    for (const ScrapeRecord& r : scrapes) {
      if (r.start > l.started && r.end < l.removing) {
        EXPECT_TRUE(r.ids.count(l.cgroup)) << l.pod.name << " container missing while running";
        EXPECT_TRUE(r.ids.count(l.pod.cgroup_parent)) << l.pod.name << " missing while running";
      }
      if (r.start > l.removed) {
        EXPECT_FALSE(r.ids.count(l.cgroup)) << l.pod.name << " container stale";
      }
      if (r.start > l.pod_removed) {
        EXPECT_FALSE(r.ids.count(l.pod.cgroup_parent)) << l.pod.name << " stale";
      }
    }
  }
  // Nothing of the churn is left in any view but its containers' exit records (their
  // final values, kept for the retention; CRI leaves them out once the runtime removed them).
  auto samples = Scrape();
  ASSERT_TRUE(samples.ok());
  const std::set<std::string> records = ExitedIds(*samples);
  for (const Sample& s : *samples) {
    if (records.count(Label(&s, "id"))) continue;
    ASSERT_NE(Label(&s, "namespace"), "e2e-churn") << s.name << " " << Label(&s, "id");
  }
  std::set<std::string> left = LiveCgroupIds(*samples);
  for (const Life& l : lives) {
    EXPECT_FALSE(left.count(l.cgroup) || left.count(l.pod.cgroup_parent)) << l.pod.name << " stale";
  }
  auto cri_left = ListContainerStats(g_stage->statlet());
  for (const Life& l : lives) EXPECT_EQ(ById(cri_left, l.id), nullptr) << l.pod.name << " stale in CRI";
  // No fd growth: back to the baseline once the churn is gone.
  int fds_after = -1;
  std::string fd_why = Eventually(milliseconds(3000), [&] {
    if (!Scrape().ok()) return std::string("scrape failed");
    fds_after = CountFds(g_stage->agent_pid());
    return fds_after <= fds_before ? std::string() : std::to_string(fds_after) + " fds";
  });
  EXPECT_EQ(fd_why, "") << "statlet had " << fds_before << " fds before the churn";
  std::printf("churn: %zu scrapes, fds %d before, %d after\n", scrapes.size(), fds_before, fds_after);
}

// A container that lives about a second between two of Prometheus' 5 s scrapes (Debian's
// server) is in Prometheus with its CPU: its exit record carries the final values to the
// next scrape. It starts right after a scrape and is removed before the next one, so no
// scrape saw it running; without the record it would be missing.
TEST(E2e, AContainerBetweenTwoScrapesIsInPrometheusWithItsCpu) {
  REQUIRE_STAGE();
  constexpr double kInterval = 5;
  const std::string dir = g_stage->dir() + "/prometheus-exits";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;
  std::string prom_error;
  auto prom = testing::PrometheusServer::Start(
      dir, {"exits", "127.0.0.1:" + std::to_string(g_stage->metrics_port()), "5s"}, &prom_error);
  ASSERT_NE(prom, nullptr) << prom_error;
  // The start of Prometheus' last scrape, as it stamps the scrape's samples.
  auto last_scrape = [&] {
    auto r = PromQuery(*prom, "timestamp(up{job=\"exits\"})", {}, WallSeconds());
    return r && !r->empty() ? r->begin()->second : 0.0;
  };
  CriDriver& driver = g_stage->driver();
  auto pod = driver.RunPod({"short-lived", "e2e-exits", {}});
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();

  std::string cgroup;
  double scraped_at = 0, started_at = 0, removed_at = 0, kernel_lo = 0, kernel_hi = 0;
  // Starting a container takes a moment: if one attempt outlasts the gap, the next tries again.
  for (int attempt = 0; attempt < 3 && removed_at == 0; ++attempt) {
    const double before = last_scrape();
    std::string why = Eventually(milliseconds(15000),
                                 [&] { return last_scrape() > before ? std::string() : std::string("no new scrape"); });
    ASSERT_EQ(why, "") << prom->Log();
    scraped_at = last_scrape();
    started_at = WallSeconds();
    auto id = driver.StartContainer(
        *pod, {"burn-" + std::to_string(attempt), Sh("timeout 1 sh -c 'while :; do :; done'; exit 0")});
    ASSERT_TRUE(id.ok()) << id.status().ToString();
    cgroup = ContainerCgroup(*pod, *id);
    // The runtime removes the cgroup as the container exits: its CPU is read while it runs,
    // and the final value lies between the last read and that read plus the time until the
    // cgroup was gone (one busy thread).
    kernel_lo = kernel_hi = 0;
    double last_read = 0;
    why = Eventually(milliseconds(10000), [&] {
      const uint64_t ns = KernelCpuNs(cgroup);
      const double now = WallSeconds();
      if (ns > 0) {
        kernel_lo = static_cast<double>(ns) / 1e9;
        last_read = now;
        return std::string("running");
      }
      if (last_read == 0) return std::string("not started");
      kernel_hi = kernel_lo + (now - last_read);
      return std::string();
    });
    ASSERT_EQ(why, "") << "the container's cgroup did not come and go";
    // The runtime handles the exit after the cgroup went: removed once it says exited (a
    // removal while it still handles the exit is refused, and tried again).
    why = Eventually(milliseconds(10000), [&] {
      auto st = driver.ContainerStatus(*id);
      if (!st.ok() || st->state() != lifecycle::CONTAINER_EXITED) return std::string("not exited yet");
      Status removed = driver.RemoveContainer(*id);
      return removed.ok() ? std::string() : removed.ToString();
    });
    ASSERT_EQ(why, "") << "the exited container was not removed";
    const double now = WallSeconds();
    if (now < scraped_at + kInterval - 0.5) {
      removed_at = now;
    } else {
      std::printf("attempt %d: removed %.2f s after a scrape, too close to the next; again\n", attempt,
                  now - scraped_at);
    }
  }
  ASSERT_NE(removed_at, 0.0) << "no container could live between two scrapes";
  ASSERT_GT(kernel_lo, 0.05) << "the container did not burn CPU";

  const std::string selector = "{job=\"exits\", id=\"" + cgroup + "\"}";
  std::string why = Eventually(milliseconds(20000), [&] {
    auto r = PromQuery(*prom, "container_cpu_usage_seconds_total" + selector, {}, WallSeconds());
    return r && !r->empty() ? std::string() : std::string("not in Prometheus");
  });
  ASSERT_EQ(why, "") << "the short-lived container never reached Prometheus";
  // Every sample of it comes from a scrape after its removal, at its final CPU.
  const nlohmann::json cpu = prom->Query("container_cpu_usage_seconds_total" + selector + "[1m]", WallSeconds());
  ASSERT_EQ(cpu.size(), 1u) << cpu.dump();
  for (const auto& v : cpu[0]["values"]) {
    const double t = v[0].get<double>(), x = std::stod(v[1].get<std::string>());
    EXPECT_GT(t, removed_at) << "a scrape saw the container running";
    EXPECT_GE(x, kernel_lo) << "at " << t;
    EXPECT_LE(x, kernel_hi) << "at " << t;
  }
  auto exit_time = PromQuery(*prom, "statlet_container_exit_time_seconds" + selector, {}, WallSeconds());
  ASSERT_TRUE(exit_time && exit_time->size() == 1) << "no exit time in Prometheus";
  EXPECT_GE(exit_time->begin()->second, started_at);
  EXPECT_LE(exit_time->begin()->second, removed_at);
  std::printf(
      "exits: a container removed %.2f s after a scrape, in Prometheus at %.3f s CPU (the cgroup's %.3f..%.3f)\n",
      removed_at - scraped_at, std::stod(cpu[0]["values"][0][1].get<std::string>()), kernel_lo, kernel_hi);
  ASSERT_TRUE(driver.RemovePod(*pod).ok());
}

}  // namespace
}  // namespace statlet::e2e

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (geteuid() != 0) {
    std::fprintf(stderr, "the e2e stage needs root (cgroups, containerd)\n");
    return 1;
  }
  ::testing::AddGlobalTestEnvironment(new statlet::e2e::StageEnvironment());
  return RUN_ALL_TESTS();
}
