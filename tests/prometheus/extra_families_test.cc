// The HTTP server's hooks for families and routes that are not the snapshot's (image pulls
// use them): extra families follow the snapshot's in both formats, before OpenMetrics'
// "# EOF", also gzipped; the snapshot's part is encoded once per snapshot while the extra
// families are rendered for every scrape; extra routes answer what their handler gives.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>

#include "exporters/gzip_compressor.h"
#include "exporters/metrics_http_server.h"
#include "tests/support/fixed_snapshot_source.h"
#include "tests/support/snapshot_builder.h"

namespace statlet {
namespace {

class CountingFamilies : public metrics::ExtraSource {
 public:
  void Collect(std::vector<metrics::ExtraFamily>* out) const override {
    metrics::ExtraFamily things;
    things.name = "statlet_test_things_total";
    things.type = metrics::ExtraType::kCounter;
    things.help = "Things \"counted\".";
    things.series.push_back({{}, metrics::Value::Count(generation), {}, {}});
    out->push_back(std::move(things));
    metrics::ExtraFamily size;
    size.name = "statlet_test_size_bytes";
    size.help = "A size.";
    size.unit = "bytes";
    size.series.push_back({{}, metrics::Value::Count(7), {}, {}});
    out->push_back(std::move(size));
  }
  std::atomic<uint64_t> generation{1};
};

struct Served {
  testing::FixedSnapshotSource source{testing::MakeNodeSnapshot({})};
  CountingFamilies extra;
  std::unique_ptr<MetricsHttpServer> server;
  std::unique_ptr<httplib::Client> client;
  Served() {
    HttpServerOptions o;
    o.listen_address = "127.0.0.1:0";
    auto created = MetricsHttpServer::Create(o, {}, &source);
    EXPECT_TRUE(created.ok());
    server = std::move(*created);
    server->AddFamilies(&extra);
    server->AddRoute("/thing", [] { return MetricsHttpServer::RouteBody{200, "application/json", "{\"a\":1}"}; });
    EXPECT_TRUE(server->Start().ok());
    client = std::make_unique<httplib::Client>("127.0.0.1", server->port());
    client->set_decompress(false);
  }
};

TEST(ExtraFamilies, FollowTheSnapshotsFamiliesInTextFormat) {
  Served s;
  auto r = s.client->Get("/metrics");
  ASSERT_TRUE(r);
  const std::string& b = r->body;
  size_t snap = b.find("# TYPE container_cpu_usage_seconds_total counter\n");
  size_t extra = b.find(
      "# HELP statlet_test_things_total Things \"counted\".\n# TYPE statlet_test_things_total counter\n"
      "statlet_test_things_total 1\n");
  ASSERT_NE(snap, std::string::npos);
  ASSERT_NE(extra, std::string::npos) << b.substr(b.size() > 400 ? b.size() - 400 : 0);
  EXPECT_LT(snap, extra);
}

TEST(ExtraFamilies, GoBeforeTheOpenMetricsEofAndIntoGzip) {
  Served s;
  auto r = s.client->Get("/metrics", {{"Accept", "application/openmetrics-text;version=1.0.0"}});
  ASSERT_TRUE(r);
  const std::string& b = r->body;
  EXPECT_EQ(b.substr(b.size() - 6), "# EOF\n");
  EXPECT_EQ(b.find("# EOF"), b.size() - 6) << "one EOF, at the end";
  EXPECT_NE(b.find("# TYPE statlet_test_things counter\n# HELP statlet_test_things Things \\\"counted\\\".\n"
                   "statlet_test_things_total 1\n"),
            std::string::npos);
  EXPECT_NE(b.find("# TYPE statlet_test_size_bytes gauge\n# UNIT statlet_test_size_bytes bytes\n"), std::string::npos);
  auto gz = s.client->Get("/metrics",
                          {{"Accept", "application/openmetrics-text;version=1.0.0"}, {"Accept-Encoding", "gzip"}});
  ASSERT_TRUE(gz);
  auto inflated = GunzipForTest(gz->body);
  ASSERT_TRUE(inflated.ok());
  EXPECT_TRUE(*inflated == b);
}

TEST(ExtraFamilies, AreFreshOnEveryScrapeWhileTheSnapshotPartIsEncodedOnce) {
  Served s;
  ASSERT_TRUE(s.client->Get("/metrics"));
  s.extra.generation = 2;
  auto r = s.client->Get("/metrics");
  ASSERT_TRUE(r);
  EXPECT_EQ(s.server->counters().encodes, 1u) << "same snapshot: its families are reused";
  EXPECT_NE(r->body.find("statlet_test_things_total 2\n"), std::string::npos);
}

TEST(ExtraFamilies, ExtraRoutesAnswerTheirHandlers) {
  Served s;
  auto r = s.client->Get("/thing");
  ASSERT_TRUE(r);
  EXPECT_EQ(r->status, 200);
  EXPECT_EQ(r->get_header_value("Content-Type"), "application/json");
  EXPECT_EQ(r->body, "{\"a\":1}");
}

}  // namespace
}  // namespace statlet
