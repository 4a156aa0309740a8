#include "cmd/daemon_options.h"

#include <crypt.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <fstream>

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

  std::string path = TempFile("pull:\n  no_progress_timeout: 30s\n  status_period: 2s\n  node_name: n1\n");
  DaemonOptions o;
  Status s = ParseDaemonOptions(
      {"--config.file", path, "--no-pull.keep-abandoned", "--pull.poll-interval=100ms", "--pull.apiserver=in-cluster",
       "--pull.max-pulls=4", "--pull.max-clients=9", "--pull.containerd-endpoint=unix:///run/c.sock"},
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
  ::unlink(path.c_str());

  // The 2019 Image Pull Progress KEP's 1 s..1 min for the per-node object; whole seconds for timeouts.
  for (const char* bad : {"--pull.status-period=500ms", "--pull.status-period=2m", "--pull.status-period=1500ms",
                          "--pull.no-progress-timeout=1.5s", "--pull.poll-interval=1ms", "--pull.apiserver=ftp://x",
                          "--pull.max-pulls=0", "--pull.containerd-endpoint=tcp://x"}) {
    DaemonOptions b;
    EXPECT_FALSE(ParseDaemonOptions({bad}, &b).ok()) << bad;
  }
}

TEST(DaemonOptions, MemoryQosFromFlagsAndFile) {
  DaemonOptions d;
  ASSERT_TRUE(ParseDaemonOptions({}, &d).ok());
  EXPECT_EQ(d.memory_qos.formula, MemoryHighFormula::kV1_27);
  EXPECT_EQ(d.memory_qos.throttling_factor, 0.9);
  EXPECT_TRUE(d.memory_high_stall.enabled);
  EXPECT_EQ(d.memory_high_stall.psi_full_avg10_percent, 40.0);
  EXPECT_EQ(d.memory_high_stall.dwell, std::chrono::seconds(10));

  std::string path = TempFile("memory_qos:\n  formula: v1.22\n  throttling_factor: 0.8\n  stall_dwell: 30s\n");
  DaemonOptions o;
  Status s = ParseDaemonOptions({"--config.file", path, "--memory-qos.stall-psi-full=25.5",
                                 "--memory-qos.stall-usage-margin=0.1", "--no-memory-qos.stall-detector"},
                                &o);
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_EQ(o.memory_qos.formula, MemoryHighFormula::kV1_22);
  EXPECT_EQ(o.memory_qos.throttling_factor, 0.8);
  EXPECT_EQ(o.memory_high_stall.dwell, std::chrono::seconds(30));
  EXPECT_EQ(o.memory_high_stall.psi_full_avg10_percent, 25.5);
  EXPECT_EQ(o.memory_high_stall.usage_margin_ratio, 0.1);
  EXPECT_FALSE(o.memory_high_stall.enabled);
  ::unlink(path.c_str());

  for (const char* bad :
       {"--memory-qos.formula=1.27", "--memory-qos.throttling-factor=0", "--memory-qos.throttling-factor=1.5",
        "--memory-qos.stall-psi-full=101", "--memory-qos.stall-psi-full=lots", "--memory-qos.stall-usage-margin=-0.1",
        "--memory-qos.stall-dwell=soon"}) {
    DaemonOptions b;
    Status e = ParseDaemonOptions({bad}, &b);
    EXPECT_EQ(e.code(), StatusCode::kInvalidArgument) << bad;
    EXPECT_NE(e.message().find("memory-qos."), std::string::npos) << e.message();
  }
}

TEST(DaemonOptions, HelpDocumentsEveryFlag) {
  std::string usage = DaemonUsage();
  for (const char* flag :
       {"--web.listen-address", "--web.telemetry-path", "--web.config.file", "--log.level", "--log.format",
        "--config.file", "--collector.max-age", "--metrics.max-cgroups", "--metrics.max-interfaces",
        "--web.read-timeout", "--web.write-timeout", "--web.max-request-bytes", "10340", "SIGTERM",
        "--pull.no-progress-timeout", "--pull.status-period", "--pull.apiserver", "statlet pull"}) {
    EXPECT_NE(usage.find(flag), std::string::npos) << flag;
  }
  DaemonOptions o;
  ASSERT_TRUE(ParseDaemonOptions({"--help"}, &o).ok());
  EXPECT_TRUE(o.help);
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

}  // namespace
}  // namespace statlet
