// Basic auth against hostile clients: unknown users cost what wrong passwords cost (no
// user enumeration by timing), a password followed by NUL and junk is refused, a flood of
// wrong passwords does not slow a scraper whose credentials were verified by more than one
// bcrypt check (the mechanism's own figure, measured in the same run), and the DaemonSet's
// probes work with auth on: liveness answers, readiness reaches 200.
#include <crypt.h>
#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <map>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/sample_quantiles.h"
#include "tests/support/statlet_daemon.h"
#include "tests/support/wait_for.h"

#ifndef STATLET_SOURCE_DIR
#error "STATLET_SOURCE_DIR must name the source tree"
#endif

namespace statlet::testing {
namespace {

using testing::Median;

std::string Base64(const std::string& in) {
  static const char* t = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  size_t i = 0;
  for (; i + 2 < in.size(); i += 3) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8) | uint8_t(in[i + 2]);
    for (int s = 18; s >= 0; s -= 6) out += t[(v >> s) & 63];
  }
  if (i + 1 == in.size()) {
    uint32_t v = uint8_t(in[i]) << 16;
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += "==";
  } else if (i + 2 == in.size()) {
    uint32_t v = (uint8_t(in[i]) << 16) | (uint8_t(in[i + 1]) << 8);
    out += t[(v >> 18) & 63];
    out += t[(v >> 12) & 63];
    out += t[(v >> 6) & 63];
    out += '=';
  }
  return out;
}

std::string Authorization(const std::string& user_colon_password) {
  return "Authorization: Basic " + Base64(user_colon_password) + "\r\n";
}

// A web config with user "prom", password "secret", bcrypt cost 10 (what htpasswd -B and
// the exporter-toolkit docs use).
class AuthConfig {
 public:
  AuthConfig() {
    char dir[] = "/tmp/statlet-auth-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return;
    path_ = std::string(dir) + "/web.yml";
    char salt[64];
    if (crypt_gensalt_rn("$2b$", 10, nullptr, 0, salt, sizeof salt) == nullptr) return;
    crypt_data data{};
    const char* hash = crypt_r("secret", salt, &data);
    if (hash == nullptr) return;
    hash_ = hash;
    std::ofstream(path_) << "basic_auth_users:\n  prom: \"" << hash << "\"\n";
  }
  ~AuthConfig() {
    ::unlink(path_.c_str());
    ::rmdir(path_.substr(0, path_.rfind('/')).c_str());
  }
  const std::string& path() const { return path_; }
  const std::string& hash() const { return hash_; }

 private:
  std::string path_;
  std::string hash_;
};

TEST(HttpAuth, UnknownUsersCostWhatWrongPasswordsCost) {
  AuthConfig cfg;
  Daemon d({.flags = {"--web.config.file=" + cfg.path()}});
  ASSERT_TRUE(d.ok()) << d.error();
  std::vector<double> unknown, wrong;
  // Alternating rounds, each credential fresh (a refused one may be remembered).
  for (int i = 0; i < 7; ++i) {
    TimedResponse u = TimedGet(d.port(), "/metrics", Authorization("nobody" + std::to_string(i) + ":secret"));
    TimedResponse w = TimedGet(d.port(), "/metrics", Authorization("prom:wrong" + std::to_string(i)));
    ASSERT_TRUE(u.response && w.response);
    EXPECT_EQ(u.response->status, 401);
    EXPECT_EQ(w.response->status, 401);
    unknown.push_back(u.ms);
    wrong.push_back(w.ms);
  }
  const double u = Median(unknown), w = Median(wrong);
  std::printf("figure: 401 for an unknown user %.2f ms, for a wrong password %.2f ms (median of 7)\n", u, w);
  EXPECT_GT(u, w / 2) << "an unknown user is refused much faster than a wrong password: users can be enumerated";
}

TEST(HttpAuth, PasswordWithNulAndJunkIsRefused) {
  AuthConfig cfg;
  Daemon d({.flags = {"--web.config.file=" + cfg.path()}});
  ASSERT_TRUE(d.ok()) << d.error();
  TimedResponse good = TimedGet(d.port(), "/metrics", Authorization("prom:secret"));
  ASSERT_TRUE(good.response.has_value());
  EXPECT_EQ(good.response->status, 200);
  TimedResponse nul = TimedGet(d.port(), "/metrics", Authorization(std::string("prom:secret\0junk", 16)));
  ASSERT_TRUE(nul.response.has_value());
  EXPECT_EQ(nul.response->status, 401) << "a password followed by NUL and junk was accepted";
  TimedResponse user_nul = TimedGet(d.port(), "/metrics", Authorization(std::string("prom\0x:secret", 13)));
  ASSERT_TRUE(user_nul.response.has_value());
  EXPECT_EQ(user_nul.response->status, 401);
}

TEST(HttpAuth, WrongPasswordFloodDoesNotSlowVerifiedScrapers) {
  AuthConfig cfg;
  Daemon d({.flags = {"--web.config.file=" + cfg.path()}});
  ASSERT_TRUE(d.ok()) << d.error();
  const std::string good = Authorization("prom:secret");
  ASSERT_EQ(TimedGet(d.port(), "/metrics", good).response->status, 200);
  // At least n scrapes, and for at least `window_ms` (under the flood: long enough for
  // several bcrypt checks to end while the scraper measures).
  auto scrapes = [&](int n, double window_ms) {
    std::vector<double> ms;
    int failed = 0;
    const auto start = std::chrono::steady_clock::now();
    auto elapsed_ms = [&] {
      return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    };
    for (int i = 0; i < n || elapsed_ms() < window_ms; ++i) {
      TimedResponse r = TimedGet(d.port(), "/metrics", good, Millis(5000));
      if (!r.response || r.response->status != 200) ++failed;
      ms.push_back(r.ms);
    }
    return std::make_pair(Median(ms), failed);
  };
  // The mechanism's figure: one bcrypt check of this hash, as the daemon runs it (this
  // process, same build, same moment; median of 5).
  std::vector<double> check_ms;
  for (int i = 0; i < 5; ++i) {
    crypt_data data{};
    const auto start = std::chrono::steady_clock::now();
    ASSERT_NE(crypt_r(("guess" + std::to_string(i)).c_str(), cfg.hash().c_str(), &data), nullptr);
    check_ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count());
  }
  const double bcrypt_ms = Median(check_ms);
  const auto [quiet_ms, quiet_failed] = scrapes(9, 4 * bcrypt_ms);
  std::atomic<bool> stop{false};
  // What the flood was answered: 401 (a bcrypt check ran), 429 (the check queue was full).
  std::atomic<int> attempts{0}, refused{0}, throttled{0}, other{0};
  std::vector<std::thread> flood;
  for (int t = 0; t < 32; ++t) {
    flood.emplace_back([&, t] {
      for (int i = 0; !stop; ++i) {
        TimedResponse r =
            TimedGet(d.port(), "/metrics", Authorization("prom:guess-" + std::to_string(t) + "-" + std::to_string(i)),
                     Millis(5000), "127.0.0." + std::to_string(10 + t));
        const int status = r.response ? r.response->status : 0;
        ++(status == 401 ? refused : status == 429 ? throttled : other);
        ++attempts;
      }
    });
  }
  // Measured once the flood is under way: the check queue is full (a 429 was answered).
  const bool under_way = WaitFor([&] { return throttled > 0 && refused > 0; }, std::chrono::seconds(10));
  const int throttled_before = throttled, attempts_before = attempts;
  const auto [flood_ms, flood_failed] = scrapes(9, 4 * bcrypt_ms);
  const int throttled_during = throttled - throttled_before, attempts_during = attempts - attempts_before;
  stop = true;
  for (auto& t : flood) t.join();
  std::printf(
      "figure: verified scrape p50 %.2f ms quiet, %.2f ms under a wrong-password flood (one bcrypt check %.2f ms); "
      "flood: %d attempts, %d answered 401, %d 429, %d otherwise; while scraping %d attempts, %d answered 429\n",
      quiet_ms, flood_ms, bcrypt_ms, attempts.load(), refused.load(), throttled.load(), other.load(), attempts_during,
      throttled_during);
  ASSERT_TRUE(under_way) << "the flood never filled the bcrypt queue: nothing was attacked";
  // The check queue was full while the scraper measured: a scraper queued there would wait.
  EXPECT_GT(throttled_during, 0) << "the bcrypt queue was not full while the verified scraper measured";
  EXPECT_EQ(quiet_failed + flood_failed, 0);
  // A verified scraper queued behind the flood's checks would wait at least one of them.
  EXPECT_LT(flood_ms - quiet_ms, bcrypt_ms) << "wrong passwords slow down a scraper whose credentials were verified";
}

// The DaemonSet's probes, as the kubelet sends them (no credentials), against the
// DaemonSet's own arguments with basic auth on.
TEST(HttpAuth, DaemonSetProbesWorkWithAuthOn) {
  YAML::Node ds;
  for (const YAML::Node& doc :
       YAML::LoadAllFromFile(std::string(STATLET_SOURCE_DIR) + "/deploy/kubernetes/daemonset.yaml")) {
    if (doc["kind"] && doc["kind"].as<std::string>() == "DaemonSet") ds = doc;
  }
  ASSERT_TRUE(ds) << "no DaemonSet in the manifest";
  const YAML::Node c = ds["spec"]["template"]["spec"]["containers"][0];
  std::vector<std::string> web_flags;
  for (const auto& a : c["args"]) {
    const std::string arg = a.as<std::string>();
    if (arg.rfind("--web.", 0) == 0) web_flags.push_back(arg);
  }
  AuthConfig cfg;
  // The manifest's web flags, on loopback ports of this test.
  const int main_port = FreeLoopbackPort(), probe_port = FreeLoopbackPort();
  std::map<int, int> port_of;  // manifest port -> test port
  DaemonOptions o;
  for (std::string f : web_flags) {
    size_t eq = f.find('=');
    const std::string name = f.substr(0, eq);
    if (name == "--web.listen-address" || name == "--web.health-listen-address") {
      const int manifest_port = std::stoi(f.substr(f.rfind(':') + 1));
      const int test_port = name == "--web.listen-address" ? main_port : probe_port;
      port_of[manifest_port] = test_port;
      f = name + "=127.0.0.1:" + std::to_string(test_port);
    }
    o.flags.push_back(f);
  }
  o.flags.push_back("--web.config.file=" + cfg.path());
  o.wait_until_serving = false;
  Daemon d(o);
  for (const char* probe : {"readinessProbe", "livenessProbe"}) {
    const YAML::Node get = c[probe]["httpGet"];
    ASSERT_TRUE(get) << probe << " is not an httpGet probe";
    const int manifest_port = get["port"].as<int>();
    ASSERT_TRUE(port_of.count(manifest_port))
        << probe << " probes port " << manifest_port << ", which no --web.*listen-address flag serves";
    const int port = port_of[manifest_port];
    const std::string path = get["path"].as<std::string>();
    TimedResponse r;
    for (int i = 0; i < 100 && !r.response; ++i) {
      r = TimedGet(port, path, "", Millis(200));                 // until it serves
      if (!r.response) std::this_thread::sleep_for(Millis(50));  // poll interval
    }
    ASSERT_TRUE(r.response.has_value()) << probe << ": nothing serves " << path << ": " << d.log();
    // Readiness comes with the first collection: 503 until then, and 200 after it.
    int status = r.response->status;
    if (path == "/readyz") {
      WaitFor(
          [&] {
            TimedResponse again = TimedGet(port, path, "", Millis(500));
            status = again.response ? again.response->status : 0;
            return status == 200;
          },
          std::chrono::seconds(20));
    }
    EXPECT_EQ(status, 200) << probe << " " << path << " with basic auth on";
  }
  // The metrics port itself still demands credentials.
  TimedResponse m = TimedGet(main_port, "/metrics");
  ASSERT_TRUE(m.response.has_value());
  EXPECT_EQ(m.response->status, 401);
}

}  // namespace
}  // namespace statlet::testing
