// Starting and stopping under adverse conditions: a second instance on the same web
// address, a runtime socket that never answers, hostile clients at SIGTERM, TLS files
// that cannot be used.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <thread>

#include "tests/reliability/h2_attacker.h"
#include "tests/support/http_client.h"
#include "tests/support/silent_unix_socket.h"
#include "tests/support/statlet_daemon.h"
#include "tests/support/wait_for.h"

namespace statlet::testing {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

TEST(Lifecycle, SecondInstanceOnTheSameAddressIsRefused) {
  Daemon first;
  ASSERT_TRUE(first.ok()) << first.error();
  Daemon second(
      {.flags = {"--web.listen-address=127.0.0.1:" + std::to_string(first.port())}, .wait_until_serving = false});
  const bool exited = WaitFor([&] { return !second.running(); }, std::chrono::seconds(10));
  std::printf("figure: second instance on the same address %s\n", exited ? "exited" : "kept running");
  EXPECT_TRUE(exited) << "a second daemon serves the same address: " << second.log();
  const std::string log = second.log();
  EXPECT_NE(log.find("127.0.0.1:" + std::to_string(first.port())), std::string::npos) << log;
  EXPECT_NE(log.find("in use"), std::string::npos) << "the refusal should say the address is in use: " << log;
  // The first instance serves every scrape.
  for (int i = 0; i < 20; ++i) {
    TimedResponse r = TimedGet(first.port(), "/healthz");
    ASSERT_TRUE(r.response.has_value());
    ASSERT_EQ(r.response->status, 200);
  }
  EXPECT_TRUE(first.running());
}

// Seconds from spawning a daemon with `flags` to its first /healthz answer.
double FirstAnswerSeconds(std::vector<std::string> flags) {
  const auto start = Clock::now();
  Daemon d({.flags = std::move(flags), .wait_until_serving = false});
  if (!d.WaitServing(std::chrono::seconds(20))) {
    ADD_FAILURE() << d.log();
    return 1e9;
  }
  return SecondsSince(start);
}

TEST(Lifecycle, HungRuntimeDoesNotDelayServing) {
  SilentUnixSocket runtime("runtime.sock");
  ASSERT_TRUE(runtime.ok());
  // Against the same build's start without a runtime, in this run (a sanitized build starts
  // slower): waiting for the hung runtime would add its call timeout (5 s by default).
  const double baseline = FirstAnswerSeconds({"--runtime.endpoint=none"});
  const double first_answer = FirstAnswerSeconds({"--runtime.endpoint=unix://" + runtime.path()});
  constexpr double kRuntimeCallTimeoutS = 5.0;  // RuntimeClientOptions::call_timeout
  std::printf("figure: first /healthz answer %.2f s after start with a hung runtime socket, %.2f s without a runtime\n",
              first_answer, baseline);
  EXPECT_LT(first_answer, baseline + kRuntimeCallTimeoutS / 2) << "serving waited for the runtime";
  Daemon d({.flags = {"--runtime.endpoint=unix://" + runtime.path()}, .wait_until_serving = false});
  ASSERT_TRUE(d.WaitServing(std::chrono::seconds(20))) << d.log();
  TimedResponse m = TimedGet(d.port(), "/metrics", "", Millis(3000));
  ASSERT_TRUE(m.response.has_value()) << "/metrics waits for the hung runtime";
  EXPECT_EQ(m.response->status, 200);
}

TEST(Lifecycle, SigtermExitsWithinFiveSecondsWhateverTheClients) {
  Daemon d({.serve_cri = true});
  ASSERT_TRUE(d.ok()) << d.error();
  std::vector<TcpConnection> hostile;
  for (int i = 0; i < 20; ++i) hostile.emplace_back(d.port(), "127.0.0.2");  // idle, nothing sent
  for (int i = 0; i < 10; ++i) {
    hostile.emplace_back(d.port(), "127.0.0.3");
    hostile.back().Send("GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: ");  // a header never finished
  }
  for (int i = 0; i < 10; ++i) {
    hostile.emplace_back(d.port(), "127.0.0.4");
    // Keep-alive after an answer; and requests whose answers are never read.
    hostile.back().Send(GetRequest("/healthz"));
    hostile.back().ReadResponse(Millis(2000));
    for (int j = 0; j < 50; ++j) hostile.back().Send(GetRequest("/metrics"), Millis(50));
  }
  // CRI clients: calls whose answers are never granted flow-control credit, and one that
  // connected and sent nothing.
  H2Attacker stalled(d.cri_socket());
  ASSERT_TRUE(stalled.ok());
  stalled.OpenCalls("/runtime.v1.RuntimeService/ListContainerStats", 100);
  stalled.Pump(Millis(300));
  int cri = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", d.cri_socket().c_str());
  EXPECT_EQ(::connect(cri, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  const auto start = Clock::now();
  ::kill(d.pid(), SIGTERM);
  const bool exited = WaitFor([&] { return !d.running(); }, std::chrono::seconds(15));
  const double took = SecondsSince(start);
  ::close(cri);
  std::printf(
      "figure: exit %.2f s after SIGTERM with 40 hostile HTTP clients, 100 stalled CRI calls and an idle "
      "CRI client%s\n",
      took, exited ? "" : " (still running at 15 s)");
  EXPECT_TRUE(exited);
  EXPECT_LT(took, 5.0) << "SIGTERM took longer than five seconds";
  EXPECT_NE(d.log().find("stopped"), std::string::npos) << "not a clean stop: " << d.log();
}

class TlsFiles {
 public:
  TlsFiles() {
    char dir[] = "/tmp/statlet-tls-reasons-XXXXXX";
    if (::mkdtemp(dir) == nullptr) return;
    dir_ = dir;
    ok_ = RunCommand({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=a",
                      "-keyout", dir_ + "/a.key", "-out", dir_ + "/a.crt"}) == 0 &&
          RunCommand({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=b",
                      "-keyout", dir_ + "/b.key", "-out", dir_ + "/b.crt"}) == 0;
    std::ofstream(dir_ + "/garbage.crt") << "this is not a certificate\n";
  }
  ~TlsFiles() { RunCommand({"rm", "-rf", dir_}); }
  bool ok() const { return ok_; }
  std::string path(const std::string& name) const { return dir_ + "/" + name; }
  std::string WebConfig(const std::string& cert, const std::string& key) const {
    const std::string p = dir_ + "/web-" + cert + "-" + key + ".yml";
    std::ofstream(p) << "tls_server_config:\n  cert_file: " << path(cert) << "\n  key_file: " << path(key) << "\n";
    return p;
  }

 private:
  std::string dir_;
  bool ok_ = false;
};

TEST(Lifecycle, TlsSetupErrorsSayWhy) {
  TlsFiles tls;
  ASSERT_TRUE(tls.ok());
  struct Case {
    const char* what;
    std::string cert, key;
    std::vector<std::string> reason_any;  // one of these words (lower case) says why
  };
  const std::vector<Case> cases = {
      {"certificate and key of different pairs", "a.crt", "b.key", {"match"}},
      {"a certificate file that is not PEM", "garbage.crt", "a.key", {"no start line", "pem", "no certificate"}},
      {"a key file that does not exist", "a.crt", "missing.key", {"no such file"}},
  };
  for (const Case& c : cases) {
    Daemon d({.flags = {"--web.config.file=" + tls.WebConfig(c.cert, c.key)}, .wait_until_serving = false});
    ASSERT_TRUE(WaitFor([&] { return !d.running(); }, std::chrono::seconds(10))) << c.what << ": still running";
    std::string log = d.log();
    for (char& ch : log) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
    bool says_why = false;
    for (const std::string& r : c.reason_any) says_why = says_why || log.find(r) != std::string::npos;
    std::printf("figure: %s -> %s", c.what, d.log().c_str());
    EXPECT_TRUE(says_why) << c.what << ": the error does not say why: " << d.log();
  }
}

}  // namespace
}  // namespace statlet::testing
