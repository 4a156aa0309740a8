// What a connection may hold: idle, trickling (slowloris) and keep-alive connections must
// not keep scrapes or /healthz from being answered; an error answer closes its connection;
// pipelined requests are all answered; idle and half-read connections are closed at their
// own timeouts; one address cannot take every connection.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "tests/support/http_client.h"
#include "tests/support/statlet_daemon.h"
#include "tests/support/wait_for.h"

namespace statlet::testing {
namespace {

// Attackers come from 127.0.0.2 onwards, `per_address` connections each, scrapers from
// 127.0.0.1.
std::string AttackerAddress(int i, int per_address) { return "127.0.0." + std::to_string(2 + i / per_address); }

struct ScrapeFigures {
  int failed = 0;
  double p50_ms = 0;
  double max_ms = 0;
};

ScrapeFigures Scrape(int port, int count, Millis deadline) {
  ScrapeFigures f;
  std::vector<double> ms;
  for (int i = 0; i < count; ++i) {
    TimedResponse r = TimedGet(port, "/metrics", "", deadline);
    if (!r.response || r.response->status != 200 || r.response->body.find("statlet_build_info") == std::string::npos) {
      ++f.failed;
    }
    ms.push_back(r.ms);
  }
  std::sort(ms.begin(), ms.end());
  f.p50_ms = ms[ms.size() / 2];
  f.max_ms = ms.back();
  return f;
}

enum class Attack { kIdle, kSlowloris, kKeepAlive };
const char* Name(Attack a) {
  return a == Attack::kIdle ? "idle" : a == Attack::kSlowloris ? "slowloris" : "keep-alive";
}

struct AttackCase {
  Attack attack;
  int connections;
};

class HttpConnectionAttack : public ::testing::TestWithParam<AttackCase> {};

TEST_P(HttpConnectionAttack, ScrapesAndHealthStayAnswered) {
  const AttackCase c = GetParam();
  Daemon d;
  ASSERT_TRUE(d.ok()) << d.error();
  const ScrapeFigures normal = Scrape(d.port(), 10, Millis(2000));
  ASSERT_EQ(normal.failed, 0);

  std::vector<TcpConnection> held;
  for (int i = 0; i < c.connections; ++i) {
    held.emplace_back(d.port(), AttackerAddress(i, 20));
    TcpConnection& conn = held.back();
    if (!conn.ok()) continue;
    if (c.attack == Attack::kKeepAlive) {
      // One answered request, then the connection stays open and silent.
      if (conn.Send(GetRequest("/healthz"))) conn.ReadResponse(Millis(2000));
    } else if (c.attack == Attack::kSlowloris) {
      conn.Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n");
    }
  }
  std::atomic<bool> stop{false};
  std::thread trickle([&] {
    if (c.attack != Attack::kSlowloris) return;
    // One header byte per connection every 200 ms, for as long as the scrapes run.
    while (!stop) {
      for (auto& conn : held) {
        if (conn.ok()) conn.Send("X", Millis(10));
      }
      for (int i = 0; i < 20 && !stop; ++i) std::this_thread::sleep_for(Millis(10));  // trickle pace
    }
  });
  const ScrapeFigures attacked = Scrape(d.port(), 10, Millis(2000));
  TimedResponse health = TimedGet(d.port(), "/healthz", "", Millis(2000));
  stop = true;
  trickle.join();
  std::printf(
      "figure: %d %s connections: scrape p50 %.2f ms (normal %.2f ms, ratio %.2f), max %.2f ms, "
      "%d of 10 failed\n",
      c.connections, Name(c.attack), attacked.p50_ms, normal.p50_ms, attacked.p50_ms / normal.p50_ms, attacked.max_ms,
      attacked.failed);
  EXPECT_EQ(attacked.failed, 0) << "scrapes failed or took over 2 s with " << c.connections << " " << Name(c.attack)
                                << " connections open";
  ASSERT_TRUE(health.response.has_value()) << "/healthz unanswered";
  EXPECT_EQ(health.response->status, 200);
}

INSTANTIATE_TEST_SUITE_P(Connections, HttpConnectionAttack,
                         ::testing::Values(AttackCase{Attack::kIdle, 8}, AttackCase{Attack::kIdle, 20},
                                           AttackCase{Attack::kIdle, 200}, AttackCase{Attack::kSlowloris, 8},
                                           AttackCase{Attack::kSlowloris, 20}, AttackCase{Attack::kSlowloris, 200},
                                           AttackCase{Attack::kKeepAlive, 8}, AttackCase{Attack::kKeepAlive, 20},
                                           AttackCase{Attack::kKeepAlive, 200}),
                         [](const auto& info) {
                           return std::string(info.param.attack == Attack::kIdle        ? "Idle"
                                              : info.param.attack == Attack::kSlowloris ? "Slowloris"
                                                                                        : "KeepAlive") +
                                  std::to_string(info.param.connections);
                         });

TEST(HttpConnections, ErrorAnswersCloseTheirConnection) {
  Daemon d;
  ASSERT_TRUE(d.ok()) << d.error();
  struct Case {
    const char* what;
    std::string request;
  };
  const std::vector<Case> cases = {
      {"malformed request line", "BLAH\r\n\r\n"},
      {"long target", "GET /" + std::string(20000, 'a') + " HTTP/1.1\r\nHost: x\r\n\r\n"},
      {"unknown method with a body", "PUT /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\n\r\nhello"},
  };
  for (const Case& c : cases) {
    TcpConnection conn(d.port());
    ASSERT_TRUE(conn.ok());
    conn.Send(c.request);
    auto r = conn.ReadResponse(Millis(2000));
    ASSERT_TRUE(r.has_value()) << c.what << ": no answer";
    EXPECT_GE(r->status, 400) << c.what;
    EXPECT_TRUE(conn.ClosedWithin(Millis(1000)))
        << c.what << ": answered " << r->status << " but the connection stays open";
  }
}

TEST(HttpConnections, PipelinedRequestsAreAllAnswered) {
  Daemon d;
  ASSERT_TRUE(d.ok()) << d.error();
  TcpConnection conn(d.port());
  ASSERT_TRUE(conn.ok());
  ASSERT_TRUE(conn.Send(GetRequest("/healthz") + GetRequest("/metrics") + GetRequest("/readyz")));
  std::vector<int> statuses;
  for (int i = 0; i < 3; ++i) {
    auto r = conn.ReadResponse(Millis(2000));
    if (!r) break;
    statuses.push_back(r->status);
  }
  ASSERT_EQ(statuses.size(), 3u) << "pipelined requests after the first were dropped";
  EXPECT_EQ(statuses[0], 200);
  EXPECT_EQ(statuses[1], 200);
}

TEST(HttpConnections, IdleAndHalfReadConnectionsCloseAtTheirOwnTimeouts) {
  Daemon d({.flags = {"--web.idle-timeout=1s", "--web.read-timeout=4s"}});
  ASSERT_TRUE(d.ok()) << d.error();
  // A keep-alive connection left idle after its answer: closed at the idle timeout.
  TcpConnection keep(d.port());
  ASSERT_TRUE(keep.Send(GetRequest("/healthz")));
  ASSERT_TRUE(keep.ReadResponse(Millis(2000)).has_value());
  EXPECT_TRUE(keep.ClosedWithin(Millis(2500))) << "an idle keep-alive connection outlived a 1s idle timeout";
  // A request sent slowly (longer than the idle timeout, shorter than the read timeout)
  // is still answered: the timeouts are separate.
  TcpConnection slow(d.port());
  const std::string req = GetRequest("/healthz");
  for (size_t i = 0; i < req.size(); i += req.size() / 6 + 1) {
    ASSERT_TRUE(slow.Send(req.substr(i, req.size() / 6 + 1)));
    std::this_thread::sleep_for(Millis(300));  // pace of a slow but honest client
  }
  auto r = slow.ReadResponse(Millis(2000));
  ASSERT_TRUE(r.has_value()) << "a slow request that took 2 s of a 4 s read timeout was cut";
  EXPECT_EQ(r->status, 200);
  // A request trickled forever: cut at the read timeout, whatever the pace.
  TcpConnection loris(d.port());
  ASSERT_TRUE(loris.Send("GET /metrics HTTP/1.1\r\n"));
  const auto start = std::chrono::steady_clock::now();
  bool closed = false;
  while (std::chrono::steady_clock::now() - start < std::chrono::seconds(8)) {
    if (!loris.Send("X", Millis(100)) || loris.ClosedWithin(Millis(200))) {
      closed = true;
      break;
    }
  }
  const double after = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("figure: trickled request closed after %.1f s (read timeout 4 s)\n", after);
  EXPECT_TRUE(closed) << "a request trickled one byte per 200 ms stayed open for 8 s";
}

TEST(HttpConnections, OneAddressCannotTakeEveryConnection) {
  Daemon d;
  ASSERT_TRUE(d.ok()) << d.error();
  std::vector<TcpConnection> flood;
  for (int i = 0; i < 600; ++i) flood.emplace_back(d.port(), "127.0.0.77", Millis(500));
  // Whatever the daemon did with them (accepted or closed), scrapes from elsewhere work.
  const ScrapeFigures f = Scrape(d.port(), 5, Millis(2000));
  TimedResponse health = TimedGet(d.port(), "/healthz", "", Millis(2000), "127.0.0.78");
  EXPECT_EQ(f.failed, 0) << "600 connections from one address starved other clients";
  ASSERT_TRUE(health.response.has_value());
  EXPECT_EQ(health.response->status, 200);
}

}  // namespace
}  // namespace statlet::testing
