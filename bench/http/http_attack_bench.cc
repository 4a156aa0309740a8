// Whole-process bench: the daemon's scrape latency with hostile connections open, as a
// ratio to its own latency without them, measured in the same run. For N real cgroups
// (kubelet layout, a sleeping process each) and each attack — connections that send
// nothing (idle), that trickle a header byte every 200 ms (slowloris), that idle after
// one answered request (keep-alive) — 8, 20 and 200 at a time: rounds alternate the
// quiet and the attacked side (which goes first alternates too); each side is the median
// of S scrapes on fresh connections. Prints the medians over rounds, the ratio's median
// and spread, and the scrapes that failed (no 200 within 5 s).
//
// usage: bench_http_attack [--cgroups N] [--rounds R] [--scrapes S]   (needs root)
// STATLET_TEST_BINARY=<older statlet> runs the same against another build.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/support/bench_tree.h"
#include "bench/support/read_floor.h"
#include "tests/support/http_client.h"
#include "tests/support/statlet_daemon.h"

namespace statlet::testing {
namespace {

enum class Attack { kIdle, kSlowloris, kKeepAlive };
const char* Name(Attack a) {
  return a == Attack::kIdle ? "idle" : a == Attack::kSlowloris ? "slowloris" : "keep-alive";
}

struct Side {
  double p50_ms = 0;
  int failed = 0;
};

Side Scrapes(int port, int n) {
  std::vector<double> ms;
  Side s;
  for (int i = 0; i < n; ++i) {
    TimedResponse r = TimedGet(port, "/metrics", "", Millis(5000));
    if (!r.response || r.response->status != 200) ++s.failed;
    ms.push_back(r.ms);
  }
  s.p50_ms = bench::Percentile(ms, 0.5);
  return s;
}

// Opens the attack's connections (20 per source address from 127.0.0.2 on) and keeps
// them going until destroyed.
class HostileConnections {
 public:
  HostileConnections(int port, Attack attack, int count) {
    for (int i = 0; i < count; ++i) {
      conns_.emplace_back(port, "127.0.0." + std::to_string(2 + i / 20));
      TcpConnection& c = conns_.back();
      if (!c.ok()) continue;
      if (attack == Attack::kKeepAlive) {
        if (c.Send(GetRequest("/healthz"))) c.ReadResponse(Millis(2000));
      } else if (attack == Attack::kSlowloris) {
        c.Send("GET /metrics HTTP/1.1\r\nHost: 127.0.0.1\r\n");
      }
    }
    if (attack == Attack::kSlowloris) {
      trickle_ = std::thread([this] {
        while (!stop_) {
          for (auto& c : conns_) {
            if (c.ok()) c.Send("X", Millis(10));
          }
          for (int i = 0; i < 20 && !stop_; ++i) std::this_thread::sleep_for(Millis(10));  // trickle pace
        }
      });
    }
  }
  ~HostileConnections() {
    stop_ = true;
    if (trickle_.joinable()) trickle_.join();
  }

 private:
  std::vector<TcpConnection> conns_;
  std::atomic<bool> stop_{false};
  std::thread trickle_;
};

int Flag(int argc, char** argv, const char* name, int def) {
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  }
  return def;
}

int Run(int argc, char** argv) {
  const int cgroups = Flag(argc, argv, "--cgroups", 200);
  const int rounds = Flag(argc, argv, "--rounds", 5);
  const int scrapes = Flag(argc, argv, "--scrapes", 15);
  const std::string root = "/statlet-bench-http-" + std::to_string(::getpid());
  bench::BenchTree tree(root, static_cast<size_t>(cgroups), bench::BenchTree::kKubelet);
  if (!tree.ok()) {
    std::fprintf(stderr, "cannot create cgroups (root needed): %s\n", tree.error().c_str());
    return 1;
  }
  DaemonOptions options;
  options.cgroup_subtree = root;
  Daemon d(options);
  if (!d.ok()) {
    std::fprintf(stderr, "%s\n", d.error().c_str());
    return 1;
  }
  std::printf("statlet %s over %d cgroups; %d rounds of %d scrapes per side\n", StatletBinary().c_str(), cgroups,
              rounds, scrapes);
  Scrapes(d.port(), 3);  // warm-up: kept fds opened, caches filled
  int worst_failed = 0;
  for (Attack attack : {Attack::kIdle, Attack::kSlowloris, Attack::kKeepAlive}) {
    for (int count : {8, 20, 200}) {
      std::vector<double> quiet, attacked, ratio;
      int failed = 0, total = 0;
      for (int r = 0; r < rounds; ++r) {
        Side q, a;
        auto quiet_side = [&] { q = Scrapes(d.port(), scrapes); };
        auto attacked_side = [&] {
          HostileConnections h(d.port(), attack, count);
          a = Scrapes(d.port(), scrapes);
        };
        if (r % 2 == 0) {
          quiet_side();
          attacked_side();
        } else {
          attacked_side();
          quiet_side();
        }
        quiet.push_back(q.p50_ms);
        attacked.push_back(a.p50_ms);
        ratio.push_back(a.p50_ms / q.p50_ms);
        failed += a.failed + q.failed;
        total += 2 * scrapes;
      }
      std::printf("%-10s %3d: scrape p50 quiet %7.2f ms, attacked %7.2f ms, ratio %6.2f [%.2f..%.2f], failed %d/%d\n",
                  Name(attack), count, bench::Percentile(quiet, 0.5), bench::Percentile(attacked, 0.5),
                  bench::Percentile(ratio, 0.5), *std::min_element(ratio.begin(), ratio.end()),
                  *std::max_element(ratio.begin(), ratio.end()), failed, total);
      std::fflush(stdout);
      worst_failed = std::max(worst_failed, failed);
    }
  }
  return worst_failed == 0 ? 0 : 2;
}

}  // namespace
}  // namespace statlet::testing

int main(int argc, char** argv) { return statlet::testing::Run(argc, argv); }
