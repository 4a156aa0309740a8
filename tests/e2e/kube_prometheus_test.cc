// kube-prometheus over statlet: Debian's Prometheus scrapes the stage's statlet at
// /metrics/cadvisor through deploy/kube-prometheus/servicemonitor.yaml's relabelling (a
// static scrape config carrying the Prometheus Operator's relabel rules for a ServiceMonitor
// endpoint, then the ServiceMonitor's own, translated from the file), scrapes a fixture of
// kube-state-metrics' kube_pod_info for the test pods, and loads kube-prometheus' own rule
// file (tests/deploy/kube-prometheus/, from kube-prometheus at 4d719f1d). Its recording rules
// are compared with the pods' cgroups, read by the test from the kernel every few ms:
//  - node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate equals the
//    irate of the two raw samples it used, each of which lies between the cgroup's CPU time
//    at the start and at the end of its scrape (statlet collects inside the scrape);
//  - …:sum_rate5m lies within Prometheus' extrapolation of the raw samples' increase, which
//    is bracketed the same way (the stage holds less than the five minutes of the window);
//  - node_namespace_pod_container:container_memory_{working_set_bytes,rss,cache} equal the
//    raw sample they used, each within the cgroup's values read during its scrape;
//  - every recorded series carries the node of kube_pod_info;
// and CPUThrottlingHigh's expression, evaluated as the file has it, holds for a container
// spinning under a 20 % CPU quota and not for one idling under a full-CPU quota; the alert is
// pending for the first (its `for` is 15 minutes; the file is loaded unchanged).
#include <sys/stat.h>
#include <unistd.h>

#include <httplib.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/e2e/e2e_shared.h"
#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/prometheus_server.h"

namespace statlet::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr char kNode[] = "e2e-node";
constexpr char kKpNamespace[] = "e2e-kp";
constexpr char kPod[] = "kp-throttled";
constexpr char kStatletPod[] = "statlet-e2e";  // the pod statlet would run in
constexpr double kBytesPerMiB = 1024.0 * 1024.0;
constexpr double kMemorySlack = kBytesPerMiB;

// ---------------------------------------------------------------------------- the kernel
// One container's cgroup values, as statlet reads them (docs/metrics.md's source columns).
struct KernelValues {
  double cpu_seconds = NAN, working_set = NAN, rss = NAN, cache = NAN, periods = NAN, throttled = NAN;
};

std::map<std::string, double> KeyValues(const std::string& path) {
  std::map<std::string, double> out;
  std::ifstream in(path);
  std::string key;
  double value;
  while (in >> key >> value) out[key] = value;
  return out;
}

double OneValue(const std::string& path) {
  std::ifstream in(path);
  double v;
  return in >> v ? v : NAN;
}

KernelValues ReadKernel(const std::string& cgroup) {
  KernelValues k;
  for (const char* v1 : {"/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/cpu,cpuacct"}) {
    if (double ns = OneValue(v1 + cgroup + "/cpuacct.usage"); !std::isnan(ns)) {
      k.cpu_seconds = ns / 1e9;
      break;
    }
  }
  for (const char* cpu :
       {"/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpu,cpuacct", "/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    auto stat = KeyValues(cpu + cgroup + "/cpu.stat");
    if (std::isnan(k.cpu_seconds) && stat.count("usage_usec")) k.cpu_seconds = stat["usage_usec"] / 1e6;
    if (std::isnan(k.periods) && stat.count("nr_periods")) {
      k.periods = stat["nr_periods"];
      k.throttled = stat["nr_throttled"];
    }
  }
  if (double usage = OneValue("/sys/fs/cgroup/memory" + cgroup + "/memory.usage_in_bytes"); !std::isnan(usage)) {
    auto stat = KeyValues("/sys/fs/cgroup/memory" + cgroup + "/memory.stat");
    k.working_set = std::max(0.0, usage - stat["total_inactive_file"]);
    k.rss = stat["total_rss"];
    k.cache = stat["total_cache"];
    return k;
  }
  for (const char* v2 : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
    if (double usage = OneValue(v2 + cgroup + "/memory.current"); !std::isnan(usage)) {
      auto stat = KeyValues(v2 + cgroup + "/memory.stat");
      k.working_set = std::max(0.0, usage - stat["inactive_file"]);
      k.rss = stat["anon"];
      k.cache = stat["file"];
      break;
    }
  }
  return k;
}

// Every container's values read every 10 ms on a thread, with the wall clock, so that the
// range a value took during a scrape can be read off afterwards.
class KernelSampler {
 public:
  explicit KernelSampler(std::map<std::string, std::string> cgroups) : cgroups_(std::move(cgroups)) {
    thread_ = std::thread([this] {
      while (!stop_) {
        std::map<std::string, KernelValues> now;
        const double before = testing::WallSeconds();
        for (const auto& [key, cgroup] : cgroups_) now[key] = ReadKernel(cgroup);
        const double after = testing::WallSeconds();
        {
          std::lock_guard<std::mutex> lock(mu_);
          readings_.push_back({before, after, std::move(now)});
        }
        std::this_thread::sleep_for(milliseconds(10));  // the sampling period, not synchronisation
      }
    });
  }
  ~KernelSampler() {
    stop_ = true;
    thread_.join();
  }
  // The smallest and largest value of `field` of a container read in any pass that overlaps
  // [from, to], widened by the passes just before and after (the value at `from` lies between
  // those two readings). nullopt when no pass brackets the interval.
  std::optional<std::pair<double, double>> Range(const std::string& key, double KernelValues::*field, double from,
                                                 double to) {
    std::lock_guard<std::mutex> lock(mu_);
    size_t first = readings_.size(), last = 0;
    for (size_t i = 0; i < readings_.size(); ++i) {
      if (readings_[i].end < from) first = i;  // the last pass wholly before
    }
    if (first == readings_.size()) return std::nullopt;
    for (last = first; last < readings_.size() && readings_[last].start <= to; ++last) {
    }
    if (last == readings_.size()) return std::nullopt;  // no pass wholly after yet
    double lo = INFINITY, hi = -INFINITY;
    for (size_t i = first; i <= last; ++i) {
      auto it = readings_[i].values.find(key);
      if (it == readings_[i].values.end() || std::isnan(it->second.*field)) return std::nullopt;
      lo = std::min(lo, it->second.*field);
      hi = std::max(hi, it->second.*field);
    }
    return std::make_pair(lo, hi);
  }
  KernelValues Latest(const std::string& key) {
    std::lock_guard<std::mutex> lock(mu_);
    return readings_.empty() ? KernelValues{} : readings_.back().values[key];
  }

 private:
  struct Reading {
    double start, end;
    std::map<std::string, KernelValues> values;
  };
  std::map<std::string, std::string> cgroups_;  // "namespace/pod/container" → cgroup path
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<Reading> readings_;
  std::thread thread_;
};

// ---------------------------------------------------------------------------- the pod
// Two containers with CPU quotas written into their cgroups as a runtime would from a CPU
// limit (the stage's CRI messages carry memory only): `spin` busy under 20 % of a CPU,
// `light` waking every 20 ms under a whole CPU. Removed when the test ends.
class ThrottledPod {
 public:
  ~ThrottledPod() {
    if (!pod_) return;
    if (Status s = g_stage->driver().RemovePod(*pod_); !s.ok()) {
      std::fprintf(stderr, "remove %s: %s\n", kPod, s.ToString().c_str());
    }
  }
  Status Start() {
    CriDriver& driver = g_stage->driver();
    auto pod = driver.RunPod({kPod, kKpNamespace, {{"app", kPod}}});
    if (!pod.ok()) return pod.status();
    pod_ = *pod;
    for (const auto& [name, script, quota_us] :
         {std::tuple<std::string, std::string, int>{"spin", "while :; do :; done", 20000},
          {"light", "while :; do usleep 20000; done", 100000}}) {
      auto id = driver.StartContainer(*pod_, {name, {"sh", "-c", script}});
      if (!id.ok()) return id.status();
      containers_[name] = *id;
      for (const std::string& mount : CgroupMounts()) {
        const std::string cg = mount + pod_->cgroup_parent + "/" + *id;
        struct stat st;
        if (stat((cg + "/cpu.cfs_quota_us").c_str(), &st) == 0) {
          if (!(std::ofstream(cg + "/cpu.cfs_quota_us") << quota_us).flush()) return Internal("write " + cg);
        } else if (stat((cg + "/cpu.max").c_str(), &st) == 0) {
          if (!(std::ofstream(cg + "/cpu.max") << quota_us << " 100000").flush()) return Internal("write " + cg);
        }
      }
    }
    return Status::Ok();
  }
  const Pod& pod() const { return *pod_; }
  const std::map<std::string, std::string>& containers() const { return containers_; }

 private:
  std::optional<Pod> pod_;
  std::map<std::string, std::string> containers_;
};

// ---------------------------------------------------------------------------- kube_pod_info
// kube-state-metrics' kube_pod_info for the test pods (its labels, one series per pod), on
// a loopback HTTP server Prometheus scrapes as job="kube-state-metrics".
class PodInfoFixture {
 public:
  explicit PodInfoFixture(std::string body) : body_(std::move(body)) {
    server_.Get("/metrics", [this](const httplib::Request&, httplib::Response& r) {
      r.set_content(body_, "text/plain; version=0.0.4; charset=utf-8");
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~PodInfoFixture() {
    server_.stop();
    thread_.join();
  }
  int port() const { return port_; }

 private:
  std::string body_;
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
};

// ---------------------------------------------------------------------------- Prometheus' config
// A ServiceMonitor relabel config (camelCase, deploy/kube-prometheus/servicemonitor.yaml) as
// the Operator writes it into Prometheus' configuration.
YAML::Node RelabelConfig(const YAML::Node& r) {
  static const std::map<std::string, std::string> keys = {{"sourceLabels", "source_labels"},
                                                          {"targetLabel", "target_label"},
                                                          {"separator", "separator"},
                                                          {"regex", "regex"},
                                                          {"modulus", "modulus"},
                                                          {"replacement", "replacement"},
                                                          {"action", "action"}};
  YAML::Node out;
  for (const auto& kv : r) {
    const std::string key = kv.first.as<std::string>();
    auto it = keys.find(key);
    if (it == keys.end()) throw std::runtime_error("relabel field " + key + " is not translated here");
    out[it->second] = kv.second;
  }
  return out;
}

YAML::Node Relabel(std::vector<std::string> source, std::string target, std::string regex = "",
                   std::string replacement = "") {
  YAML::Node n;
  if (!source.empty()) {
    for (const auto& s : source) n["source_labels"].push_back(s);
    n["separator"] = ";";
  }
  if (!regex.empty()) n["regex"] = regex;
  if (!replacement.empty()) n["replacement"] = replacement;
  n["target_label"] = target;
  return n;
}

// The scrape job the Operator would generate for the ServiceMonitor's endpoint (prometheus-
// operator pkg/prometheus/promcfg.go generateServiceMonitorConfig at 6adcebc5, with the
// EndpointSlice role kube-prometheus' Prometheus uses), as a static target carrying the meta
// labels endpoints discovery gives a statlet pod.
YAML::Node StatletJob(const std::string& servicemonitor_file, const std::string& target) {
  YAML::Node sm = YAML::LoadFile(servicemonitor_file);
  YAML::Node ep = sm["spec"]["endpoints"][0];
  YAML::Node job;
  job["job_name"] = "serviceMonitor/statlet/statlet/0";
  job["honor_labels"] = ep["honorLabels"].as<bool>(false);
  job["honor_timestamps"] = ep["honorTimestamps"].as<bool>(true);
  job["metrics_path"] = ep["path"].as<std::string>("/metrics");
  YAML::Node sc;
  sc["targets"].push_back(target);
  sc["labels"]["__meta_kubernetes_namespace"] = "statlet";
  sc["labels"]["__meta_kubernetes_service_name"] = "statlet";
  sc["labels"]["__meta_kubernetes_pod_name"] = kStatletPod;
  sc["labels"]["__meta_kubernetes_pod_container_name"] = "statlet";
  sc["labels"]["__meta_kubernetes_pod_node_name"] = kNode;
  sc["labels"]["__meta_kubernetes_endpointslice_address_target_kind"] = "Pod";
  sc["labels"]["__meta_kubernetes_endpointslice_address_target_name"] = kStatletPod;
  sc["labels"]["__meta_kubernetes_endpointslice_port_name"] = ep["port"].as<std::string>();
  job["static_configs"].push_back(sc);
  const std::vector<std::string> target_ref = {"__meta_kubernetes_endpointslice_address_target_kind",
                                               "__meta_kubernetes_endpointslice_address_target_name"};
  YAML::Node rl;
  rl.push_back(Relabel(target_ref, "node", "Node;(.*)", "${1}"));
  rl.push_back(Relabel(target_ref, "pod", "Pod;(.*)", "${1}"));
  rl.push_back(Relabel({"__meta_kubernetes_namespace"}, "namespace"));
  rl.push_back(Relabel({"__meta_kubernetes_service_name"}, "service"));
  rl.push_back(Relabel({"__meta_kubernetes_pod_name"}, "pod"));
  rl.push_back(Relabel({"__meta_kubernetes_pod_container_name"}, "container"));
  rl.push_back(Relabel({"__meta_kubernetes_service_name"}, "job", "", "${1}"));
  rl.push_back(Relabel({}, "endpoint", "", ep["port"].as<std::string>()));
  for (const auto& r : ep["relabelings"]) rl.push_back(RelabelConfig(r));
  job["relabel_configs"] = rl;
  for (const auto& r : ep["metricRelabelings"]) job["metric_relabel_configs"].push_back(RelabelConfig(r));
  return job;
}

// ---------------------------------------------------------------------------- queries
nlohmann::json Query(const testing::PrometheusServer& prom, const std::string& q, double at) {
  nlohmann::json r = prom.Query(q, at);
  return r == nullptr ? nlohmann::json::array() : r;
}

std::string Key(const nlohmann::json& metric) {
  return metric.value("namespace", "") + "/" + metric.value("pod", "") + "/" + metric.value("container", "");
}

// The (timestamp, value) samples of a range query's one series.
std::vector<std::pair<double, double>> Samples(const nlohmann::json& series) {
  std::vector<std::pair<double, double>> out;
  for (const auto& v : series["values"]) out.emplace_back(v[0].get<double>(), std::stod(v[1].get<std::string>()));
  return out;
}

TEST(E2e, KubePrometheusRulesGiveThePodsCgroups) {
  REQUIRE_STAGE();
  const std::string root = std::string(STATLET_E2E_SOURCE_DIR);
  const std::string dir = g_stage->dir() + "/kube-prometheus";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;

  ThrottledPod throttled;
  Status s = throttled.Start();
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << g_stage->Logs();

  // The containers compared: every one of the stage's pods and of this test's.
  std::map<std::string, std::string> cgroups;  // "namespace/pod/container" → cgroup
  std::string pod_info;
  auto add_pod = [&](const Pod& pod, const std::map<std::string, std::string>& containers) {
    for (const auto& [name, id] : containers)
      cgroups[pod.namespace_ + "/" + pod.name + "/" + name] = pod.cgroup_parent + "/" + id;
    pod_info +=
        "kube_pod_info{namespace=\"" + pod.namespace_ + "\",pod=\"" + pod.name + "\",uid=\"" + pod.uid +
        "\",host_ip=\"10.0.0.1\",pod_ip=\"\",node=\"" + kNode +
        "\",created_by_kind=\"<none>\",created_by_name=\"<none>\",priority_class=\"\",host_network=\"false\"} 1\n";
  };
  for (const auto& [name, w] : g_pods) add_pod(w.pod, w.containers);
  add_pod(throttled.pod(), throttled.containers());
  pod_info = "# HELP kube_pod_info Information about pod.\n# TYPE kube_pod_info gauge\n" + pod_info;
  KernelSampler kernel(cgroups);
  PodInfoFixture fixture(pod_info);
  ASSERT_GT(fixture.port(), 0);

  // kube-prometheus' rule file, as the Operator hands a PrometheusRule's spec to Prometheus.
  const std::string rule_source = root + "/tests/deploy/kube-prometheus/kubernetesControlPlane-prometheusRule.yaml";
  YAML::Node rule_object = YAML::LoadFile(rule_source);
  size_t rule_groups = rule_object["spec"]["groups"].size(), rules = 0;
  std::string throttling_expr;
  for (const auto& g : rule_object["spec"]["groups"]) {
    for (const auto& r : g["rules"]) {
      ++rules;
      if (r["alert"] && r["alert"].as<std::string>() == "CPUThrottlingHigh")
        throttling_expr = r["expr"].as<std::string>();
    }
  }
  ASSERT_FALSE(throttling_expr.empty()) << "no CPUThrottlingHigh in " << rule_source;
  {
    YAML::Emitter out;
    out << rule_object["spec"];
    std::ofstream(dir + "/kube-prometheus-rules.yaml") << out.c_str() << "\n";
  }
  s = RunCommand({"promtool", "check", "rules", "--lint=none", dir + "/kube-prometheus-rules.yaml"},
                 dir + "/promtool.log");
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << Tail(dir + "/promtool.log", 20);

  YAML::Node config;
  config["global"]["scrape_interval"] = "1s";
  config["global"]["evaluation_interval"] = "1s";
  config["rule_files"].push_back(dir + "/kube-prometheus-rules.yaml");
  config["scrape_configs"].push_back(StatletJob(root + "/deploy/kube-prometheus/servicemonitor.yaml",
                                                "127.0.0.1:" + std::to_string(g_stage->metrics_port())));
  YAML::Node ksm;
  ksm["job_name"] = "kube-state-metrics";
  ksm["honor_labels"] = true;
  YAML::Node ksm_target;
  ksm_target["targets"].push_back("127.0.0.1:" + std::to_string(fixture.port()));
  ksm["static_configs"].push_back(ksm_target);
  config["scrape_configs"].push_back(ksm);
  YAML::Emitter emitted;
  emitted << config;
  std::string error;
  auto prom = testing::PrometheusServer::StartWithConfig(dir, std::string(emitted.c_str()) + "\n", &error);
  ASSERT_NE(prom, nullptr) << error;

  // Prometheus loaded the whole file.
  {
    auto r = testing::TimedGet(prom->port(), "/api/v1/rules").response;
    ASSERT_TRUE(r && r->status == 200);
    auto j = nlohmann::json::parse(r->body);
    size_t got_rules = 0;
    for (const auto& g : j["data"]["groups"]) got_rules += g["rules"].size();
    EXPECT_EQ(j["data"]["groups"].size(), rule_groups);
    EXPECT_EQ(got_rules, rules);
  }

  const std::string sel = "{namespace=~\"e2e-.*\"}";
  const std::vector<std::string> records = {
      "node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate",
      "node_namespace_pod_container:container_cpu_usage_seconds_total:sum_rate5m",
      "node_namespace_pod_container:container_memory_working_set_bytes",
      "node_namespace_pod_container:container_memory_rss",
      "node_namespace_pod_container:container_memory_cache",
  };
  // Every record has every container, and the alert is pending for the spinning one.
  std::string why = Eventually(milliseconds(90000), [&] {
    const double now = testing::WallSeconds();
    for (const std::string& r : records) {
      std::set<std::string> have;
      for (const auto& row : Query(*prom, r + sel, now)) have.insert(Key(row["metric"]));
      for (const auto& [key, cg] : cgroups) {
        if (!have.count(key)) return r + " has no " + key;
      }
    }
    if (Query(*prom, "ALERTS{alertname=\"CPUThrottlingHigh\", pod=\"" + std::string(kPod) + "\", container=\"spin\"}",
              now)
            .empty())
      return std::string("CPUThrottlingHigh is not pending for spin");
    return std::string();
  });
  ASSERT_EQ(why, "") << "\n" << prom->Log().substr(0, 4000) << g_stage->Logs();
  // Then ten more scrapes: every record has a few raw samples behind it.
  auto scrapes = [&] {
    auto r = Query(*prom, "count_over_time(up{job=\"kubelet\"}[5m])", testing::WallSeconds());
    return r.empty() ? 0.0 : std::stod(r[0]["value"][1].get<std::string>());
  };
  const double scraped = scrapes();
  why = Eventually(milliseconds(30000),
                   [&] { return scrapes() >= scraped + 10 ? std::string() : "scrapes: " + std::to_string(scrapes()); });
  ASSERT_EQ(why, "");

  // The labels the relabelling gave: kube-prometheus' selector and the node, and no target
  // label of statlet's own pod on series statlet leaves without a pod (the root cgroup).
  const double now = testing::WallSeconds();
  auto raw_cpu = Query(*prom, "container_cpu_usage_seconds_total", now);
  ASSERT_FALSE(raw_cpu.empty());
  for (const auto& row : raw_cpu) {
    const auto& m = row["metric"];
    EXPECT_EQ(m.value("job", ""), "kubelet") << m.dump();
    EXPECT_EQ(m.value("metrics_path", ""), "/metrics/cadvisor") << m.dump();
    EXPECT_EQ(m.value("node", ""), kNode) << m.dump();
    EXPECT_NE(m.value("pod", ""), kStatletPod) << m.dump();
    EXPECT_NE(m.value("container", ""), "statlet") << m.dump();
  }
  EXPECT_FALSE(Query(*prom, "container_cpu_usage_seconds_total{pod=\"\"}", now).empty())
      << "no series without a pod (a node-level cgroup)";
  // kube-prometheus' metric relabelling: no spec family outside pods, some inside.
  EXPECT_TRUE(Query(*prom, "container_spec_cpu_shares{pod=\"\"}", now).empty());
  EXPECT_FALSE(Query(*prom, "container_spec_cpu_shares{pod!=\"\"}", now).empty());

  // Each record at its own last evaluation against the raw samples it used and the kernel.
  // A sample is stamped with its scrape's start and collected inside the scrape: its value is
  // the cgroup's at some moment of [t, t + scrape duration]. The rule ran at T; the scrape
  // that started last before T may have been unseen by the rule: the sample before it is
  // then the last one used. Not only when that scrape ended after T: Prometheus takes a
  // scrape's duration before it commits the scrape's samples, and a slow commit (a slow
  // disk under the WAL) lands after a rule that ran after the duration's end.
  auto durations = [&](double at) {
    std::map<double, double> d;
    auto r = Query(*prom, "scrape_duration_seconds{job=\"kubelet\"}[5m]", at);
    if (r.size() == 1) {
      for (const auto& [t, v] : Samples(r[0])) d[t] = v;
    }
    return d;
  };
  // A record's value and what the cgroups allow: for irate the cgroups' CPU rate between the
  // two scrapes at its narrowest and widest (those scrapes' starts and ends); for rate5m the
  // same for the increase, with Prometheus' extrapolation, over 300 s; for memory the
  // cgroup's values during the scrape.
  struct Compared {
    double got, lo, hi;
  };
  std::map<std::string, std::map<std::string, Compared>> table;  // record → key → values
  size_t stale_last = 0;
  const std::map<std::string, std::pair<std::string, double KernelValues::*>> memory = {
      {"node_namespace_pod_container:container_memory_working_set_bytes",
       {"container_memory_working_set_bytes", &KernelValues::working_set}},
      {"node_namespace_pod_container:container_memory_rss", {"container_memory_rss", &KernelValues::rss}},
      {"node_namespace_pod_container:container_memory_cache", {"container_memory_cache", &KernelValues::cache}},
  };
  for (const std::string& record : records) {
    for (const auto& row : Query(*prom, "timestamp(" + record + sel + ")", testing::WallSeconds())) {
      const std::string key = Key(row["metric"]);
      if (!cgroups.count(key)) continue;  // a sandbox or other series of a test pod: not compared
      const double at = std::stod(row["value"][1].get<std::string>());
      auto got_rows =
          Query(*prom,
                record + "{namespace=\"" + row["metric"].value("namespace", "") + "\", pod=\"" +
                    row["metric"].value("pod", "") + "\", container=\"" + row["metric"].value("container", "") + "\"}",
                at);
      ASSERT_EQ(got_rows.size(), 1u) << record << " " << key;
      EXPECT_EQ(got_rows[0]["metric"].value("node", ""), kNode) << record << " " << key;
      const double got = std::stod(got_rows[0]["value"][1].get<std::string>());
      const std::string raw_name = record.find("container_cpu") != std::string::npos
                                       ? "container_cpu_usage_seconds_total"
                                       : memory.at(record).first;
      auto raw = Query(*prom,
                       raw_name + "{job=\"kubelet\", metrics_path=\"/metrics/cadvisor\", image!=\"\", namespace=\"" +
                           row["metric"].value("namespace", "") + "\", pod=\"" + row["metric"].value("pod", "") +
                           "\", container=\"" + row["metric"].value("container", "") + "\"}[5m]",
                       at);
      ASSERT_EQ(raw.size(), 1u) << raw_name << " " << key << " at " << at;
      std::vector<std::pair<double, double>> v = Samples(raw[0]);
      const std::map<double, double> took = durations(at);
      ASSERT_GE(v.size(), 3u) << key;
      for (const auto& [t, x] : v) ASSERT_TRUE(took.count(t)) << "no scrape_duration_seconds at " << t;
      // The kernel's range over a sample's scrape. A scrape that arrives while another
      // caller's collection runs joins it (single flight), whose reads began before the
      // scrape did: by at most one collection, which no scrape of this run outlasted.
      double longest = 0;
      for (const auto& [ts, d] : took) longest = std::max(longest, d);
      auto bracket = [&](double KernelValues::*field, double t) {
        return kernel.Range(key, field, t - longest, t + took.at(t));
      };
      bool matched = false;
      for (size_t drop = 0; drop <= 1 && !matched; ++drop) {
        const size_t n = v.size() - drop;
        if (record.find(":sum_irate") != std::string::npos) {
          const auto [t1, x1] = v[n - 2];
          const auto [t2, x2] = v[n - 1];
          const double irate = (x2 - x1) / (t2 - t1);
          if (std::fabs(got - irate) > 1e-9 * std::max(1.0, std::fabs(irate))) continue;
          auto k1 = bracket(&KernelValues::cpu_seconds, t1), k2 = bracket(&KernelValues::cpu_seconds, t2);
          ASSERT_TRUE(k1 && k2) << key << ": the kernel was not read around " << t1 << " and " << t2;
          EXPECT_GE(x1, k1->first - 1e-6) << key;
          EXPECT_LE(x1, k1->second + 1e-6) << key;
          EXPECT_GE(x2, k2->first - 1e-6) << key;
          EXPECT_LE(x2, k2->second + 1e-6) << key;
          // The CPU the cgroups used between the two scrapes, at its narrowest and widest.
          table[record][key] = {got, (k2->first - k1->second) / (t2 - t1), (k2->second - k1->first) / (t2 - t1)};
          matched = true;
        } else if (record.find(":sum_rate5m") != std::string::npos) {
          // rate(x[5m]): the increase from the first to the last sample, extrapolated towards
          // the window's ends by at most 1.1 average intervals each, over 300 s.
          const auto [t1, x1] = v.front();
          const auto [t2, x2] = v[n - 1];
          const double sampled = t2 - t1, avg = sampled / static_cast<double>(n - 1);
          const double lo = (x2 - x1) / 300, hi = (x2 - x1) * (sampled + 2.2 * avg) / sampled / 300;
          if (got < lo * (1 - 1e-9) || got > hi * (1 + 1e-9)) continue;
          auto k1 = bracket(&KernelValues::cpu_seconds, t1), k2 = bracket(&KernelValues::cpu_seconds, t2);
          ASSERT_TRUE(k1 && k2) << key;
          EXPECT_GE(x1, k1->first - 1e-6) << key;
          EXPECT_LE(x1, k1->second + 1e-6) << key;
          EXPECT_GE(x2, k2->first - 1e-6) << key;
          EXPECT_LE(x2, k2->second + 1e-6) << key;
          table[record][key] = {got, (k2->first - k1->second) / 300,
                                (k2->second - k1->first) * (sampled + 2.2 * avg) / sampled / 300};
          matched = true;
        } else {
          const auto [t, x] = v[n - 1];
          if (got != x) continue;
          auto k = bracket(memory.at(record).second, t);
          ASSERT_TRUE(k) << key << ": the kernel was not read around " << t;
          // The forker's short-lived children come and go between the 10 ms reads: a scrape
          // may see one the reads missed (as the mixin test in e2e_test.cc allows, 1 MiB).
          EXPECT_GE(x, k->first - kMemorySlack)
              << record << " " << key << ": scraped " << x << ", the cgroup " << k->first << ".." << k->second;
          EXPECT_LE(x, k->second + kMemorySlack)
              << record << " " << key << ": scraped " << x << ", the cgroup " << k->first << ".." << k->second;
          table[record][key] = {got, k->first, k->second};
          matched = true;
        }
        if (matched && drop == 1) ++stale_last;
      }
      if (!matched) {
        // One short line first (CI prints a failure's first lines only): the last samples
        // against the rule's time, each scrape's duration, and the pairs' rates.
        std::string tail;
        for (size_t i = v.size() > 4 ? v.size() - 4 : 0; i < v.size(); ++i) {
          char b[96];
          std::snprintf(b, sizeof b, " [%+.0f ms, %.9g, took %.0f ms]", (v[i].first - at) * 1e3, v[i].second,
                        took.at(v[i].first) * 1e3);
          tail += b;
          if (i > 0 && v[i].second < v[i - 1].second) tail += " DECREASE";
        }
        ADD_FAILURE() << record.substr(record.rfind(':') + 1) << " " << key << " = " << got
                      << " is from no pair of its last samples:" << tail << "\n"
                      << "all samples: " << raw[0]["values"].dump();
      }
    }
  }
  for (const std::string& record : records) {
    EXPECT_EQ(table[record].size(), cgroups.size()) << record;
    for (const auto& [key, c] : table[record]) {
      std::printf("%-75s %-27s %14.6f  cgroups %.6f..%.6f\n", record.c_str(), key.c_str(), c.got, c.lo, c.hi);
    }
  }
  std::printf("%zu of the records' evaluations had not seen the scrape in flight at their time\n", stale_last);
  // Not vacuous: the burner burns, the allocator holds its 48 MiB.
  const std::string burner = "e2e-a/cpu-burner/burn";
  EXPECT_GT(table["node_namespace_pod_container:container_cpu_usage_seconds_total:sum_irate"][burner].got, 0.0);
  EXPECT_GT(table["node_namespace_pod_container:container_memory_working_set_bytes"]["e2e-a/mem-alloc/alloc"].got,
            40 * kBytesPerMiB);

  // CPUThrottlingHigh's expression, as the file has it, now.
  const double t = testing::WallSeconds();
  const std::string spin = std::string(kKpNamespace) + "/" + kPod + "/spin",
                    light = std::string(kKpNamespace) + "/" + kPod + "/light";
  std::map<std::string, double> holds;
  for (const auto& row : Query(*prom, throttling_expr, t)) {
    holds[Key(row["metric"])] = std::stod(row["value"][1].get<std::string>());
  }
  const KernelValues spin_k = kernel.Latest(spin), light_k = kernel.Latest(light);
  std::printf(
      "CPUThrottlingHigh's expression holds for %zu series; spin %.3f (the kernel since start: %.0f of %.0f "
      "periods throttled), light %s (%.0f of %.0f)\n",
      holds.size(), holds.count(spin) ? holds[spin] : -1.0, spin_k.throttled, spin_k.periods,
      holds.count(light) ? "holds" : "does not hold", light_k.throttled, light_k.periods);
  ASSERT_TRUE(holds.count(spin)) << throttling_expr;
  EXPECT_GT(holds[spin], 0.25);
  EXPECT_GT(spin_k.throttled / spin_k.periods, 0.25);
  EXPECT_FALSE(holds.count(light)) << "light: " << holds[light];
  EXPECT_GT(light_k.periods, 0) << "light ran in no CFS period: its ratio was never computed";
  EXPECT_EQ(holds.size(), 1u) << "CPUThrottlingHigh holds for containers without a tight quota";
  auto alert = Query(*prom, "ALERTS{alertname=\"CPUThrottlingHigh\"}", t);
  ASSERT_EQ(alert.size(), 1u) << alert.dump();
  EXPECT_EQ(Key(alert[0]["metric"]), spin);
  EXPECT_EQ(alert[0]["metric"].value("alertstate", ""), "pending");  // `for: 15m`
  prom->Stop();
}

}  // namespace
}  // namespace statlet::e2e
