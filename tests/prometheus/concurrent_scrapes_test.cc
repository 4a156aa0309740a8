// 50 parallel scrapers for 10 s against the real Collector + Sampler over real cgroups:
// every response complete and well-formed, concurrent scrapes joined collections in flight.
#include <gtest/gtest.h>
#include <httplib.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <thread>

#include "collector/collector.h"
#include "collector/sampler.h"
#include "exporters/metrics_http_server.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"

namespace statlet::testing {
namespace {

// A minimal text-format 0.0.4 check: comments, or `name{labels} value` with a parseable value.
bool WellFormed(const std::string& body, std::string* why) {
  if (body.empty() || body.back() != '\n') {
    *why = "missing final newline";
    return false;
  }
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find('\n', pos);
    std::string_view line(body.data() + pos, end - pos);
    pos = end + 1;
    if (line.empty() || line[0] == '#') continue;
    size_t space = line.rfind(' ');
    if (space == std::string_view::npos) {
      *why = std::string(line);
      return false;
    }
    std::string value(line.substr(space + 1));
    char* stop = nullptr;
    std::strtod(value.c_str(), &stop);
    if (value.empty() || *stop != '\0') {
      *why = std::string(line);
      return false;
    }
    size_t brace = line.find('{');
    if (brace != std::string_view::npos && line[space - 1] != '}') {
      *why = std::string(line);
      return false;
    }
  }
  return true;
}

TEST(ConcurrentScrapes, FiftyScrapersForTenSeconds) {
  const std::string root = "/statlet-concurrency-" + std::to_string(::getpid());
  LiveCgroup top(root);
  std::vector<std::unique_ptr<LiveCgroup>> cgroups;
  std::vector<Child> sleepers;
  for (int i = 0; i < 20; ++i) {
    cgroups.push_back(std::make_unique<LiveCgroup>(root + "/c" + std::to_string(i)));
    ASSERT_TRUE(cgroups.back()->ok()) << cgroups.back()->error();
    sleepers.push_back(Child::Sleeper());
    ASSERT_TRUE(cgroups.back()->Add(sleepers.back().pid()));
  }

  CollectorOptions copts;
  copts.subtrees = {root};
  auto collector = Collector::Create(copts);
  ASSERT_TRUE(collector.ok()) << collector.status().ToString();
  SelfMetrics self("test", "test");
  Sampler sampler(std::move(*collector), nullptr, nullptr);
  sampler.SetCollectionObserver([&self](const Snapshot& s) { self.ObserveCollection(s); });
  HttpServerOptions hopts;
  hopts.listen_address = "127.0.0.1:0";
  auto server = MetricsHttpServer::Create(hopts, {}, &sampler, &self);
  ASSERT_TRUE(server.ok());
  ASSERT_TRUE((*server)->Start().ok());
  const int port = (*server)->port();

  std::atomic<uint64_t> ok{0}, bad{0}, transport{0};
  std::mutex why_mu;
  std::string first_problem;
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::vector<std::thread> scrapers;
  for (int t = 0; t < 50; ++t) {
    scrapers.emplace_back([&, t] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_keep_alive(t % 2 == 0);  // half reuse connections, half open one per scrape
      cli.set_read_timeout(30, 0);
      cli.set_decompress(true);
      httplib::Headers h;
      if (t % 3 == 0) h.emplace("Accept-Encoding", "gzip");
      while (std::chrono::steady_clock::now() < end) {
        auto r = cli.Get("/metrics", h);
        if (!r) {
          ++transport;
          continue;
        }
        std::string why;
        bool good = r->status == 200 && WellFormed(r->body, &why) &&
                    r->body.find("\nstatlet_build_info{") != std::string::npos &&
                    r->body.find("id=\"" + root + "/c19\"") != std::string::npos;
        if (good) {
          ++ok;
        } else {
          ++bad;
          std::lock_guard<std::mutex> lock(why_mu);
          if (first_problem.empty()) first_problem = "status " + std::to_string(r->status) + ": " + why;
        }
      }
    });
  }
  for (auto& s : scrapers) s.join();
  SamplerStats stats = sampler.stats();
  (*server)->Stop();
  sleepers.clear();  // killed and reaped

  EXPECT_EQ(bad.load(), 0u) << first_problem;
  EXPECT_EQ(transport.load(), 0u);
  EXPECT_GT(ok.load(), 50u);
  EXPECT_GT(stats.joins, 0u) << "concurrent scrapes should join collections in flight";
  EXPECT_LT(stats.collections, ok.load()) << "single-flight: fewer collections than scrapes";
  std::printf("scrapes=%llu collections=%llu joins=%llu encodes=%llu\n", (unsigned long long)ok.load(),
              (unsigned long long)stats.collections, (unsigned long long)stats.joins,
              (unsigned long long)(*server)->counters().encodes);
}

}  // namespace
}  // namespace statlet::testing
