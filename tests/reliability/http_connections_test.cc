// What a connection may hold: idle, trickling (slowloris) and keep-alive connections must
// not keep scrapes or /healthz from being answered; an error answer closes its connection;
// pipelined requests are all answered; idle and half-read connections are closed at their
// own timeouts; one address cannot take every connection; partial requests holding every
// slot are shed for a scraper.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <optional>
#include <thread>
#include <vector>

#include "tests/reliability/container_tree.h"
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
  // Timeouts well past the test's length: every attacking connection stays open while the
  // scrapes run, whatever the machine's pace (the timeouts have tests of their own below).
  Daemon d({.flags = {"--web.idle-timeout=120s", "--web.read-timeout=120s"}});
  ASSERT_TRUE(d.ok()) << d.error();
  const ScrapeFigures normal = Scrape(d.port(), 10, Millis(2000));
  ASSERT_EQ(normal.failed, 0);

  std::vector<TcpConnection> held;
  int connected = 0, attacking = 0;  // connections made; and that did what their attack does
  for (int i = 0; i < c.connections; ++i) {
    held.emplace_back(d.port(), AttackerAddress(i, 20));
    TcpConnection& conn = held.back();
    if (!conn.ok()) continue;
    ++connected;
    if (c.attack == Attack::kKeepAlive) {
      // One answered request, then the connection stays open and silent.
      if (conn.Send(GetRequest("/healthz")) && conn.ReadResponse(Millis(2000)).has_value()) ++attacking;
    } else if (c.attack == Attack::kSlowloris) {
      if (conn.Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n")) ++attacking;
    } else {
      ++attacking;
    }
  }
  ASSERT_EQ(connected, c.connections) << "attacking connections were refused: the attack did not happen";
  ASSERT_EQ(attacking, c.connections) << "attacking connections were cut before their attack began";
  // The daemon holds an accepted connection for every one of them.
  auto held_by_daemon = [&] { return AcceptedConnections(d.pid(), d.port()); };
  ASSERT_TRUE(WaitFor([&] { return held_by_daemon() >= c.connections; }, std::chrono::seconds(10)))
      << "the daemon holds " << held_by_daemon() << " of " << c.connections << " attacking connections";
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
  // Still held once the scrapes were answered: they got in beside the attack, not after it.
  const int still_held = held_by_daemon();
  stop = true;
  trickle.join();
  std::printf(
      "figure: %d %s connections (%d held by the daemon after the scrapes): scrape p50 %.2f ms (normal %.2f ms, "
      "ratio %.2f), max %.2f ms, %d of 10 failed\n",
      c.connections, Name(c.attack), still_held, attacked.p50_ms, normal.p50_ms, attacked.p50_ms / normal.p50_ms,
      attacked.max_ms, attacked.failed);
  EXPECT_GE(still_held, c.connections) << "attacking connections were gone before the scrapes ended";
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
  Daemon d({.wait_until_ready = true});  // /readyz, the third, answers 200 from then on
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
  EXPECT_EQ(statuses[2], 200);
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

// Partial requests from many addresses, each under the per-address cap: every connection
// sends part of a request, then a header byte every 200 ms, and reconnects when closed,
// as a slowloris does.
class SlotFlood {
 public:
  SlotFlood(int port, int connections, int per_address) : port_(port), held_(connections), per_address_(per_address) {
    for (int i = 0; i < connections; ++i) held_[i].emplace(Open(i));
    trickle_ = std::thread([this] {
      while (!stop_) {
        for (size_t i = 0; i < held_.size() && !stop_; ++i) {
          if (held_[i]->ok() && held_[i]->Send("X", Millis(10))) continue;
          held_[i].reset();
          held_[i].emplace(Open(static_cast<int>(i)));
          ++reconnects_;
        }
        for (int i = 0; i < 20 && !stop_; ++i) std::this_thread::sleep_for(Millis(10));  // trickle pace
      }
    });
  }
  ~SlotFlood() {
    stop_ = true;
    trickle_.join();
  }
  int reconnects() const { return reconnects_; }

 private:
  TcpConnection Open(int i) {
    TcpConnection conn(port_, AttackerAddress(i, per_address_), Millis(500));
    if (conn.ok()) conn.Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n", Millis(10));
    return conn;
  }

  int port_;
  std::vector<std::optional<TcpConnection>> held_;
  int per_address_;
  std::atomic<bool> stop_{false};
  std::atomic<int> reconnects_{0};
  std::thread trickle_;
};

// 530 such connections, 26 from each of 21 addresses, hold all 512 slots. The server sheds
// the connection that has held its slot longest without a whole request, so ten scrapes in
// a row are all answered, within twice their latency without the flood; the probe address
// is unaffected. Quiet and flooded scrapes alternate in rounds, so that the noise of this
// shared machine reaches both sides.
TEST(HttpConnections, ScrapesGetInWhilePartialRequestsHoldEverySlot) {
  constexpr int kFlood = 530, kPerAddress = 26, kSlots = 512, kRounds = 3;
  // A scrape with something to collect: 100 containers, a quarter with a process.
  const std::string root = "/statlet-slots-" + std::to_string(::getpid());
  ContainerTree tree(root);
  ASSERT_TRUE(tree.ok()) << tree.error();
  std::vector<std::string> paths;
  ASSERT_TRUE(tree.Add(100, 4, &paths)) << tree.error();
  const int probe_port = FreeLoopbackPort();
  Daemon d({.flags = {"--web.max-connections=" + std::to_string(kSlots), "--web.max-connections-per-address=64",
                      "--web.health-listen-address=127.0.0.1:" + std::to_string(probe_port)},
            .cgroup_subtree = root});
  ASSERT_TRUE(d.ok()) << d.error();
  ASSERT_EQ(Scrape(d.port(), 3, Millis(2000)).failed, 0);  // warm: the kept cgroup files are open
  const int idle_fds = CostOf(d.pid()).fds;

  std::vector<double> quiet_p50, quiet_max, flood_p50, flood_max;
  for (int round = 0; round < kRounds; ++round) {
    const ScrapeFigures quiet = Scrape(d.port(), 10, Millis(2000));
    ASSERT_EQ(quiet.failed, 0);
    ScrapeFigures flood;
    TimedResponse health;
    int held = 0, reconnects = 0;
    {
      SlotFlood attack(d.port(), kFlood, kPerAddress);
      // Every slot taken: the daemon holds an accepted connection per slot. (Counted by the
      // daemon's sockets on its port: its whole fd count also moves with collections.)
      ASSERT_TRUE(WaitFor([&] { return AcceptedConnections(d.pid(), d.port()) >= kSlots; }, std::chrono::seconds(20)))
          << "the flood never held every slot: " << AcceptedConnections(d.pid(), d.port()) << " of " << kSlots
          << " held, " << attack.reconnects() << " reconnects";
      flood = Scrape(d.port(), 10, Millis(2000));
      health = TimedGet(probe_port, "/healthz", "", Millis(2000));
      held = AcceptedConnections(d.pid(), d.port());
      reconnects = attack.reconnects();
    }
    std::printf(
        "figure: round %d: %d partial requests (%d per address) holding %d of %d slots: 10 scrapes p50 %.2f ms, "
        "max %.2f ms (quiet p50 %.2f ms, max %.2f ms), %d of 10 failed; %d reconnects\n",
        round + 1, kFlood, kPerAddress, held, kSlots, flood.p50_ms, flood.max_ms, quiet.p50_ms, quiet.max_ms,
        flood.failed, reconnects);
    EXPECT_EQ(flood.failed, 0) << "scrapes were refused or took over 2 s while partial requests held every slot";
    ASSERT_TRUE(health.response.has_value()) << "/healthz on the probe address unanswered";
    EXPECT_EQ(health.response->status, 200);
    quiet_p50.push_back(quiet.p50_ms);
    quiet_max.push_back(quiet.max_ms);
    flood_p50.push_back(flood.p50_ms);
    flood_max.push_back(flood.max_ms);
    // The flood's sockets are gone before the next quiet round.
    ASSERT_TRUE(WaitFor([&] { return AcceptedConnections(d.pid(), d.port()) == 0; }, std::chrono::seconds(10)));
    EXPECT_LE(CostOf(d.pid()).fds, idle_fds + 8) << "the flood's sockets outlived it";
  }
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  std::printf("figure: over %d rounds: scrape p50 %.2f ms flooded vs %.2f ms quiet, max %.2f vs %.2f ms (medians)\n",
              kRounds, median(flood_p50), median(quiet_p50), median(flood_max), median(quiet_max));
  EXPECT_LE(median(flood_p50), 2 * median(quiet_p50)) << "scrapes took over twice their quiet latency";
  EXPECT_LE(median(flood_max), 2 * median(quiet_max)) << "the slowest scrape took over twice the slowest quiet one";
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
