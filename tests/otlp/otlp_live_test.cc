// The daemon exporting OTLP from a real burner cgroup to a test receiver (Python, with stubs
// generated from the opentelemetry-proto v1.5.0 test data): over gRPC and OTLP/HTTP (plain
// and gzip), the node's image pull families, then the faults: a receiver down at start,
// 503 with Retry-After, gRPC UNAVAILABLE with RetryInfo, 503 for ever while the queue
// drops, a receiver that never answers (scrapes and SIGTERM unaffected).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/statlet_daemon.h"
#include "tests/support/wait_for.h"
#include "tests/support/workloads.h"

namespace statlet::testing {
namespace {

using nlohmann::json;
using std::chrono::milliseconds;

std::string TempDir() {
  char t[] = "/tmp/statlet-otlp-XXXXXX";
  return ::mkdtemp(t) ? std::string(t) : std::string();
}

class Receiver {
 public:
  Receiver(const std::string& dir, const std::string& protocol, int port, const std::string& mode,
           const std::vector<std::string>& extra = {})
      : out_(dir + "/received.jsonl"), ready_(dir + "/receiver.ready") {
    std::vector<std::string> argv = {
        "/usr/bin/python3",   OTLP_RECEIVER, "--gen", OTLP_PY_GEN, "--protocol", protocol, "--port",
        std::to_string(port), "--out",       out_,    "--ready",   ready_,       "--mode", mode};
    argv.insert(argv.end(), extra.begin(), extra.end());
    proc_ = std::make_unique<BinaryProcess>(argv, dir + "/receiver.log");
  }
  bool WaitReady() {
    return WaitFor([&] { return ::access(ready_.c_str(), F_OK) == 0; }, milliseconds(20000));
  }
  std::vector<json> Records() const {
    std::vector<json> v;
    std::ifstream in(out_);
    for (std::string line; std::getline(in, line);) {
      json j = json::parse(line, nullptr, false);
      if (!j.is_discarded()) v.push_back(std::move(j));
    }
    return v;
  }

 private:
  std::string out_, ready_;
  std::unique_ptr<BinaryProcess> proc_;
};

std::string Attr(const json& attributes, const std::string& key) {
  if (!attributes.is_array()) return "";
  for (const json& kv : attributes) {
    if (kv["key"] == key && kv["value"].contains("string_value")) return kv["value"]["string_value"];
  }
  return "";
}

// The ResourceMetrics of cgroup `path` in a received request; null when absent.
const json* ResourceOf(const json& record, const std::string& path) {
  if (!record.contains("request")) return nullptr;
  for (const json& rm : record["request"]["resource_metrics"]) {
    if (Attr(rm["resource"]["attributes"], "statlet.cgroup.path") == path) return &rm;
  }
  return nullptr;
}

const json* MetricOf(const json& rm, const std::string& name) {
  for (const json& sm : rm["scope_metrics"]) {
    for (const json& m : sm["metrics"]) {
      if (m["name"] == name) return &m;
    }
  }
  return nullptr;
}

double PointValue(const json& p) {
  if (p.contains("as_double")) return p["as_double"].get<double>();
  return static_cast<double>(std::stoll(p["as_int"].get<std::string>()));
}

std::string Scrape(int port, double* seconds = nullptr) {
  TimedResponse r = TimedGet(port, "/metrics", "", milliseconds(30000));
  if (seconds) *seconds = r.ms / 1000;
  return r.response && r.response->status == 200 ? r.response->body : "";
}

// The value of a self-metric series line starting with `series` (e.g. `name{label="x"}`).
double SelfMetric(const std::string& body, const std::string& series) {
  std::istringstream in(body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(series + " ", 0) == 0) return std::stod(line.substr(series.size() + 1));
  }
  return -1;
}

// The daemon on `root`, its log <dir>/<name>.log at debug level, with the test's flags;
// the test waits for it.
DaemonOptions Statlet(const std::string& dir, const std::string& root, std::vector<std::string> extra,
                      const std::string& name = "statlet") {
  DaemonOptions o;
  o.dir = dir;
  o.name = name;
  o.cgroup_subtree = root;
  o.flags = {"--log.level=debug"};
  o.flags.insert(o.flags.end(), extra.begin(), extra.end());
  o.wait_until_serving = false;
  return o;
}

// What a fault test exports: one cgroup under a root of its own, holding a sleeping process.
struct IdleNode {
  explicit IdleNode(const std::string& tag) : root("/" + UniqueName(tag)), cg(root + "/idle") {}
  // False (with the reason in the test's output) when the cgroup could not be made or joined.
  bool Started() {
    EXPECT_TRUE(cg.ok()) << cg.error();
    return cg.ok() && cg.Add(sleeper.pid());
  }
  std::string root;
  LiveCgroup cg;
  Child sleeper = Child::Sleeper();
};

// Waits until the receiver has at least `n` records; *out holds the last ones read.
bool WaitForRecords(const Receiver& receiver, size_t n, std::vector<json>* out) {
  return WaitFor(
      [&] {
        *out = receiver.Records();
        return out->size() >= n;
      },
      milliseconds(30000));
}

struct Transport {
  std::string name, protocol, receiver_protocol;
  bool gzip;
};
// gtest names a parameter it cannot print by its bytes (addresses that change from run to
// run, and ctest's test names with them): the case's name instead.
void PrintTo(const Transport& c, std::ostream* os) { *os << c.name; }

class OtlpLive : public ::testing::TestWithParam<Transport> {};

TEST_P(OtlpLive, ExportsTheBurnersCpuTimeWithItsAttributes) {
  const Transport& t = GetParam();
  const std::string root = "/" + UniqueName("statlet-otlptest");
  LiveCgroup top(root);
  LiveCgroup burner_cg(root + "/burner");
  ASSERT_TRUE(burner_cg.ok()) << burner_cg.error() << " (needs root)";
  // Burns a known amount, then sleeps: the cgroup's CPU time stays put while exports go on.
  Child burner([] {
    BurnCpu(1500000000);
    return uint64_t{1};
  });
  ASSERT_TRUE(burner.StartIn(burner_cg));

  const std::string dir = TempDir();
  const int rport = FreeLoopbackPort();
  Receiver receiver(dir, t.receiver_protocol, rport, "ok");
  ASSERT_TRUE(receiver.WaitReady()) << ReadWholeFile(dir + "/receiver.log");

  ::setenv("OTEL_SERVICE_NAME", "otlp-live-test", 1);
  ::setenv("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test%2Cci", 1);
  std::vector<std::string> flags = {"--otlp.endpoint=http://127.0.0.1:" + std::to_string(rport),
                                    "--otlp.protocol=" + t.protocol, "--otlp.interval=1s"};
  if (t.gzip) flags.push_back("--otlp.compression=gzip");
  Daemon statlet(Statlet(dir, root, flags));
  ::unsetenv("OTEL_SERVICE_NAME");
  ::unsetenv("OTEL_RESOURCE_ATTRIBUTES");
  ASSERT_TRUE(statlet.WaitReady(milliseconds(15000))) << statlet.log();
  ASSERT_TRUE(burner.Result(milliseconds(60000)).has_value());
  ASSERT_TRUE(WaitUntilSleeping(burner.pid(), milliseconds(10000)));
  const double truth_s = static_cast<double>(burner_cg.CpuUsageNs()) / 1e9;
  const auto burned_at = std::chrono::system_clock::now();

  // Three exports that started after the burn ended.
  std::vector<json> records;
  auto after_burn = [&] {
    size_t n = 0;
    for (const json& r : records) {
      if (r["t"].get<double>() > std::chrono::duration<double>(burned_at.time_since_epoch()).count() + 1.5 &&
          ResourceOf(r, burner_cg.path())) {
        ++n;
      }
    }
    return n;
  };
  ASSERT_TRUE(WaitFor(
      [&] {
        records = receiver.Records();
        return after_burn() >= 3;
      },
      milliseconds(30000)))
      << records.size() << " requests\n"
      << statlet.log();

  double last_cpu = -1;
  std::string start_time;
  uint64_t last_time = 0;
  size_t checked = 0;
  for (const json& r : records) {
    ASSERT_EQ(r["status"], 200);
    if (t.receiver_protocol == "http") {
      EXPECT_EQ(r["path"], "/v1/metrics");
      EXPECT_EQ(r["content_type"], "application/x-protobuf");
      EXPECT_EQ(r["content_encoding"], t.gzip ? "gzip" : "");
    }
    const json* rm = ResourceOf(r, burner_cg.path());
    if (!rm) continue;
    const json& attrs = (*rm)["resource"]["attributes"];
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    EXPECT_EQ(Attr(attrs, "host.name"), host);
    EXPECT_EQ(Attr(attrs, "service.name"), "otlp-live-test");
    EXPECT_EQ(Attr(attrs, "deployment.environment"), "test,ci");
    EXPECT_EQ((*rm)["schema_url"], "https://opentelemetry.io/schemas/1.44.0");

    const json* cpu = MetricOf(*rm, "container.cpu.time");
    ASSERT_NE(cpu, nullptr) << rm->dump();
    EXPECT_EQ((*cpu)["unit"], "s");
    EXPECT_EQ((*cpu)["sum"]["aggregation_temporality"], "AGGREGATION_TEMPORALITY_CUMULATIVE");
    EXPECT_EQ((*cpu)["sum"]["is_monotonic"], true);
    double total = 0;
    std::vector<std::string> modes;
    for (const json& p : (*cpu)["sum"]["data_points"]) {
      modes.push_back(Attr(p["attributes"], "cpu.mode"));
      total += PointValue(p);
      // One start per stream, before the point's time, kept from export to export.
      if (start_time.empty()) start_time = p["start_time_unix_nano"];
      EXPECT_EQ(p["start_time_unix_nano"], start_time);
      EXPECT_LT(std::stoull(start_time), std::stoull(p["time_unix_nano"].get<std::string>()));
    }
    std::sort(modes.begin(), modes.end());
    EXPECT_EQ(modes, (std::vector<std::string>{"system", "user"}));
    EXPECT_GE(total, last_cpu) << "cumulative CPU time went down";
    last_cpu = total;
    const uint64_t time = std::stoull((*cpu)["sum"]["data_points"][0]["time_unix_nano"].get<std::string>());
    EXPECT_GT(time, last_time);
    last_time = time;

    const json* mem = MetricOf(*rm, "container.memory.usage");
    ASSERT_NE(mem, nullptr);
    EXPECT_EQ((*mem)["unit"], "By");
    EXPECT_FALSE((*mem)["sum"].value("is_monotonic", false));
    const json* uptime = MetricOf(*rm, "container.uptime");
    ASSERT_NE(uptime, nullptr);
    EXPECT_TRUE((*uptime).contains("gauge"));
    ++checked;
  }
  EXPECT_GE(checked, 3u);
  // The last export's CPU time against the cgroup's own account, both after the burn.
  EXPECT_GT(truth_s, 1.4);
  EXPECT_NEAR(last_cpu, truth_s, 0.02 * truth_s) << "exported " << last_cpu << " s, cgroup " << truth_s << " s";
  // libcurl (and GnuTLS, Kerberos, … behind it) is mapped by the daemons that export over
  // HTTP, and only by them (exporters/otlp/curl_library.h).
  const std::string maps = ReadWholeFile("/proc/" + std::to_string(statlet.pid()) + "/maps");
  EXPECT_EQ(maps.find("/libcurl.so") != std::string::npos, t.receiver_protocol == "http") << t.protocol;
  EXPECT_EQ(maps.find("/libgnutls.so") != std::string::npos, t.receiver_protocol == "http") << t.protocol;
}

INSTANTIATE_TEST_SUITE_P(Transports, OtlpLive,
                         ::testing::Values(Transport{"grpc", "grpc", "grpc", false},
                                           Transport{"http", "http/protobuf", "http", false},
                                           Transport{"http_gzip", "http/protobuf", "http", true}),
                         [](const auto& info) { return info.param.name; });

// The node's own metrics travel too: with image pulls served (a runtime socket that is not
// there, so a pull fails at once), the pull families arrive on the node's resource with the
// values /metrics shows.
TEST(OtlpNode, PullFamiliesArriveOnTheNodesResource) {
  const std::string root = "/" + UniqueName("statlet-otlpnode");
  LiveCgroup cg(root + "/idle");
  ASSERT_TRUE(cg.ok()) << cg.error();
  const std::string dir = TempDir();
  const int rport = FreeLoopbackPort();
  Receiver receiver(dir, "http", rport, "ok");
  ASSERT_TRUE(receiver.WaitReady()) << ReadWholeFile(dir + "/receiver.log");
  const std::string cri = dir + "/cri.sock";
  Daemon statlet(Statlet(
      dir, root,
      {"--otlp.endpoint=http://127.0.0.1:" + std::to_string(rport), "--otlp.protocol=http/protobuf",
       "--otlp.interval=500ms", "--cri.listen=" + cri, "--runtime.endpoint=unix://" + dir + "/no-runtime.sock"}));
  ASSERT_TRUE(statlet.WaitReady(milliseconds(15000))) << statlet.log();
  ASSERT_TRUE(WaitFor([&] { return ::access(cri.c_str(), F_OK) == 0; }, milliseconds(10000)));
  // The runtime is not there: the pull is started, then fails.
  EXPECT_NE(RunCommand({StatletBinary(), "pull", "--plain", "--endpoint", "unix://" + cri, "example.invalid/none:1"}),
            0);
  std::string body;
  ASSERT_TRUE(WaitFor(
      [&] {
        body = Scrape(statlet.port());
        return SelfMetric(body, "statlet_image_pulls_completed_total{result=\"failed\"}") == 1;
      },
      milliseconds(20000)))
      << body;
  EXPECT_EQ(SelfMetric(body, "statlet_image_pulls_started_total"), 1);

  // An export after the failure: the node's resource, no cgroup path, the node's attributes.
  const auto failed_at = std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  const json* node = nullptr;
  std::vector<json> records;
  ASSERT_TRUE(WaitFor(
      [&] {
        records = receiver.Records();
        node = nullptr;
        for (const json& r : records) {
          if (!r.contains("request") || r["t"].get<double>() < failed_at + 0.5) continue;
          for (const json& rm : r["request"]["resource_metrics"]) {
            if (Attr(rm["resource"]["attributes"], "statlet.cgroup.path").empty()) node = &rm;
          }
        }
        return node != nullptr;
      },
      milliseconds(20000)))
      << records.size() << " requests\n"
      << statlet.log();
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  EXPECT_EQ(Attr((*node)["resource"]["attributes"], "host.name"), host);
  const json* started = MetricOf(*node, "statlet.image_pull.started");
  ASSERT_NE(started, nullptr) << node->dump();
  EXPECT_EQ((*started)["unit"], "{pull}");
  EXPECT_EQ((*started)["sum"]["is_monotonic"], true);
  EXPECT_EQ(PointValue((*started)["sum"]["data_points"][0]), 1);
  const json* completed = MetricOf(*node, "statlet.image_pull.completed");
  ASSERT_NE(completed, nullptr);
  double failed = -1;
  for (const json& p : (*completed)["sum"]["data_points"]) {
    if (Attr(p["attributes"], "statlet.image_pull.result") == "failed") failed = PointValue(p);
  }
  EXPECT_EQ(failed, 1);
  const json* duration = MetricOf(*node, "statlet.image_pull.duration");
  ASSERT_NE(duration, nullptr);
  const json& h = (*duration)["histogram"]["data_points"][0];
  EXPECT_EQ(h["bucket_counts"].size(), h["explicit_bounds"].size() + 1);
  EXPECT_EQ(MetricOf(*node, "container.cpu.time"), nullptr) << "no cgroup metric on the node's resource";
}

TEST(OtlpFaults, ReceiverDownAtStartThenUp) {
  IdleNode node("statlet-otlpdown");
  ASSERT_TRUE(node.Started());
  const std::string& root = node.root;
  const std::string dir = TempDir();
  const int rport = FreeLoopbackPort();
  constexpr int kQueueBytes = 20000;  // two or three batches of this node
  Daemon statlet(Statlet(dir, root,
                         {"--otlp.endpoint=http://127.0.0.1:" + std::to_string(rport), "--otlp.protocol=http/protobuf",
                          "--otlp.interval=300ms", "--otlp.max-queue-bytes=" + std::to_string(kQueueBytes)}));
  ASSERT_TRUE(statlet.WaitReady(milliseconds(15000))) << statlet.log();
  // Nothing listens: attempts fail, the queue fills and drops its oldest batches.
  std::string body;
  ASSERT_TRUE(WaitFor(
      [&] {
        body = Scrape(statlet.port());
        return SelfMetric(body, "statlet_otlp_dropped_batches_total{reason=\"queue_full\"}") >= 3 &&
               SelfMetric(body, "statlet_otlp_request_failures_total{kind=\"retryable\"}") >= 1;
      },
      milliseconds(30000)))
      << body;
  EXPECT_LE(SelfMetric(body, "statlet_otlp_queue_bytes"), kQueueBytes);
  EXPECT_EQ(SelfMetric(body, "statlet_otlp_requests_total"), 0);

  Receiver receiver(dir, "http", rport, "ok");
  ASSERT_TRUE(receiver.WaitReady());
  ASSERT_TRUE(WaitFor([&] { return receiver.Records().size() >= 3; }, milliseconds(30000))) << statlet.log();
  body = Scrape(statlet.port());
  EXPECT_GE(SelfMetric(body, "statlet_otlp_requests_total"), 3);
  EXPECT_LE(SelfMetric(body, "statlet_otlp_queue_bytes"), kQueueBytes);
  EXPECT_TRUE(statlet.running());
}

// A receiver that asks for a 2 s wait twice: HTTP's 503 with Retry-After, gRPC's
// UNAVAILABLE with RetryInfo. One export in the test's time (the next one a minute later):
// only its retries arrive.
struct RetryCase {
  std::string name, protocol, receiver_protocol;
  int refusal;  // the status the receiver's records show for a refused request
};
void PrintTo(const RetryCase& c, std::ostream* os) { *os << c.name; }

class OtlpRetry : public ::testing::TestWithParam<RetryCase> {};

TEST_P(OtlpRetry, HonoursTheReceiversRetryDelay) {
  const RetryCase& c = GetParam();
  IdleNode node("statlet-otlpretry");
  ASSERT_TRUE(node.Started());
  const std::string dir = TempDir();
  const int rport = FreeLoopbackPort();
  Receiver receiver(dir, c.receiver_protocol, rport, "status503", {"--fail-count", "2", "--retry-after", "2"});
  ASSERT_TRUE(receiver.WaitReady());
  Daemon statlet(Statlet(dir, node.root,
                         {"--otlp.endpoint=http://127.0.0.1:" + std::to_string(rport), "--otlp.protocol=" + c.protocol,
                          "--otlp.interval=60s"}));
  ASSERT_TRUE(statlet.WaitReady(milliseconds(15000))) << statlet.log();
  std::vector<json> r;
  ASSERT_TRUE(WaitForRecords(receiver, 3, &r)) << statlet.log();
  ASSERT_EQ(r[0]["status"], c.refusal);
  ASSERT_EQ(r[1]["status"], c.refusal);
  ASSERT_EQ(r[2]["status"], 200);
  const double gap1 = r[1]["t"].get<double>() - r[0]["t"].get<double>();
  const double gap2 = r[2]["t"].get<double>() - r[1]["t"].get<double>();
  std::printf("%s: retries %.2f s and %.2f s after a refusal asking for 2 s\n", c.name.c_str(), gap1, gap2);
  // Without the receiver's delay the first retries come after 0.5..1 s and 1..2 s.
  EXPECT_GE(gap1, 1.95) << "retried " << gap1 << " s after the first refusal";
  EXPECT_GE(gap2, 1.95) << "retried " << gap2 << " s after the second refusal";
  EXPECT_LT(gap1, 5.0);
  const std::string body = Scrape(statlet.port());
  EXPECT_EQ(SelfMetric(body, "statlet_otlp_request_failures_total{kind=\"retryable\"}"), 2);
  EXPECT_EQ(SelfMetric(body, "statlet_otlp_requests_total"), 1);
}

INSTANTIATE_TEST_SUITE_P(Transports, OtlpRetry,
                         ::testing::Values(RetryCase{"http_503_retry_after", "http/protobuf", "http", 503},
                                           RetryCase{"grpc_unavailable_retry_info", "grpc", "grpc", 14}),
                         [](const auto& info) { return info.param.name; });

TEST(OtlpFaults, HangingReceiverDoesNotSlowMetrics) {
  IdleNode node("statlet-otlphang");
  ASSERT_TRUE(node.Started());
  const std::string& root = node.root;
  const std::string dir = TempDir();
  const int rport = FreeLoopbackPort();
  Receiver receiver(dir, "http", rport, "hang");
  ASSERT_TRUE(receiver.WaitReady());
  // The same node without OTLP, scraped alternately: the floor the exporting daemon is held to.
  Daemon exporting(Statlet(
      dir, root,
      {"--otlp.endpoint=http://127.0.0.1:" + std::to_string(rport), "--otlp.interval=200ms", "--otlp.timeout=5s"},
      "exporting"));
  Daemon plain(Statlet(dir, root, {}, "plain"));
  ASSERT_TRUE(exporting.WaitReady(milliseconds(15000)) && plain.WaitReady(milliseconds(15000)));
  ASSERT_TRUE(WaitFor([&] { return !receiver.Records().empty(); }, milliseconds(10000)));
  std::vector<double> with, without;
  for (int round = 0; round < 20; ++round) {
    double a = 0, b = 0;
    ASSERT_FALSE(Scrape(round % 2 ? plain.port() : exporting.port(), round % 2 ? &b : &a).empty());
    ASSERT_FALSE(Scrape(round % 2 ? exporting.port() : plain.port(), round % 2 ? &a : &b).empty());
    with.push_back(a);
    without.push_back(b);
  }
  // Every request the exporter made meanwhile hung until its deadline.
  for (const json& r : receiver.Records()) EXPECT_EQ(r["status"], 0);
  std::sort(with.begin(), with.end());
  std::sort(without.begin(), without.end());
  const double med_with = with[with.size() / 2], med_without = without[without.size() / 2];
  std::printf("/metrics median %.2f ms with a hanging OTLP receiver, %.2f ms without (max %.2f / %.2f ms)\n",
              med_with * 1e3, med_without * 1e3, with.back() * 1e3, without.back() * 1e3);
  EXPECT_LT(with.back(), 1.0) << "a scrape waited on the OTLP request";
  EXPECT_LT(med_with, 2 * med_without + 0.005);
}

TEST(OtlpFaults, BackoffGrowsWhileTheQueueDropsBatches) {
  IdleNode node("statlet-otlpbackoff");
  ASSERT_TRUE(node.Started());
  const std::string& root = node.root;
  const std::string dir = TempDir();
  const int rport = FreeLoopbackPort();
  // 503 without Retry-After, always: only statlet's own backoff spaces the attempts.
  Receiver receiver(dir, "http", rport, "status503", {"--fail-count", "1000000", "--retry-after", ""});
  ASSERT_TRUE(receiver.WaitReady());
  // A new batch every 200 ms into a queue of two or three: each export drops the oldest.
  Daemon statlet(Statlet(dir, root,
                         {"--otlp.endpoint=http://127.0.0.1:" + std::to_string(rport), "--otlp.interval=200ms",
                          "--otlp.max-queue-bytes=20000"}));
  ASSERT_TRUE(statlet.WaitReady(milliseconds(15000))) << statlet.log();
  std::vector<json> r;
  ASSERT_TRUE(WaitForRecords(receiver, 5, &r)) << statlet.log();
  const std::string body = Scrape(statlet.port());
  const double drops = SelfMetric(body, "statlet_otlp_dropped_batches_total{reason=\"queue_full\"}");
  EXPECT_GE(drops, 10) << body;
  // Attempt k waits 2^(k-1) s with jitter down to half of it, drops or not.
  for (size_t k = 1; k < r.size() && k <= 4; ++k) {
    const double gap = r[k]["t"].get<double>() - r[k - 1]["t"].get<double>();
    std::printf("attempt %zu after %.2f s\n", k + 1, gap);
    EXPECT_GE(gap, 0.45 * static_cast<double>(1 << (k - 1))) << "attempt " << k + 1 << ", " << drops << " drops";
  }
}

struct StopCase {
  std::string name, protocol, receiver_protocol, mode;
};
void PrintTo(const StopCase& c, std::ostream* os) { *os << c.name; }

class OtlpStop : public ::testing::TestWithParam<StopCase> {};

// SIGTERM while the receiver holds a request whose deadline is a minute away.
TEST_P(OtlpStop, ExitsWithinFiveSecondsOfSigterm) {
  const StopCase& c = GetParam();
  IdleNode node("statlet-otlpstop");
  ASSERT_TRUE(node.Started());
  const std::string& root = node.root;
  const std::string dir = TempDir();
  const int rport = FreeLoopbackPort();
  Receiver receiver(dir, c.receiver_protocol, rport, c.mode);
  ASSERT_TRUE(receiver.WaitReady());
  Daemon statlet(Statlet(dir, root,
                         {"--otlp.endpoint=http://127.0.0.1:" + std::to_string(rport), "--otlp.protocol=" + c.protocol,
                          "--otlp.interval=1s", "--otlp.timeout=60s"}));
  ASSERT_TRUE(statlet.WaitReady(milliseconds(15000))) << statlet.log();
  // The receiver has the request (hang) or the call's connection (blackhole): it is in flight.
  ASSERT_TRUE(WaitFor([&] { return !receiver.Records().empty(); }, milliseconds(15000))) << statlet.log();
  const auto start = std::chrono::steady_clock::now();
  const int status = statlet.Stop(std::chrono::seconds(30));  // SIGKILL only after 30 s
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("%s: exited %.3f s after SIGTERM with a request in flight\n", c.name.c_str(), seconds);
  ASSERT_TRUE(WIFEXITED(status)) << "killed: " << statlet.log();
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_LT(seconds, 5.0) << statlet.log();
}

INSTANTIATE_TEST_SUITE_P(Transports, OtlpStop,
                         ::testing::Values(StopCase{"http_hang", "http/protobuf", "http", "hang"},
                                           StopCase{"http_blackhole", "http/protobuf", "http", "blackhole"},
                                           StopCase{"grpc_blackhole", "grpc", "grpc", "blackhole"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace statlet::testing
