// The Grafana dashboards of deploy/dashboards/ against a real Prometheus that scraped
// statlet watching the stage's pods: every panel query and every templating query returns
// at least one series.
//
// statlet here runs with the flags the dashboards' README names for every panel
// (--collector.per-cpu, the eBPF probes including runqlat); the stage's own daemon keeps
// its flags (the other e2e tests read its one cpu="total" series). Beside the stage's
// workloads, one pod does what the remaining panels show: a CPU limit it keeps hitting
// (CFS throttling), a memory limit, an OOM kill and direct disk IO.
//
// Dashboard variables take every value their query returns, as Grafana's "All" does (a
// regex of the escaped values, or the variable's allValue); $__rate_interval is Grafana's
// own rule, four scrape intervals. The scrape carries a cluster label, as multi-cluster
// setups do, for the dashboards' cluster variable. A query that returns nothing fails the test unless it names a family
// docs/metrics.md documents as having no source on this host's cgroup version (memory.min
// on a cgroup v1 memory controller, say); those are listed in the output.
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <regex>
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
#include "tests/support/statlet_daemon.h"

namespace statlet::e2e {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int kScrapeIntervalSeconds = 1;
// Grafana's $__rate_interval: max($__interval + scrape interval, 4 * scrape interval).
constexpr int kRateIntervalSeconds = 4 * kScrapeIntervalSeconds;
constexpr char kLimitsPod[] = "dash-limits";
constexpr char kLimitsNamespace[] = "e2e-dash";
constexpr int64_t kDashboardLimitBytes = 32 << 20;
constexpr char kCluster[] = "e2e";

// The first value of a one-row answer; -1 when there is none.
double Scalar(const testing::PrometheusServer& prom, const std::string& promql) {
  nlohmann::json r = prom.Query(promql);
  if (r == nullptr || r.empty()) return -1;
  return std::stod(r[0]["value"][1].get<std::string>());
}

// ---------------------------------------------------------------------------- families
// Every family name statlet documents, and the cgroup version on which one has no source
// ("-" in its v2 or v1 source column of docs/metrics.md).
struct Families {
  std::set<std::string> known;
  std::set<std::string> no_v1_source, no_v2_source;
};

std::vector<std::string> TableCells(const std::string& line) {
  std::vector<std::string> cells;
  std::string cell;
  for (size_t i = 1; i < line.size(); ++i) {
    if (line[i] == '|') {
      cells.push_back(cell);
      cell.clear();
    } else {
      cell += line[i];
    }
  }
  for (auto& c : cells) {
    c.erase(0, c.find_first_not_of(' '));
    c.erase(c.find_last_not_of(' ') + 1);
  }
  return cells;
}

Families DocumentedFamilies(const std::string& docs_dir) {
  Families f;
  for (const char* doc : {"/metrics.md", "/image-pulls.md"}) {
    std::ifstream in(docs_dir + doc);
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("| `", 0) != 0) continue;
      std::vector<std::string> cells = TableCells(line);
      std::string name = cells[0].substr(1, cells[0].find('`', 1) - 1);
      name = name.substr(0, name.find('{'));  // image-pulls.md writes `family{label}`
      f.known.insert(name);
      if (cells.size() == 7) {  // the family table: … | v2 source | v1 source |
        if (cells[5] == "-") f.no_v2_source.insert(name);
        if (cells[6] == "-") f.no_v1_source.insert(name);
      }
    }
  }
  return f;
}

// The metric names an expression selects (every selector in these dashboards has braces).
std::set<std::string> MetricNames(const std::string& expr) {
  static const std::regex selector("([a-zA-Z_:][a-zA-Z0-9_:]*)\\s*\\{");
  std::set<std::string> names;
  for (auto it = std::sregex_iterator(expr.begin(), expr.end(), selector); it != std::sregex_iterator(); ++it) {
    names.insert((*it)[1]);
  }
  return names;
}

// A histogram's series names resolve to their family.
std::string FamilyOf(const std::string& name, const Families& f) {
  if (f.known.count(name)) return name;
  for (const char* suffix : {"_bucket", "_sum", "_count"}) {
    const std::string s = suffix;
    if (name.size() > s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0) {
      const std::string base = name.substr(0, name.size() - s.size());
      if (f.known.count(base)) return base;
    }
  }
  return "";
}

bool UnifiedOnly() {
  struct statfs s;
  return statfs("/sys/fs/cgroup", &s) == 0 && s.f_type == 0x63677270;  // CGROUP2_SUPER_MAGIC
}

// ---------------------------------------------------------------------------- dashboards
struct PanelQuery {
  std::string dashboard, panel, ref, expr;
};

struct Dashboard {
  std::string file;
  nlohmann::json json;
};

// Panels in the order Grafana lists them, with those a collapsed row carries inside it.
using TitledPanels = std::vector<std::pair<std::string, nlohmann::json>>;
void CollectPanels(const nlohmann::json& panels, const std::string& row, TitledPanels* out) {
  for (const auto& p : panels) {
    const std::string title = p.value("title", "");
    if (p.value("type", "") == "row") {
      CollectPanels(p.value("panels", nlohmann::json::array()), title, out);
    } else {
      out->emplace_back(row.empty() ? title : row + " / " + title, p);
    }
  }
}

// Grafana's formatting of a multi-value variable in a Prometheus query: the values,
// regex-escaped (and the escapes escaped again for the PromQL string), joined as (a|b).
std::string RegexOfValues(const std::set<std::string>& values) {
  std::string out = "(";
  bool first = true;
  for (const std::string& v : values) {
    if (!first) out += "|";
    first = false;
    for (char c : v) {
      if (std::string("\\^$.|?*+()[]{}").find(c) != std::string::npos) out += "\\\\";
      out += c;
    }
  }
  return out + ")";
}

// $name, ${name}, ${name:format} and [[name]], longest names first so that $pod does not
// eat the start of $pod_name.
std::string Substitute(std::string expr, const std::map<std::string, std::string>& vars) {
  std::vector<std::string> names;
  for (const auto& [name, value] : vars) names.push_back(name);
  std::sort(names.begin(), names.end(), [](const auto& a, const auto& b) { return a.size() > b.size(); });
  for (const std::string& name : names) {
    const std::string& value = vars.at(name);
    const std::regex forms("\\$\\{" + name + "(:[a-z]+)?\\}|\\[\\[" + name + "\\]\\]|\\$" + name + "(?![A-Za-z0-9_])");
    expr = std::regex_replace(expr, forms, value);
  }
  return expr;
}

class DashboardStatlet {
 public:
  // Starts statlet beside the stage's daemon, on the stage's containerd and cgroup root.
  static std::unique_ptr<DashboardStatlet> Start(const std::string& dir, std::string* error) {
    testing::DaemonOptions o;
    o.binary = STATLET_E2E_AGENT;
    o.dir = dir;
    o.cgroup_subtree = g_stage->cgroup_root();
    o.serve_cri = true;
    o.flags = {
        "--runtime.endpoint=unix://" + g_stage->dir() + "/containerd.sock",
        "--runtime.refresh-period=200ms",
        "--collector.per-cpu",
        "--bpf=auto",
        "--bpf.probes=cpu,oom,tcp,cgroup_stats,runqlat,faults",
        "--log.level=warn",
        // Judged as a v1.36 kubelet with tiered protection, so the Memory QoS panels'
        // expected knobs and node totals have series where the host has cgroup v2.
        "--memory-qos.kubelet-version=v1.36.0",
        "--memory-qos.feature-gate=true",
        "--memory-qos.reservation-policy=TieredReservation",
        "--memory-qos.kubelet-config=",
    };
    o.wait_until_ready = true;
    o.start_timeout = milliseconds(60000);
    std::unique_ptr<DashboardStatlet> d(new DashboardStatlet(o));
    if (!d->daemon_.ok()) {
      *error = "statlet for the dashboards: " + d->daemon_.error();
      return nullptr;
    }
    return d;
  }
  int port() const { return daemon_.port(); }
  std::string Log() const { return Tail(daemon_.log_path(), 20); }
  // The lines of /metrics holding `needle`, for failure messages.
  std::string SeriesOf(const std::string& needle) const {
    auto r = testing::TimedGet(port(), "/metrics", "", milliseconds(10000)).response;
    if (!r) return "no answer to GET /metrics\n";
    std::istringstream in(r->body);
    std::string out;
    for (std::string line; std::getline(in, line);) {
      if (line.find(needle) != std::string::npos && line.find("_bucket{") == std::string::npos) out += line + "\n";
    }
    return out;
  }

 private:
  explicit DashboardStatlet(const testing::DaemonOptions& o) : daemon_(o) {}
  testing::Daemon daemon_;
};

// The pod that hits its limits; removed when the test ends, also on failure.
class LimitsPod {
 public:
  ~LimitsPod() {
    if (!pod_) return;
    if (Status s = g_stage->driver().RemovePod(*pod_); !s.ok()) {
      std::fprintf(stderr, "remove %s: %s\n", kLimitsPod, s.ToString().c_str());
    }
  }
  Status Start() {
    CriDriver& driver = g_stage->driver();
    PodSpec spec;
    spec.name = kLimitsPod;
    spec.namespace_ = kLimitsNamespace;
    spec.labels = {{"app", kLimitsPod}};
    auto pod = driver.RunPod(spec);
    if (!pod.ok()) return pod.status();
    pod_ = *pod;
    auto Sh = [](const std::string& s) { return std::vector<std::string>{"sh", "-c", s}; };
    // Spins under a 20 % CPU quota, written below as the runtime would from a CPU limit
    // (the stage's CRI messages carry memory only).
    auto throttled = driver.StartContainer(*pod_, {"throttled", Sh("while :; do :; done")});
    if (!throttled.ok()) return throttled.status();
    const std::pair<const char*, const char*> quota[] = {{"/cpu.cfs_quota_us", "20000"}, {"/cpu.max", "20000 100000"}};
    for (const std::string& mount : CgroupMounts()) {
      const std::string cg = mount + pod_->cgroup_parent + "/" + *throttled;
      struct stat st;
      for (const auto& [file, value] : quota) {
        if (stat((cg + file).c_str(), &st) != 0) continue;
        if (!(std::ofstream(cg + file) << value).flush()) return Internal("write " + cg + file);
      }
    }
    // dd's 64 MiB buffer does not fit the 32 MiB limit: the OOM killer takes dd, the shell
    // stays (and keeps the container's cgroup and its series). The kill waits until statlet
    // has the container's name from the runtime (refreshed every 200 ms), so that the kill's
    // series carries it.
    ContainerSpec oom{"oom", Sh("sleep 3; dd if=/dev/zero of=/dev/null bs=64M count=1; exec sleep 2147483647")};
    oom.memory_limit_bytes = kDashboardLimitBytes;
    if (auto id = driver.StartContainer(*pod_, oom); !id.ok()) return id.status();
    // Direct IO: charged to the container's cgroup on v1 too (buffered writeback is not).
    auto io = driver.StartContainer(
        *pod_, {"io", Sh("while :; do dd if=/dev/zero of=/tmp/io bs=1M count=4 oflag=direct 2>/dev/null; "
                         "dd if=/tmp/io of=/dev/null bs=1M iflag=direct 2>/dev/null; sleep 1; done")});
    if (!io.ok()) return io.status();
    // cgroup v1's blkio counts a cgroup's IO only where a throttle limit is set for the
    // device (blk-throttle accounts only the bios it may throttle): set one far above what
    // the loop does, on the disk that holds the container's files, as a runtime would for
    // a device bandwidth limit. cgroup v2's io.stat counts without one.
    auto disk = DiskOf(g_stage->dir());
    if (!disk.ok()) return disk.status();
    for (const std::string& mount : CgroupMounts()) {
      const std::string cg = mount + pod_->cgroup_parent + "/" + *io;
      struct stat st;
      if (stat((cg + "/blkio.throttle.write_bps_device").c_str(), &st) != 0) continue;
      for (const char* file : {"/blkio.throttle.write_bps_device", "/blkio.throttle.read_bps_device"}) {
        if (!(std::ofstream(cg + file) << *disk << " 1099511627776").flush()) return Internal("write " + cg + file);
      }
    }
    return Status::Ok();
  }

 private:
  // "major:minor" of the whole disk holding `path` (throttle limits take disks, not
  // partitions).
  static StatusOr<std::string> DiskOf(const std::string& path) {
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return ErrnoStatus(errno, "stat " + path);
    std::error_code ec;
    std::filesystem::path dev = std::filesystem::canonical(
        "/sys/dev/block/" + std::to_string(major(st.st_dev)) + ":" + std::to_string(minor(st.st_dev)), ec);
    if (ec) return Internal(path + " is on no block device: " + ec.message());
    if (std::filesystem::exists(dev / "partition")) dev = dev.parent_path();
    std::string id;
    std::ifstream(dev / "dev") >> id;
    if (id.empty()) return Internal("no dev file under " + dev.string());
    return id;
  }

  std::optional<Pod> pod_;
};

TEST(E2e, DashboardPanelsAndVariablesReturnSeries) {
  REQUIRE_STAGE();
  const auto started = Clock::now();
  const std::string dir = g_stage->dir() + "/dashboards";
  ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0) << dir;

  // The dashboards, as users import them.
  std::vector<Dashboard> dashboards;
  for (const auto& entry : std::filesystem::directory_iterator(STATLET_E2E_DASHBOARDS)) {
    if (entry.path().extension() != ".json") continue;
    std::ifstream in(entry.path());
    auto j = nlohmann::json::parse(in, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << entry.path() << " is not JSON";
    dashboards.push_back({entry.path().filename().string(), std::move(j)});
  }
  std::sort(dashboards.begin(), dashboards.end(), [](const auto& a, const auto& b) { return a.file < b.file; });
  ASSERT_GE(dashboards.size(), 3u) << "statlet-node.json, statlet-pod.json and memory-qos.json in "
                                   << STATLET_E2E_DASHBOARDS;

  const Families families = DocumentedFamilies(std::string(STATLET_E2E_DASHBOARDS) + "/../../docs");
  ASSERT_GT(families.known.size(), 100u) << "family tables not found in docs/";
  const bool v2 = UnifiedOnly();
  const std::set<std::string>& absent_here = v2 ? families.no_v2_source : families.no_v1_source;

  std::string error;
  auto statlet = DashboardStatlet::Start(dir, &error);
  ASSERT_NE(statlet, nullptr) << error;
  // After statlet started: its OOM kill list and the probes' counters begin then.
  LimitsPod limits;
  Status s = limits.Start();
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << g_stage->Logs();

  const std::string prom_dir = dir + "/prometheus";
  ASSERT_EQ(::mkdir(prom_dir.c_str(), 0755), 0) << prom_dir;
  // A cluster label on the target, as multi-cluster setups have on every series: the
  // dashboards' cluster variable then has a value to resolve.
  auto prom = testing::PrometheusServer::Start(prom_dir,
                                               {"cadvisor",
                                                "127.0.0.1:" + std::to_string(statlet->port()),
                                                std::to_string(kScrapeIntervalSeconds) + "s",
                                                {{"cluster", kCluster}}},
                                               &error);
  ASSERT_NE(prom, nullptr) << error;

  // The workloads' effects in Prometheus: the CPU burner's rate, the quota's throttling, the
  // OOM kill, the direct IO, and eBPF's run-queue waits.
  const std::string limits_sel =
      std::string("{job=\"cadvisor\", namespace=\"") + kLimitsNamespace + "\", pod=\"" + kLimitsPod + "\"";
  const std::string rate = "[" + std::to_string(kRateIntervalSeconds) + "s]";
  const std::vector<std::pair<std::string, std::string>> ready = {
      {"the CPU burner's rate",
       "sum(rate(container_cpu_usage_seconds_total{job=\"cadvisor\", pod=\"cpu-burner\", "
       "container!=\"\"}" +
           rate + "))"},
      {"CFS throttling", "sum(container_cpu_cfs_throttled_periods_total" + limits_sel + ", container=\"throttled\"})"},
      {"the OOM kill", "count(statlet_oom_kill_timestamp_seconds" + limits_sel + ", container=\"oom\"})"},
      {"direct disk writes", "sum(container_fs_writes_bytes_total" + limits_sel + ", container=\"io\"})"},
      {"run-queue waits", "sum(statlet_cpu_runqueue_latency_seconds_count{job=\"cadvisor\", container!=\"\"})"},
  };
  std::string why = Eventually(milliseconds(60000), [&] {
    for (const auto& [what, q] : ready) {
      if (!(Scalar(*prom, q) > 0)) return "no " + what + " yet: " + q;
    }
    return std::string();
  });
  ASSERT_EQ(why, "") << "\n--- statlet's series of " << kLimitsPod << "\n"
                     << statlet->SeriesOf(std::string("pod=\"") + kLimitsPod + "\"") << "--- statlet\n"
                     << statlet->Log() << g_stage->Logs();
  // Then a full rate window of scrapes that all see the workloads.
  const double scrapes = Scalar(*prom, "count_over_time(up{job=\"cadvisor\"}[10m])");
  why = Eventually(milliseconds(30000), [&] {
    const double now = Scalar(*prom, "count_over_time(up{job=\"cadvisor\"}[10m])");
    return now >= scrapes + kRateIntervalSeconds / kScrapeIntervalSeconds ? std::string()
                                                                          : "scrapes: " + std::to_string(now);
  });
  ASSERT_EQ(why, "");
  ASSERT_EQ(Scalar(*prom, "up{job=\"cadvisor\"}"), 1) << "statlet's scrape failed in Prometheus";

  const std::map<std::string, std::string> builtins = {
      {"__rate_interval", std::to_string(kRateIntervalSeconds) + "s"},
      {"__interval", std::to_string(kScrapeIntervalSeconds) + "s"},
      {"__interval_ms", std::to_string(kScrapeIntervalSeconds * 1000)},
      // The dashboards' default time range (now-1h); Prometheus holds less, which every
      // range function takes as it is.
      {"__range", "1h"},
      {"__range_s", "3600"},
      {"__range_ms", "3600000"},
  };
  const std::map<std::string, std::set<std::string>> stage_values = [] {
    std::map<std::string, std::set<std::string>> v;
    for (const auto& [name, w] : g_pods) {
      v["namespace"].insert(w.pod.namespace_);
      v["pod"].insert(name);
      for (const auto& [cname, id] : w.containers) v["container"].insert(cname);
    }
    v["job"].insert("cadvisor");
    v["cluster"].insert(kCluster);
    return v;
  }();

  size_t panels = 0, queries = 0, variables = 0;
  std::vector<std::string> not_on_this_host;
  for (const Dashboard& d : dashboards) {
    SCOPED_TRACE(d.file);
    ASSERT_EQ(d.json.value("schemaVersion", 0), 39) << d.file;
    // Variables in order: each query sees the values of those before it.
    std::map<std::string, std::string> vars = builtins;
    for (const auto& v : d.json["templating"].value("list", nlohmann::json::array())) {
      const std::string name = v.value("name", ""), type = v.value("type", "");
      if (type == "datasource") continue;  // one Prometheus here
      ++variables;
      std::set<std::string> values;
      if (type == "query") {
        const std::string query =
            v["query"].is_string() ? v["query"].get<std::string>() : v["query"].value("query", "");
        static const std::regex label_values("^\\s*label_values\\((.*),\\s*([a-zA-Z_][a-zA-Z0-9_]*)\\s*\\)\\s*$");
        std::smatch m;
        ASSERT_TRUE(std::regex_match(query, m, label_values))
            << d.file << ": variable " << name << ": only label_values(selector, label) is checked: " << query;
        const std::string expr = Substitute(m[1].str(), vars);
        nlohmann::json result = prom->Query("group by (" + m[2].str() + ") (" + expr + ")", std::nullopt, &error);
        ASSERT_NE(result, nullptr) << d.file << ": variable " << name << ": " << query << " → " << expr << ": "
                                   << error;
        for (const auto& row : result) {
          const std::string value = row["metric"].value(m[2].str(), "");
          if (!value.empty()) values.insert(value);
        }
        EXPECT_FALSE(values.empty()) << d.file << ": variable " << name << " has no values: " << query << " → " << expr;
      } else if (type == "custom") {
        std::stringstream in(v.value("query", ""));
        for (std::string item; std::getline(in, item, ',');) values.insert(item.substr(item.find_first_not_of(' ')));
      } else if (type == "constant" || type == "textbox") {
        values.insert(v.value("query", ""));
      } else {
        FAIL() << d.file << ": variable " << name << " of type " << type << " is not checked here";
      }
      if (auto it = stage_values.find(name); it != stage_values.end()) {
        for (const std::string& want : it->second) {
          EXPECT_TRUE(values.count(want)) << d.file << ": variable " << name << " lacks the stage's " << want;
        }
      }
      // "All": the variable's allValue when it has one (Grafana sends that), else its values.
      vars[name] = v.contains("allValue") ? v["allValue"].get<std::string>() : RegexOfValues(values);
    }

    TitledPanels all;
    CollectPanels(d.json.value("panels", nlohmann::json::array()), "", &all);
    for (const auto& [title, panel] : all) {
      if (panel.value("type", "") == "text") continue;
      ++panels;
      const nlohmann::json tgts = panel.value("targets", nlohmann::json::array());
      EXPECT_FALSE(tgts.empty()) << d.file << ": panel \"" << title << "\" has no query";
      for (const auto& t : tgts) {
        const std::string raw = t.value("expr", "");
        const std::string where = d.file + ": panel \"" + title + "\" " + t.value("refId", "") + ": " + raw;
        EXPECT_FALSE(raw.empty()) << where << " (no expr)";
        if (raw.empty()) continue;
        ++queries;
        const std::string expr = Substitute(raw, vars);
        EXPECT_EQ(expr.find('$'), std::string::npos) << where << "\nleft unsubstituted: " << expr;
        // Every metric the query selects is one statlet serves.
        bool absent_by_design = false;
        const std::set<std::string> names = MetricNames(expr);
        EXPECT_FALSE(names.empty()) << where << " selects no metric";
        for (const std::string& n : names) {
          const std::string family = FamilyOf(n, families);
          EXPECT_NE(family, "") << where << "\n"
                                << n << " is no family statlet serves (docs/metrics.md, docs/image-pulls.md)";
          if (absent_here.count(family)) absent_by_design = true;
        }
        nlohmann::json result = prom->Query(expr, std::nullopt, &error);
        EXPECT_NE(result, nullptr) << where << "\nas run: " << expr << "\n" << error;
        if (result == nullptr) continue;
        if (result.empty() && absent_by_design) {
          // Excused only when every other family the query names has series here: the empty
          // result must come from the family this host has no source for, not another one.
          bool others_served = true;
          for (const std::string& n : names) {
            if (absent_here.count(FamilyOf(n, families))) continue;
            nlohmann::json r = prom->Query("count(" + n + ")", std::nullopt, &error);
            if (r != nullptr && !r.empty()) continue;
            others_served = false;
            ADD_FAILURE() << where << "\n"
                          << n
                          << " has no series either: the empty result is not explained by the family without a "
                             "source here";
          }
          if (others_served) not_on_this_host.push_back(where);
          continue;
        }
        EXPECT_FALSE(result.empty()) << where << "\nas run: " << expr << "\nreturned no series";
      }
    }
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - started).count();
  std::printf("dashboards: %zu files, %zu panels, %zu panel queries, %zu variables checked in %.1f s\n",
              dashboards.size(), panels, queries, variables, seconds);
  std::printf("%zu queries name families without a source on cgroup %s (empty here by design):\n",
              not_on_this_host.size(), v2 ? "v2" : "v1");
  for (const std::string& q : not_on_this_host) std::printf("  %s\n", q.c_str());
  EXPECT_GE(panels, 40u);
}

}  // namespace
}  // namespace statlet::e2e
