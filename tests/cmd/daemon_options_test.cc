#include "cmd/daemon_options.h"

#include <crypt.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

#include "cmd/flag_suggest.h"
#include "exporters/web_config.h"

namespace statlet {
namespace {

std::string TempFile(const std::string& content) {
  char path[] = "/tmp/statlet-opt-XXXXXX";
  int fd = mkstemp(path);
  EXPECT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << content;
  return path;
}

std::string Bcrypt(const std::string& password) {
  char salt[64];
  EXPECT_NE(crypt_gensalt_rn("$2b$", 4, nullptr, 0, salt, sizeof salt), nullptr);
  crypt_data data;
  std::memset(&data, 0, sizeof data);
  return crypt_r(password.c_str(), salt, &data);
}

std::string Basic(const std::string& user_pass) {
  static const char* k = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  int val = 0, bits = -6;
  for (unsigned char c : user_pass) {
    val = (val << 8) + c;
    bits += 8;
    while (bits >= 0) {
      out.push_back(k[(val >> bits) & 0x3F]);
      bits -= 6;
    }
  }
  if (bits > -6) out.push_back(k[((val << 8) >> (bits + 8)) & 0x3F]);
  while (out.size() % 4) out.push_back('=');
  return "Basic " + out;
}

TEST(DaemonOptions, DefaultsFollowExporterConventions) {
  DaemonOptions o;
  ASSERT_TRUE(ParseDaemonOptions({}, &o).ok());
  EXPECT_EQ(o.http.listen_address, ":10340");
  EXPECT_EQ(o.http.telemetry_path, "/metrics");
  EXPECT_EQ(o.http.max_age.count(), 0);
  EXPECT_FALSE(o.metrics.per_cpu);
  EXPECT_EQ(o.collector.max_kept_files, CollectorOptions::kDefaultMaxKeptFiles);
  EXPECT_EQ(o.collector.read_threads, CollectorOptions().read_threads);
}

TEST(DaemonOptions, FlagsInBothFormsAndBooleans) {
  DaemonOptions o;
  Status s = ParseDaemonOptions(
      {"--web.listen-address=127.0.0.1:0", "--web.telemetry-path", "/m", "--collector.max-age=1500ms",
       "--collector.per-cpu", "--no-collector.network", "--log.level=debug", "--log.format", "json",
       "--metrics.max-cgroups=10", "--collector.subtree=/kubepods", "--collector.subtree=/system.slice",
       "--collector.max-kept-files=100", "--collector.read-threads=1"},
      &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(o.http.listen_address, "127.0.0.1:0");
  EXPECT_EQ(o.http.telemetry_path, "/m");
  EXPECT_EQ(o.http.max_age, std::chrono::milliseconds(1500));
  EXPECT_TRUE(o.metrics.per_cpu);
  EXPECT_FALSE(o.collector.network);
  EXPECT_EQ(o.log_level, log::Level::kDebug);
  EXPECT_EQ(o.log_format, log::Format::kJson);
  EXPECT_EQ(o.metrics.max_cgroups, 10u);
  EXPECT_EQ(o.collector.subtrees, (std::vector<std::string>{"/kubepods", "/system.slice"}));
  EXPECT_EQ(o.collector.max_kept_files, 100u);
  EXPECT_EQ(o.collector.read_threads, 1u);
}

TEST(DaemonOptions, BadInputIsAClearError) {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{{"--nope"},
                                                                                    {"--web.listen-address=nowhere"},
                                                                                    {"--web.telemetry-path=metrics"},
                                                                                    {"--collector.max-age=5parsecs"},
                                                                                    {"--log.level=loud"},
                                                                                    {"--web.max-connections=0"},
                                                                                    {"positional"},
                                                                                    {"--web.listen-address"},
                                                                                    {"--no-web.listen-address"},
                                                                                    {"--collector.read-threads=0"},
                                                                                    {"--collector.read-threads=65"}}) {
    DaemonOptions o;
    Status s = ParseDaemonOptions(args, &o);
    EXPECT_FALSE(s.ok()) << args[0];
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << args[0];
    EXPECT_FALSE(s.message().empty());
  }
}

TEST(DaemonOptions, StreamsLeavePlacesForOtherRequests) {
  DaemonOptions d;
  ASSERT_TRUE(ParseDaemonOptions({}, &d).ok());
  EXPECT_EQ(StreamsPerAddress(d.http), 48u) << "the defaults";
  EXPECT_LT(StreamsPerAddress(d.http), d.http.max_connections_per_address) << "the defaults";
  EXPECT_LT(d.pulls.max_progress_streams, d.http.max_connections) << "the defaults";
  struct Case {
    std::vector<std::string> args;
    std::string names;
  };
  for (const Case& c : std::vector<Case>{
           {{"--web.max-connections-per-address=16", "--web.max-streams-per-address=16"},
            "--web.max-streams-per-address"},
           {{"--web.max-connections-per-address=8", "--web.max-streams-per-address=48"},
            "--web.max-connections-per-address (8)"},
           {{"--web.max-connections=64", "--pull.max-progress-streams=64"}, "--pull.max-progress-streams"},
           // Three quarters of one connection is no stream place at all.
           {{"--web.max-connections-per-address=1"}, "leaves no stream place"},
           {{"--web.stream-peer-timeout=25h"}, "--web.stream-peer-timeout"}}) {
    DaemonOptions o;
    Status s = ParseDaemonOptions(c.args, &o);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.args[0];
    EXPECT_NE(s.message().find(c.names), std::string::npos) << s.message();
  }
  DaemonOptions o;
  EXPECT_TRUE(
      ParseDaemonOptions({"--web.max-connections=64", "--pull.max-progress-streams=64", "--no-pull.enabled"}, &o).ok())
      << "without pulls there are no progress streams";
  EXPECT_TRUE(ParseDaemonOptions({"--web.max-connections-per-address=8", "--web.max-streams-per-address=7"}, &o).ok());
  DaemonOptions low;
  ASSERT_TRUE(ParseDaemonOptions({"--web.max-connections-per-address=8"}, &low).ok())
      << "a lower connection cap alone lowers the streams' with it";
  EXPECT_EQ(StreamsPerAddress(low.http), 6u);
}

TEST(DaemonOptions, ConfigFileThenFlagsWin) {
  std::string path = TempFile(
      "web:\n  listen_address: \"127.0.0.1:9999\"\n  telemetry_path: /stats\n"
      "collector:\n  max_age: 2s\n  subtrees: [/a, /b]\nmetrics:\n  max_interfaces: 4\n");
  DaemonOptions o;
  Status s = ParseDaemonOptions({"--config.file", path, "--web.telemetry-path=/override"}, &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(o.http.listen_address, "127.0.0.1:9999");
  EXPECT_EQ(o.http.telemetry_path, "/override");
  EXPECT_EQ(o.http.max_age, std::chrono::seconds(2));
  EXPECT_EQ(o.collector.subtrees, (std::vector<std::string>{"/a", "/b"}));
  EXPECT_EQ(o.metrics.max_interfaces, 4u);
  ::unlink(path.c_str());

  std::string bad = TempFile("web:\n  listen_adress: \":1\"\n");
  DaemonOptions o2;
  Status e = ParseDaemonOptions({"--config.file=" + bad}, &o2);
  EXPECT_FALSE(e.ok());
  EXPECT_NE(e.message().find("unknown key web.listen_adress"), std::string::npos) << e.message();
  ::unlink(bad.c_str());
  DaemonOptions o3;
  EXPECT_FALSE(ParseDaemonOptions({"--config.file=/nonexistent/statlet.yml"}, &o3).ok());
}

TEST(DaemonOptions, ImagePullOptionsFromFlagsAndFile) {
  DaemonOptions d;
  ASSERT_TRUE(ParseDaemonOptions({}, &d).ok());
  EXPECT_TRUE(d.pulls.enabled);
  EXPECT_EQ(d.pulls.no_progress_timeout.count(), 0);
  EXPECT_EQ(d.pulls.status_period, std::chrono::seconds(5));
  EXPECT_TRUE(d.pulls.keep_abandoned);
  EXPECT_EQ(d.pulls.containerd_namespace, "k8s.io");
  EXPECT_EQ(d.pulls.observe_namespaces, (std::vector<std::string>{"k8s.io", "default"}));
  EXPECT_EQ(d.pulls.observe_interval, std::chrono::seconds(1));

  std::string path = TempFile("pull:\n  no_progress_timeout: 30s\n  status_period: 2s\n  node_name: n1\n");
  DaemonOptions o;
  Status s = ParseDaemonOptions(
      {"--config.file", path, "--no-pull.keep-abandoned", "--pull.poll-interval=100ms", "--pull.apiserver=in-cluster",
       "--pull.max-pulls=4", "--pull.max-clients=9", "--pull.containerd-endpoint=unix:///run/c.sock",
       "--pull.observe-namespaces=", "--pull.observe-interval=5s"},
      &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(o.pulls.no_progress_timeout, std::chrono::seconds(30));
  EXPECT_EQ(o.pulls.status_period, std::chrono::seconds(2));
  EXPECT_EQ(o.pulls.node_name, "n1");
  EXPECT_FALSE(o.pulls.keep_abandoned);
  EXPECT_EQ(o.pulls.poll_interval, std::chrono::milliseconds(100));
  EXPECT_EQ(o.pulls.apiserver, "in-cluster");
  EXPECT_EQ(o.pulls.max_pulls, 4u);
  EXPECT_EQ(o.pulls.max_subscribers, 9u);
  EXPECT_EQ(o.pulls.containerd_endpoint, "unix:///run/c.sock");
  EXPECT_TRUE(o.pulls.observe_namespaces.empty());
  EXPECT_EQ(o.pulls.observe_interval, std::chrono::seconds(5));
  ::unlink(path.c_str());

  // The 2019 Image Pull Progress KEP's 1 s..1 min for the per-node object; whole seconds for timeouts.
  for (const char* bad : {"--pull.status-period=500ms", "--pull.status-period=2m", "--pull.status-period=1500ms",
                          "--pull.no-progress-timeout=1.5s", "--pull.poll-interval=1ms", "--pull.apiserver=ftp://x",
                          "--pull.max-pulls=0", "--pull.containerd-endpoint=tcp://x", "--pull.observe-interval=10ms"}) {
    DaemonOptions b;
    EXPECT_FALSE(ParseDaemonOptions({bad}, &b).ok()) << bad;
  }
}

TEST(DaemonOptions, KubernetesAuthFromFlagsAndFile) {
  DaemonOptions d;
  ASSERT_TRUE(ParseDaemonOptions({}, &d).ok());
  EXPECT_FALSE(d.web_auth_kubernetes) << "off by default";
  EXPECT_EQ(d.kube_auth.api.url, "in-cluster");
  EXPECT_EQ(d.kube_auth.api.token_file, "/var/run/secrets/kubernetes.io/serviceaccount/token");
  // The kubelet's cache TTLs.
  EXPECT_EQ(d.kube_auth.token_ttl, std::chrono::minutes(2));
  EXPECT_EQ(d.kube_auth.allowed_ttl, std::chrono::minutes(5));
  EXPECT_EQ(d.kube_auth.denied_ttl, std::chrono::seconds(30));

  std::string path = TempFile("web:\n  auth: kubernetes\n  auth_node_name: node-a\n  auth_denied_cache_ttl: 10s\n");
  DaemonOptions o;
  Status s = ParseDaemonOptions(
      {"--config.file", path, "--web.auth.apiserver=https://10.0.0.1:6443", "--web.auth.ca-file=/etc/ca.crt",
       "--web.auth.reviews-per-second=2.5", "--web.auth.token-cache-ttl=1m"},
      &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_TRUE(o.web_auth_kubernetes);
  EXPECT_EQ(o.kube_auth.node_name, "node-a");
  EXPECT_EQ(o.kube_auth.api.url, "https://10.0.0.1:6443");
  EXPECT_EQ(o.kube_auth.api.ca_file, "/etc/ca.crt");
  EXPECT_EQ(o.kube_auth.denied_ttl, std::chrono::seconds(10));
  EXPECT_EQ(o.kube_auth.token_ttl, std::chrono::minutes(1));
  EXPECT_EQ(o.kube_auth.reviews_per_second, 2.5);
  ::unlink(path.c_str());

  for (const char* bad : {"--web.auth=oidc", "--web.auth.apiserver=ftp://x", "--web.auth.node-name=Node_A",
                          "--web.auth.token-cache-ttl=500ms", "--web.auth.reviews-per-second=0"}) {
    DaemonOptions b;
    EXPECT_FALSE(ParseDaemonOptions({bad}, &b).ok()) << bad;
  }
}

TEST(DaemonOptions, MemoryQosFromFlagsAndFile) {
  DaemonOptions d;
  ASSERT_TRUE(ParseDaemonOptions({}, &d).ok());
  // Nothing assumed: the kubelet's file at kubeadm's path, its version unknown, no overrides.
  EXPECT_EQ(d.memory_qos.kubelet_config, "/var/lib/kubelet/config.yaml");
  EXPECT_EQ(d.memory_qos.kubelet_version, "");
  EXPECT_FALSE(d.memory_qos.feature_gate);
  EXPECT_FALSE(d.memory_qos.throttling_factor_set);
  EXPECT_FALSE(d.memory_qos.reservation);
  EXPECT_EQ(d.memory_qos_api.url, "");
  EXPECT_TRUE(d.memory_high_stall.enabled);
  EXPECT_EQ(d.memory_high_stall.psi_full_avg10_percent, 40.0);
  EXPECT_EQ(d.memory_high_stall.dwell, std::chrono::seconds(10));

  std::string path = TempFile(
      "memory_qos:\n  kubelet_version: v1.36.2\n  throttling_factor: 0.8\n  stall_dwell: 30s\n"
      "  reservation_policy: TieredReservation\n  apiserver: in-cluster\n");
  DaemonOptions o;
  Status s = ParseDaemonOptions(
      {"--config.file", path, "--memory-qos.stall-psi-full=25.5", "--memory-qos.stall-usage-margin=0.1",
       "--no-memory-qos.stall-detector", "--memory-qos.feature-gate=false", "--memory-qos.kubelet-config=/etc/k.yaml",
       "--memory-qos.node-name=node-1"},
      &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(o.memory_qos.kubelet_version, "v1.36.2");
  EXPECT_EQ(o.memory_qos.kubelet_config, "/etc/k.yaml");
  EXPECT_TRUE(o.memory_qos.throttling_factor_set);
  EXPECT_EQ(o.memory_qos.throttling_factor, 0.8);
  EXPECT_EQ(o.memory_qos.feature_gate, false);
  EXPECT_EQ(o.memory_qos.reservation, MemoryReservationPolicy::kTieredReservation);
  EXPECT_EQ(o.memory_qos_api.url, "in-cluster");
  EXPECT_EQ(o.memory_qos_api.node_name, "node-1");
  EXPECT_EQ(o.memory_high_stall.dwell, std::chrono::seconds(30));
  EXPECT_EQ(o.memory_high_stall.psi_full_avg10_percent, 25.5);
  EXPECT_EQ(o.memory_high_stall.usage_margin_ratio, 0.1);
  EXPECT_FALSE(o.memory_high_stall.enabled);
  ::unlink(path.c_str());

  // "none": the override that sets no memory.high.
  DaemonOptions none;
  ASSERT_TRUE(ParseDaemonOptions({"--memory-qos.throttling-factor=none"}, &none).ok());
  EXPECT_TRUE(none.memory_qos.throttling_factor_set);
  EXPECT_FALSE(none.memory_qos.throttling_factor);

  for (const char* bad :
       {"--memory-qos.kubelet-version=1.x", "--memory-qos.kubelet-version=v2.0.0", "--memory-qos.throttling-factor=0",
        "--memory-qos.throttling-factor=1.5", "--memory-qos.feature-gate=maybe", "--memory-qos.reservation-policy=Hard",
        "--memory-qos.apiserver=ftp://x", "--memory-qos.stall-psi-full=101", "--memory-qos.stall-psi-full=lots",
        "--memory-qos.stall-usage-margin=-0.1", "--memory-qos.stall-dwell=soon"}) {
    DaemonOptions b;
    Status e = ParseDaemonOptions({bad}, &b);
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(e.message().find("memory-qos."), std::string::npos) << e.message();
  }
}

TEST(DaemonOptions, HelpDocumentsEveryFlag) {
  std::string usage = DaemonUsage();
  for (const char* flag : {"--web.listen-address",
                           "--web.telemetry-path",
                           "--web.config.file",
                           "--log.level",
                           "--log.format",
                           "--config.file",
                           "--collector.max-age",
                           "--metrics.max-cgroups",
                           "--metrics.max-interfaces",
                           "--web.read-timeout",
                           "--web.write-timeout",
                           "--web.max-request-bytes",
                           "10340",
                           "SIGTERM",
                           "--pull.no-progress-timeout",
                           "--pull.status-period",
                           "--pull.apiserver",
                           "statlet pull",
                           "--web.auth",
                           "--web.auth.apiserver",
                           "--web.auth.reviews-per-second"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
  DaemonOptions o;
  ASSERT_TRUE(ParseDaemonOptions({"--help"}, &o).ok());
  EXPECT_TRUE(o.help);
}

TEST(DaemonOptions, CriProxyNeedsItsSocketAndTheRuntimes) {
  DaemonOptions o;
  ASSERT_TRUE(
      ParseDaemonOptions({"--cri.proxy", "--runtime.endpoint=unix:///run/containerd/containerd.sock"}, &o).ok());
  EXPECT_TRUE(o.cri.proxy);
  EXPECT_EQ(o.cri.proxy_max_calls, 4096);
  DaemonOptions plain;
  ASSERT_TRUE(ParseDaemonOptions({}, &plain).ok());
  EXPECT_FALSE(plain.cri.proxy) << "stats mode by default";
  const std::vector<std::vector<std::string>> bad = {
      {"--cri.proxy"},
      {"--cri.proxy", "--runtime.endpoint=none"},
      {"--cri.proxy", "--runtime.endpoint=unix:///run/containerd/containerd.sock", "--cri.listen="},
      {"--cri.proxy-max-calls=0"},
      {"--cri.proxy-max-calls=100000"}};
  for (const auto& args : bad) {
    DaemonOptions b;
    Status e = ParseDaemonOptions(args, &b);
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << args[0];
    EXPECT_NE(e.message().find("cri."), std::string::npos) << e.message();
  }
  EXPECT_NE(DaemonUsage().find("--cri.proxy"), std::string::npos);
}

TEST(WebConfig, ParsesSupportedFieldsAndRejectsTheRest) {
  auto ok = ParseWebConfig(
      "tls_server_config:\n  cert_file: /c.pem\n  key_file: /k.pem\n"
      "http_server_config:\n  headers:\n    X-Frame-Options: deny\n"
      "basic_auth_users:\n  prom: $2b$04$abcdefghijklmnopqrstuuJ0W7vhzO0V5o7nM7Vw2c7Yv3P0nRk3W\n");
  ASSERT_TRUE(ok.ok()) << ok.status().ToString();
  EXPECT_TRUE(ok->tls());
  EXPECT_EQ(ok->headers.at("X-Frame-Options"), "deny");
  EXPECT_EQ(ok->basic_auth_users.size(), 1u);
  for (const char* bad :
       {"tls_server_config:\n  cert_file: /c\n  key_file: /k\n  min_version: TLS13\n",
        "tls_server_config:\n  cert_file: /c\n",
        "tls_server_config:\n  cert_file: /c\n  key_file: /k\n  client_auth_type: RequestClientCert\n",
        "basic_auth_users:\n  u: plaintext\n", "surprise: 1\n", "basic_auth_users: [\n"}) {
    auto r = ParseWebConfig(bad);
    EXPECT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << bad;
  }
}

TEST(WebConfig, BasicAuthChecksBcrypt) {
  WebConfig cfg;
  cfg.basic_auth_users["prom"] = Bcrypt("s3cret");
  EXPECT_TRUE(CheckBasicAuth(cfg, Basic("prom:s3cret")));
  EXPECT_FALSE(CheckBasicAuth(cfg, Basic("prom:wrong")));
  EXPECT_FALSE(CheckBasicAuth(cfg, Basic("other:s3cret")));
  EXPECT_FALSE(CheckBasicAuth(cfg, "Bearer x"));
  EXPECT_FALSE(CheckBasicAuth(cfg, ""));
  EXPECT_TRUE(CheckBasicAuth(WebConfig{}, ""));
  // crypt(3) stops at NUL: a password (or user) holding one must not pass as its prefix.
  EXPECT_FALSE(CheckBasicAuth(cfg, Basic(std::string("prom:s3cret\0junk", 16))));
  EXPECT_FALSE(CheckBasicAuth(cfg, Basic(std::string("prom\0:s3cret", 12))));
  // Base64 is read strictly: junk, missing padding and text after the padding are refused.
  const std::string good = Basic("prom:s3cret");
  EXPECT_FALSE(CheckBasicAuth(cfg, good + "!"));
  EXPECT_FALSE(CheckBasicAuth(cfg, good.substr(0, good.size() - 1)));
  EXPECT_FALSE(CheckBasicAuth(cfg, good + "AAAA"));
}

// What an operator reads for the two commonest mistakes: a value that is not one, and a
// flag or config key mistyped (docs/errors.md).
TEST(DaemonOptionsMessages, ABadValueNamesTheFlagAndAValidExample) {
  DaemonOptions o;
  Status s = ParseDaemonOptions({"--collector.max-age=abc"}, &o);
  EXPECT_EQ(s.message(),
            "--collector.max-age: expected a duration (a number and ns, us, ms, s, m or h), got \"abc\" (e.g. 2s)");
  s = ParseDaemonOptions({"--collector.read-threads", "0"}, &o);
  EXPECT_EQ(s.message(), "--collector.read-threads: expected an integer in 1..64, got \"0\" (e.g. 2)");
}

TEST(DaemonOptionsMessages, AnUnknownFlagOrKeySuggestsTheNearest) {
  DaemonOptions o;
  EXPECT_EQ(ParseDaemonOptions({"--collector.maxage=1s"}, &o).message(),
            "unknown flag --collector.maxage; did you mean --collector.max-age? (see --help)");
  EXPECT_EQ(ParseDaemonOptions({"--web.listen-adress=:1"}, &o).message(),
            "unknown flag --web.listen-adress; did you mean --web.listen-address? (see --help)");
  EXPECT_EQ(ParseDaemonOptions({"--no-collector.netwrk"}, &o).message(),
            "unknown flag --no-collector.netwrk; did you mean --no-collector.network? (see --help)");
  EXPECT_EQ(ParseDaemonOptions({"--frobnicate"}, &o).message(), "unknown flag --frobnicate (see --help)");
  EXPECT_EQ(ApplyConfigYaml("collector:\n  maxage: 2s\n", &o).message(),
            "config: unknown key collector.maxage; did you mean collector.max_age?");
}

TEST(FlagSuggest, NearestNameWithinAThirdOfTheName) {
  const std::vector<std::string> names = {"--cgroup", "--collector.include-empty", "--interval", "--output"};
  EXPECT_EQ(NearestName("--cgrop", names), "--cgroup");
  EXPECT_EQ(NearestName("--intreval", names), "--interval");  // a swap of neighbours
  EXPECT_EQ(NearestName("--collector.includeempty", names), "--collector.include-empty");
  EXPECT_EQ(NearestName("--colour", names), "");
  EXPECT_EQ(NearestName("--x", names), "");
}

}  // namespace
}  // namespace statlet

namespace statlet {
namespace {

TEST(DaemonOptions, MetricSelectionFlagsReachTheRulesAndTheCollector) {
  DaemonOptions all;
  ASSERT_TRUE(ParseDaemonOptions({}, &all).ok());
  EXPECT_TRUE(all.metrics.selection.all());
  EXPECT_TRUE(all.collector.files.pressure && all.collector.files.io && all.collector.files.hugetlb &&
              all.collector.files.pids && all.collector.process_fds && all.collector.network);

  DaemonOptions o;
  Status s = ParseDaemonOptions(
      {"--metrics.disable=diskIO,hugetlb", "--metrics.disable=process", "--metrics.drop-labels=id,image"}, &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_FALSE(o.metrics.selection.Serves(FamilyId::kContainerFsReadsBytesTotal));
  EXPECT_FALSE(o.metrics.selection.Serves(FamilyId::kContainerThreads));
  EXPECT_TRUE(o.metrics.selection.Serves(FamilyId::kContainerMemoryRss));
  EXPECT_TRUE(o.metrics.selection.Drops(metrics::CgroupLabel::kId));
  EXPECT_FALSE(o.collector.files.io);
  EXPECT_FALSE(o.collector.files.hugetlb);
  EXPECT_FALSE(o.collector.files.pids);
  EXPECT_FALSE(o.collector.process_fds);
  EXPECT_TRUE(o.collector.files.pressure);
  EXPECT_TRUE(o.collector.network);

  DaemonOptions bad;
  s = ParseDaemonOptions({"--metrics.disable=diskio"}, &bad);
  ASSERT_FALSE(s.ok());
  EXPECT_NE(s.message().find("--metrics.disable"), std::string::npos) << s.message();
  EXPECT_NE(s.message().find("diskIO"), std::string::npos) << s.message();
  EXPECT_FALSE(ParseDaemonOptions({"--metrics.drop-labels=pod"}, &bad).ok());
}

}  // namespace
}  // namespace statlet
