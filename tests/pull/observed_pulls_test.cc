// ObservedPulls' rules with a scripted containerd namespace (the e2e suite runs them against
// a real containerd and `ctr`): a lease holding an ingest is one pull, its manifest names
// it and sizes its layers, bytes grow, no progress for the timeout is Stalled and bytes
// moving again leave it, the lease going away ends it with the image store's answer, a pull
// statlet carries is left out, and an idle namespace costs one call. Polls are made by hand
// on a clock the test moves.
#include <algorithm>
#include <map>

#include <gtest/gtest.h>

#include "pulls/observed_pulls.h"
#include "tests/pull/scripted_digests.h"
#include "tests/support/manual_clock.h"

namespace statlet::pulls {
namespace {

using std::chrono::seconds;

using scripted::kConfig;
using scripted::kManifest;
const std::string& kLayerA = scripted::kLayer;
const std::string& kLayerB = scripted::kOtherLayer;
constexpr int64_t kLeaseCreated = 1000000000000;

// One namespace's leases, ingests, blobs and images, as the test sets them; it counts calls.
class ScriptedNamespace final : public ObservedSource {
 public:
  explicit ScriptedNamespace(std::string ns) : ObservedSource(std::move(ns)) {}
  StatusOr<std::vector<IngestStatus>> Ingests() override {
    ++calls;
    if (down) return Unavailable("scripted outage");
    return ingests;
  }
  StatusOr<std::vector<LeaseInfo>> Leases() override {
    ++calls;
    return leases;
  }
  StatusOr<std::vector<LeaseResource>> LeaseResources(const std::string& id) override {
    ++calls;
    ++resource_calls;
    auto it = resources.find(id);
    if (it == resources.end()) return NotFound("no lease " + id);
    return it->second;
  }
  StatusOr<std::vector<BlobInfo>> Committed(const std::vector<std::string>& digests) override {
    ++calls;
    std::vector<BlobInfo> out;
    for (const auto& d : digests) {
      auto it = blobs.find(d);
      if (it != blobs.end()) out.push_back(it->second);
    }
    return out;
  }
  StatusOr<Manifest> ReadManifest(const std::string& digest) override {
    ++calls;
    if (digest != kManifest) return NotFound(digest);
    return Manifest{kManifest, kConfig, {{kLayerA, 1000}, {kLayerB, 500}}};
  }
  StatusOr<std::vector<ImageRecord>> ImagesWithTarget(const std::vector<std::string>& digests) override {
    ++calls;
    std::vector<ImageRecord> out;
    for (const auto& i : images) {
      if (std::find(digests.begin(), digests.end(), i.target_digest) != digests.end()) out.push_back(i);
    }
    return out;
  }

  // A pull under lease "L" whose manifest is committed and whose layer A is being written.
  void StartPull(uint64_t offset) {
    leases = {{"L", kLeaseCreated}};
    BlobInfo m{kManifest, 300, kLeaseCreated + 1, {}};
    m.labels[kConfigLabel] = kConfig;
    m.labels[std::string(kSourceLabelPrefix) + "registry.example"] = "team/app";
    blobs[kManifest] = m;
    resources["L"] = {{kManifest, "content"}, {"layer-" + kLayerA, "ingests"}};
    ingests = {{"layer-" + kLayerA, offset, 1000, kLeaseCreated, kLeaseCreated}};
  }
  void Commit(const std::string& layer, uint64_t size) {
    blobs[layer] = BlobInfo{layer, size, kLeaseCreated + 5, {}};
    std::erase_if(ingests, [&](const IngestStatus& i) { return i.ref == "layer-" + layer; });
  }

  int calls = 0;
  int resource_calls = 0;
  bool down = false;
  std::vector<IngestStatus> ingests;
  std::vector<LeaseInfo> leases;
  std::map<std::string, std::vector<LeaseResource>> resources;
  std::map<std::string, BlobInfo> blobs;
  std::vector<ImageRecord> images;
};

struct Bed {
  explicit Bed(seconds timeout = seconds(0)) {
    auto ns = std::make_unique<ScriptedNamespace>("k8s.io");
    space = ns.get();
    std::vector<std::unique_ptr<ObservedSource>> sources;
    sources.push_back(std::move(ns));
    ObservedPullsOptions o;
    o.no_progress_timeout = timeout;
    o.now = clock.Fn();
    o.unix_now = [] { return kLeaseCreated + 10; };
    observed = std::make_unique<ObservedPulls>(o, std::move(sources));
  }
  PullViewPtr Only() {
    auto p = observed->Pulls();
    return p.size() == 1 ? p[0] : nullptr;
  }
  testing::ManualClock clock;
  ScriptedNamespace* space;
  std::unique_ptr<ObservedPulls> observed;
};

TEST(ObservedPulls, AnIdleNamespaceCostsOneCallPerPoll) {
  Bed b;
  for (int i = 0; i < 5; ++i) EXPECT_FALSE(b.observed->Poll({}).busy);
  EXPECT_EQ(b.space->calls, 5);
  EXPECT_TRUE(b.observed->Pulls().empty());
}

TEST(ObservedPulls, ALeaseWithAnIngestIsOnePullNamedByItsManifest) {
  Bed b;
  b.space->StartPull(100);
  EXPECT_TRUE(b.observed->Poll({}).busy);
  auto v = b.Only();
  ASSERT_NE(v, nullptr);
  EXPECT_TRUE(v->observed);
  EXPECT_EQ(v->containerd_namespace, "k8s.io");
  EXPECT_EQ(v->image, "registry.example/team/app@" + kManifest);
  EXPECT_EQ(v->phase, PullPhase::kDownloading);
  ASSERT_EQ(v->layers.size(), 2u);
  EXPECT_EQ(v->layers[0].stage, LayerStage::kDownloading);
  EXPECT_EQ(v->layers[0].offset, 100u);
  EXPECT_EQ(v->layers[1].stage, LayerStage::kWaiting);
  EXPECT_EQ(v->total, 1500u);
  EXPECT_EQ(v->started_unix_ns, kLeaseCreated);
  EXPECT_EQ(v->finished_unix_ns, 0);

  b.space->ingests[0].offset = 700;
  b.observed->Poll({});
  EXPECT_EQ(b.Only()->offset, 700u);
  b.space->Commit(kLayerA, 1000);
  b.space->resources["L"].push_back({"layer-" + kLayerB, "ingests"});
  b.space->ingests.push_back({"layer-" + kLayerB, 50, 500, kLeaseCreated, kLeaseCreated});
  b.observed->Poll({});
  v = b.Only();
  EXPECT_EQ(v->layers[0].stage, LayerStage::kDownloaded);
  EXPECT_EQ(v->offset, 1050u);

  // The client's Pull returned: lease gone, image record there.
  b.space->Commit(kLayerB, 500);
  b.space->leases.clear();
  b.space->resources.clear();
  b.space->images = {{"registry.example:5000/team/app:1", kManifest}, {"sha256:" + std::string(64, 'c'), kManifest}};
  b.observed->Poll({});
  v = b.Only();
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->phase, PullPhase::kSucceeded);
  EXPECT_EQ(v->image, "registry.example:5000/team/app:1");
  EXPECT_EQ(v->image_ref, kConfig);
  EXPECT_EQ(v->offset, 1500u);
  EXPECT_NE(v->finished_unix_ns, 0);
  EXPECT_EQ(b.observed->counters().succeeded, 1u);
  EXPECT_FALSE(b.observed->Poll({}).busy);  // idle again
}

TEST(ObservedPulls, NoProgressForTheTimeoutIsStalledUntilBytesMoveAgain) {
  Bed b(seconds(10));
  b.space->StartPull(100);
  b.observed->Poll({});
  b.clock.Advance(seconds(9));
  b.observed->Poll({});
  EXPECT_EQ(b.Only()->phase, PullPhase::kDownloading);  // up to its last instant
  b.clock.Advance(seconds(1));
  b.observed->Poll({});
  auto v = b.Only();
  EXPECT_EQ(v->phase, PullPhase::kStalled);
  EXPECT_TRUE(InFlight(*v));
  EXPECT_NE(v->reason.find("cannot cancel"), std::string::npos) << v->reason;
  EXPECT_EQ(b.observed->counters().stalls, 1u);
  b.clock.Advance(seconds(30));
  b.observed->Poll({});
  EXPECT_EQ(b.observed->counters().stalls, 1u);  // one episode, counted once

  b.space->ingests[0].offset = 200;
  b.observed->Poll({});
  EXPECT_EQ(b.Only()->phase, PullPhase::kDownloading);
  EXPECT_TRUE(b.Only()->reason.empty());
}

TEST(ObservedPulls, ALeaseGoneWithoutAnImageIsAFailure) {
  Bed b(seconds(5));
  b.space->StartPull(100);
  b.observed->Poll({});
  b.clock.Advance(seconds(6));
  b.observed->Poll({});
  b.space->leases.clear();
  b.observed->Poll({});
  auto v = b.Only();
  ASSERT_NE(v, nullptr);
  EXPECT_EQ(v->phase, PullPhase::kStalled);
  EXPECT_FALSE(InFlight(*v));
  EXPECT_NE(v->reason.find("without an image"), std::string::npos);
  EXPECT_EQ(b.observed->counters().failed, 1u);
}

TEST(ObservedPulls, APullStatletCarriesIsLeftOut) {
  Bed b;
  b.space->StartPull(100);
  // By manifest, in the runtime's namespace.
  b.observed->Poll({{"k8s.io", kManifest, "other/repo"}});
  EXPECT_TRUE(b.observed->Pulls().empty());
  // Once carried, always: the engine's pull may finish before the lease goes.
  b.observed->Poll({});
  EXPECT_TRUE(b.observed->Pulls().empty());
  b.space->leases.clear();
  b.observed->Poll({});
  EXPECT_TRUE(b.observed->Pulls().empty());
}

TEST(ObservedPulls, APullOfTheSameRepositoryWithoutAManifestYetIsLeftOut) {
  Bed b;
  b.space->StartPull(100);
  b.observed->Poll({{"k8s.io", "", "registry.example/team/app"}});
  EXPECT_TRUE(b.observed->Pulls().empty());
  // The engine's pull turned out to have another manifest: this one is not it.
  b.observed->Poll({{"k8s.io", "sha256:" + std::string(64, 'e'), "registry.example/team/app"}});
  EXPECT_NE(b.Only(), nullptr);
}

TEST(ObservedPulls, ACarriedPullInAnotherNamespaceDoesNotHideThisOne) {
  Bed b;
  b.space->StartPull(100);
  b.observed->Poll({{"default", kManifest, "registry.example/team/app"}});
  EXPECT_NE(b.Only(), nullptr);
}

TEST(ObservedPulls, LeasesWithoutIngestsAreNotPullsAndAreScannedOnce) {
  Bed b;
  b.space->leases = {{"gc", kLeaseCreated}};
  b.space->resources["gc"] = {};
  b.space->ingests = {{"layer-" + kLayerA, 1, 10, kLeaseCreated, kLeaseCreated}};  // in no lease
  b.observed->Poll({});
  b.observed->Poll({});
  b.observed->Poll({});
  EXPECT_EQ(b.space->resource_calls, 1);
  EXPECT_TRUE(b.observed->Pulls().empty());
}

TEST(ObservedPulls, AnUnansweringNamespaceKeepsItsPullsAndRecovers) {
  Bed b(seconds(5));
  b.space->StartPull(100);
  b.observed->Poll({});
  b.space->down = true;
  EXPECT_TRUE(b.observed->Poll({}).busy);
  EXPECT_EQ(b.observed->counters().errors, 1u);
  ASSERT_NE(b.Only(), nullptr);
  EXPECT_EQ(b.Only()->phase, PullPhase::kDownloading);
  b.space->down = false;
  b.space->ingests[0].offset = 400;
  b.observed->Poll({});
  EXPECT_EQ(b.Only()->offset, 400u);
}

TEST(ObservedPulls, IngestRefsNameTheirKindAndDigest) {
  EXPECT_EQ(ParseIngestRef("layer-" + kLayerA).digest, kLayerA);
  EXPECT_EQ(ParseIngestRef("layer-" + kLayerA).kind, "layer");
  EXPECT_EQ(ParseIngestRef("manifest-docker.io/x:1@" + kManifest).digest, kManifest);
  EXPECT_EQ(ParseIngestRef("index-" + kManifest).kind, "index");
  EXPECT_TRUE(ParseIngestRef("k8s.io/1/layer-" + kLayerA).kind.empty());
  EXPECT_TRUE(ParseIngestRef("layer-nodigest").kind.empty());
}

}  // namespace
}  // namespace statlet::pulls
