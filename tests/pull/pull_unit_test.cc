// The pure parts of image pulls: reference normalization, report schedules, the layer
// tracker, manifest matching and parsing, and the progress display of `statlet pull`.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cmd/pull_display.h"
#include "pulls/containerd_content.h"
#include "pulls/image_name.h"
#include "pulls/layer_tracker.h"
#include "pulls/manifest_match.h"
#include "pulls/node_pulls.h"
#include "pulls/report_schedule.h"

namespace statlet::pulls {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

const std::string kA = "sha256:" + std::string(64, 'a');
const std::string kB = "sha256:" + std::string(64, 'b');
const std::string kC = "sha256:" + std::string(64, 'c');

TEST(ImageName, NormalizesAsTheRuntimeDoes) {
  struct Case {
    const char* in;
    const char* out;
  } cases[] = {
      {"busybox", "docker.io/library/busybox:latest"},
      {"busybox:1.36", "docker.io/library/busybox:1.36"},
      {"library/busybox", "docker.io/library/busybox:latest"},
      {"docker.io/busybox", "docker.io/library/busybox:latest"},
      {"index.docker.io/library/busybox:1", "docker.io/library/busybox:1"},
      {"user/app", "docker.io/user/app:latest"},
      {"127.0.0.1:5000/statlet/big:1", "127.0.0.1:5000/statlet/big:1"},
      {"localhost/a", "localhost/a:latest"},
      {"registry.k8s.io/e2e-test-images/busybox:1.29-2", "registry.k8s.io/e2e-test-images/busybox:1.29-2"},
      {"a/b__c/d-e.f:tag_1.x-y", "docker.io/a/b__c/d-e.f:tag_1.x-y"},
  };
  for (const auto& c : cases) {
    auto n = ParseImageName(c.in);
    ASSERT_TRUE(n.ok()) << c.in << ": " << n.status().ToString();
    EXPECT_EQ(n->Normalized(), c.out) << c.in;
  }
  auto pinned = ParseImageName("quay.io/a/b:1@" + kA);
  ASSERT_TRUE(pinned.ok());
  EXPECT_EQ(pinned->Normalized(), "quay.io/a/b@" + kA) << "a digest wins over the tag, as in containerd";
  EXPECT_EQ(pinned->Hostname(), "quay.io");
  EXPECT_EQ(ParseImageName("127.0.0.1:5000/x")->Hostname(), "127.0.0.1");
  EXPECT_EQ(ParseImageName("127.0.0.1:5000/x")->path, "x");
}

TEST(ImageName, RejectsWhatTheRuntimeRejects) {
  for (const std::string& bad : std::vector<std::string>{
           std::string(""), std::string("a/Upper"), std::string("Upper"), std::string("a//b"), std::string("a/b:"),
           std::string("a/b:-x"), std::string("a/b@sha256:12"), std::string("a/b@md5:" + std::string(32, 'a')),
           std::string("/a"), std::string("a/"), std::string("a..b"), std::string("a/b c"), std::string(300, 'a'),
           std::string(250, 'a'), std::string("a:" + std::string(129, 't')), std::string("-a"), std::string("a_")}) {
    EXPECT_FALSE(ParseImageName(bad).ok()) << bad;
  }
}

TEST(ReportPolicy, DefaultsAndMinimumsOfTheKep) {
  auto t = MakeReportPolicy(Granularity::kTime, std::nullopt, false);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->every, seconds(60));
  EXPECT_EQ(MakeReportPolicy(Granularity::kTime, 0, false)->every, seconds(60));
  EXPECT_EQ(MakeReportPolicy(Granularity::kTime, 1, false)->every, seconds(1));
  EXPECT_FALSE(MakeReportPolicy(Granularity::kTime, kMaxTimeIntervalSeconds + 1, false).ok());
  EXPECT_EQ(MakeReportPolicy(Granularity::kSize, 0, false)->every_bytes, uint64_t{1} << 30);
  EXPECT_EQ(MakeReportPolicy(Granularity::kSize, 1 << 20, false)->every_bytes, uint64_t{1} << 20);
  EXPECT_FALSE(MakeReportPolicy(Granularity::kSize, (1 << 20) - 1, false).ok());
  EXPECT_TRUE(MakeReportPolicy(Granularity::kNone, 5, true)->detailed);
}

TEST(ReportScheduler, TimeReportsStayOnTheirGrid) {
  ReportScheduler s(*MakeReportPolicy(Granularity::kTime, 1, false));
  PullView v;
  const auto t0 = Clock::now();
  ASSERT_TRUE(s.Due(v, t0));
  s.Reported(v, t0);
  EXPECT_FALSE(s.Due(v, t0 + milliseconds(999)));
  ASSERT_TRUE(s.Due(v, t0 + milliseconds(1240)));  // a poll late
  s.Reported(v, t0 + milliseconds(1240));
  EXPECT_FALSE(s.Due(v, t0 + milliseconds(1990)));
  EXPECT_TRUE(s.Due(v, t0 + milliseconds(2000))) << "the next one is due at 2 s, not 2.24 s";
  s.Reported(v, t0 + milliseconds(5500));  // a stall: missed due times are skipped, not queued
  EXPECT_FALSE(s.Due(v, t0 + milliseconds(5900)));
  EXPECT_TRUE(s.Due(v, t0 + milliseconds(6000)));
}

TEST(ReportScheduler, SizeReportsFollowTheBytes) {
  ReportScheduler s(*MakeReportPolicy(Granularity::kSize, 8 << 20, false));
  PullView v;
  const auto t = Clock::now();
  ASSERT_TRUE(s.Due(v, t));
  s.Reported(v, t);
  v.offset = (8 << 20) - 1;
  EXPECT_FALSE(s.Due(v, t + seconds(100)));
  v.offset = (8 << 20) + 5;
  ASSERT_TRUE(s.Due(v, t));
  s.Reported(v, t);
  v.offset = (16 << 20);
  EXPECT_FALSE(s.Due(v, t)) << "8 MiB after the last report, not after the last multiple";
  v.offset = (16 << 20) + 5;
  EXPECT_TRUE(s.Due(v, t));
}

TEST(ReportScheduler, TheTotalIsReportedAsSoonAsItIsKnown) {
  for (Granularity g : {Granularity::kTime, Granularity::kSize}) {
    ReportScheduler s(*MakeReportPolicy(g, g == Granularity::kTime ? 10 : 1 << 30, false));
    PullView v;
    const auto t0 = Clock::now();
    s.Reported(v, t0);
    EXPECT_FALSE(s.Due(v, t0 + milliseconds(100)));
    v.total = 1000;
    ASSERT_TRUE(s.Due(v, t0 + milliseconds(100)));
    s.Reported(v, t0 + milliseconds(100));
    EXPECT_FALSE(s.Due(v, t0 + milliseconds(200))) << "once";
    if (g == Granularity::kTime) {
      EXPECT_TRUE(s.Due(v, t0 + seconds(10))) << "the grid stays anchored at the first report";
    }
  }
}

TEST(ReportScheduler, NoneReportsOnlyTheStart) {
  ReportScheduler s(*MakeReportPolicy(Granularity::kNone, 0, false));
  PullView v;
  const auto t = Clock::now();
  ASSERT_TRUE(s.Due(v, t));
  s.Reported(v, t);
  v.offset = 1 << 30;
  v.total = 2 << 30;
  EXPECT_FALSE(s.Due(v, t + seconds(3600)));
}

Manifest TwoLayers() {
  Manifest m;
  m.digest = kC;
  m.config_digest = "sha256:" + std::string(64, 'f');
  m.layers = {{kA, 1000}, {kB, 10000}};
  return m;
}

TEST(LayerTracker, OffsetsRiseToTheManifestTotal) {
  const auto t0 = Clock::now();
  const int64_t start_ns = 1'000'000'000'000;
  LayerTracker tr(t0, start_ns);
  PullView v;
  tr.Fill(&v);
  EXPECT_FALSE(v.total.has_value()) << "no total before the manifest";
  tr.SetManifest(TwoLayers());
  EXPECT_EQ(tr.Unfinished(), (std::vector<std::string>{kA, kB}));
  // The small layer was there before the pull; the big one is being written.
  BlobInfo old{kA, 1000, start_ns - 5'000'000'000, {}};
  EXPECT_TRUE(tr.Observe(t0 + milliseconds(250), {{kB, 4000, 10000}}, {old}));
  tr.Fill(&v);
  EXPECT_EQ(*v.total, 11000u);
  EXPECT_EQ(v.offset, 5000u);
  EXPECT_EQ(v.layers[0].stage, LayerStage::kPresent);
  EXPECT_EQ(v.layers[1].stage, LayerStage::kDownloading);
  EXPECT_EQ(v.last_progress, t0 + milliseconds(250));
  // Nothing moved: no progress, the last progress time stays.
  EXPECT_FALSE(tr.Observe(t0 + milliseconds(500), {{kB, 4000, 10000}}, {}));
  // The ingest restarted from 0 (a resumed download): bytes moved, the report keeps 4000.
  EXPECT_TRUE(tr.Observe(t0 + milliseconds(750), {{kB, 100, 10000}}, {}));
  tr.Fill(&v);
  EXPECT_EQ(v.layers[1].offset, 4000u);
  EXPECT_EQ(v.last_progress, t0 + milliseconds(750));
  // Between the ingest closing and the commit showing: unchanged, still downloading.
  EXPECT_FALSE(tr.Observe(t0 + milliseconds(1000), {}, {}));
  tr.Fill(&v);
  EXPECT_EQ(v.layers[1].stage, LayerStage::kDownloading);
  EXPECT_FALSE(tr.all_done());
  BlobInfo fresh{kB, 10000, start_ns + 900'000'000, {}};
  EXPECT_TRUE(tr.Observe(t0 + milliseconds(1250), {}, {fresh}));
  tr.Fill(&v);
  EXPECT_EQ(v.offset, 11000u);
  EXPECT_EQ(v.layers[1].stage, LayerStage::kDownloaded);
  EXPECT_TRUE(tr.all_done());
  EXPECT_TRUE(tr.Unfinished().empty());
}

TEST(LayerTracker, RateAndEtaFromThePolls) {
  const auto t0 = Clock::now();
  LayerTracker tr(t0, 0);
  tr.SetManifest(TwoLayers());
  tr.Observe(t0 + seconds(1), {{kA, 0, 1000}, {kB, 0, 10000}}, {});
  tr.Observe(t0 + seconds(2), {{kA, 1000, 1000}, {kB, 1000, 10000}}, {});
  PullView v;
  tr.Fill(&v);
  EXPECT_DOUBLE_EQ(v.bytes_per_second, 2000.0);
  ASSERT_TRUE(v.eta_seconds.has_value());
  EXPECT_DOUBLE_EQ(*v.eta_seconds, 9000.0 / 2000.0);
}

TEST(LayerTracker, CompleteMarksTheRestDone) {
  LayerTracker tr(Clock::now(), 0);
  tr.SetManifest(TwoLayers());
  tr.Complete(Clock::now());
  PullView v;
  tr.Fill(&v);
  EXPECT_EQ(v.offset, *v.total);
  EXPECT_TRUE(tr.all_done());
}

BlobInfo Candidate(const std::string& digest, int64_t created, std::vector<std::string> layers) {
  BlobInfo b{digest, 500, created, {}};
  b.labels[kConfigLabel] = "sha256:" + std::string(64, 'e');
  b.labels[std::string(kSourceLabelPrefix) + "127.0.0.1"] = "other,statlet/big";
  for (size_t i = 0; i < layers.size(); ++i) b.labels[kLayerLabelPrefix + std::to_string(i)] = layers[i];
  return b;
}

TEST(PickManifest, PrefersThePinnedThenTheNewThenTheDownloading) {
  auto img = *ParseImageName("127.0.0.1:5000/statlet/big:1");
  const int64_t start = 100'000'000'000;
  std::vector<BlobInfo> c = {Candidate(kA, start - 50'000'000'000, {kB}), Candidate(kB, start + 10, {kC}),
                             Candidate(kC, start - 60'000'000'000, {kA, kB})};
  EXPECT_EQ(PickManifest(c, img, start, {}), std::optional<size_t>(1)) << "committed since the pull started";
  EXPECT_EQ(PickManifest(c, *ParseImageName("127.0.0.1:5000/statlet/big@" + kC), start, {}), std::optional<size_t>(2));
  c.erase(c.begin() + 1);
  EXPECT_EQ(PickManifest(c, img, start, {kA, kB}), std::optional<size_t>(1)) << "most of its layers downloading";
  EXPECT_EQ(PickManifest(c, img, start, {}), std::nullopt) << "nothing tells: wait";
  EXPECT_EQ(LabelledLayers(c[1]), (std::vector<std::string>{kA, kB}));
  EXPECT_EQ(PickByConfig(c, img), std::optional<size_t>(0));
}

TEST(ManifestFilter, QuotesTheRepositoryForContainerdsFilterSyntax) {
  EXPECT_EQ(ManifestSourceFilter(*ParseImageName("my.reg:5000/a.b/c:1")),
            "labels.\"containerd.io/distribution.source.my.reg\"~=\"(^|,)a[.]b/c(,|$)\","
            "labels.\"containerd.io/gc.ref.content.config\"");
}

TEST(ParseManifest, ReadsOciAndDockerManifestsAndRefusesTheRest) {
  const std::string oci = R"({"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",
    "config":{"digest":")" +
                          kC + R"(","size":3},"layers":[{"digest":")" + kA + R"(","size":12345678901}]})";
  auto m = ParseManifest(kB, oci);
  ASSERT_TRUE(m.ok()) << m.status().ToString();
  EXPECT_EQ(m->config_digest, kC);
  ASSERT_EQ(m->layers.size(), 1u);
  EXPECT_EQ(m->layers[0].size, 12345678901u);
  EXPECT_TRUE(ParseManifest(kB, R"({"config":{"digest":")" + kC + R"("},"layers":[]})").ok()) << "no media type";
  for (const std::string& bad : std::vector<std::string>{
           std::string("{"), std::string("[]"),
           std::string(R"({"mediaType":"application/vnd.oci.image.index.v1+json","manifests":[]})"),
           R"({"config":{"digest":")" + kC + R"("},"layers":[{"digest":"x","size":1}]})",
           R"({"config":{"digest":")" + kC + R"("},"layers":[{"digest":")" + kA + R"(","size":-1}]})",
           std::string(R"({"config":{},"layers":[]})")}) {
    EXPECT_FALSE(ParseManifest(kB, bad).ok()) << bad;
  }
}

TEST(DescribeUnfinishedLayers, NamesWhatHasNotArrived) {
  PullView v;
  EXPECT_EQ(DescribeUnfinishedLayers(v), "the image's manifest has not arrived");
  v.total = 3 << 20;
  v.layers = {{kA, 1 << 20, 1 << 20, LayerStage::kPresent},
              {kB, 2 << 20, 1 << 20, LayerStage::kDownloading},
              {kC, 5, 0, LayerStage::kWaiting}};
  EXPECT_EQ(DescribeUnfinishedLayers(v), "layer " + kB + " at 1.0 MiB of 2.0 MiB; layer " + kC + " not started (5 B)");
}

TEST(NodePullsJson, NamesThePodsAndEachLayer) {
  auto v = std::make_shared<PullView>();
  v->image = "docker.io/library/busybox:latest";
  v->phase = PullPhase::kDownloading;
  v->total = (3 << 20) + 5;
  v->offset = 2 << 20;
  v->layers = {{kA, 1 << 20, 1 << 20, LayerStage::kPresent},
               {kB, 2 << 20, 1 << 20, LayerStage::kDownloading},
               {kC, 5, 0, LayerStage::kWaiting}};
  v->pods = {{"shop", "web-0", "0c1d"}, {"shop", "web-1", ""}};
  auto plain = std::make_shared<PullView>(*v);
  plain->pods.clear();
  auto doc = nlohmann::json::parse(NodePullsJson({"node-a", seconds(5)}, {v, plain}, 0));
  const auto& e = doc["status"]["images"][0];
  ASSERT_EQ(e["pods"].size(), 2u);
  EXPECT_EQ(e["pods"][0], nlohmann::json({{"namespace", "shop"}, {"name", "web-0"}, {"uid", "0c1d"}}));
  EXPECT_EQ(e["pods"][1]["name"], "web-1");
  ASSERT_EQ(e["layers"].size(), 3u);
  EXPECT_EQ(e["layers"][0],
            nlohmann::json({{"digest", kA}, {"state", "exists"}, {"bytesDone", 1 << 20}, {"bytesTotal", 1 << 20}}));
  EXPECT_EQ(e["layers"][1]["state"], "downloading");
  EXPECT_EQ(e["layers"][1]["bytesDone"], 1 << 20);
  EXPECT_EQ(e["layers"][2]["state"], "waiting");
  EXPECT_FALSE(doc["status"]["images"][1].contains("pods")) << "no pod: no empty list";
}

}  // namespace
}  // namespace statlet::pulls

namespace statlet {
namespace {

TEST(PullDisplay, PlainLinesWithoutControlCodes) {
  PullDisplay d("img:1", /*terminal=*/false);
  PullReport r;
  EXPECT_EQ(d.Update(r, 0.0), "0.0s img:1 resolving\n");
  r.total = 2 << 20;
  r.offset = 1 << 20;
  r.layers = {{"sha256:" + std::string(64, 'a'), 1 << 20, 1 << 20, "done"},
              {"sha256:" + std::string(64, 'b'), 0, 1 << 20, "downloading"}};
  std::string s = d.Update(r, 1.0);
  EXPECT_EQ(s, "1.0s img:1 1.0 MiB/2.0 MiB 50% 1.0 MiB/s ETA 1s\n1.0s layer sha256:" + std::string(64, 'a') +
                   " done 1.0 MiB\n");
  EXPECT_EQ(s.find('\033'), std::string::npos);
  // A layer's line is printed once, when it finishes.
  EXPECT_EQ(d.Update(r, 2.0).find("layer"), std::string::npos);
  EXPECT_EQ(d.Done("sha256:x", 2.5), "done: sha256:x (2.5s)\n");
}

TEST(PullDisplay, TerminalRowsAreRedrawnInPlace) {
  PullDisplay d("img:1", /*terminal=*/true);
  PullReport r;
  r.total = 100;
  r.layers = {{"sha256:" + std::string(64, 'a'), 25, 100, "downloading"}};
  r.offset = 25;
  std::string first = d.Update(r, 1.0);
  EXPECT_EQ(first.find("\033[3A"), std::string::npos) << "nothing to go back over";
  EXPECT_NE(first.find("sha256:aaaaaaaaaaaa: downloading  |++++++++++------------------------------|"),
            std::string::npos)
      << first;
  r.offset = r.layers[0].offset = 50;
  std::string second = d.Update(r, 2.0);
  EXPECT_EQ(second.rfind("\033[3A\r", 0), 0u) << "back over the 3 rows drawn";
  EXPECT_NE(second.find("|++++++++++++++++++++--------------------|"), std::string::npos) << second;
  EXPECT_EQ(PullBar(0, 0), "|" + std::string(40, '-') + "|");
  EXPECT_EQ(PullBar(200, 100), "|" + std::string(40, '+') + "|");
  EXPECT_EQ(PullBytes(1536), "1.5 KiB");
}

}  // namespace
}  // namespace statlet
