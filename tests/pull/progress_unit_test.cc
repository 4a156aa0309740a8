// KEP-5334's parts without a runtime: the token store (an injected clock, so expiry takes
// no waiting), the Progress line encoder (each line checked strictly with nlohmann json)
// and the streams' coalescing over pull views built by hand.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <condition_variable>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "collector/enrichment.h"
#include "pulls/progress_line.h"
#include "pulls/progress_streams.h"
#include "pulls/progress_target.h"
#include "pulls/progress_tokens.h"
#include "tests/support/manual_clock.h"

namespace statlet::pulls {
namespace {

using std::chrono::seconds;
using TimePoint = std::chrono::steady_clock::time_point;

ProgressTokensOptions Options(testing::ManualClock* clock, size_t max) {
  ProgressTokensOptions o;
  o.ttl = seconds(30);
  o.max_outstanding = max;
  o.now = clock->Fn();
  return o;
}

ProgressTarget Pod(const std::string& name, const std::string& uid = "") {
  ProgressTarget t;
  t.pod = {"shop", name, uid};
  return t;
}

TEST(ProgressTokens, ATokenIs128RandomBitsInHexAndServesOnce) {
  testing::ManualClock clock;
  ProgressTokens tokens(Options(&clock, 10));
  auto a = tokens.Issue(Pod("web-0"));
  auto b = tokens.Issue(Pod("web-1"));
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->size(), 32u);
  EXPECT_EQ(a->find_first_not_of("0123456789abcdef"), std::string::npos) << *a;
  EXPECT_NE(*a, *b);
  auto t = tokens.Redeem(*a);
  ASSERT_TRUE(t.has_value());
  EXPECT_EQ(t->pod.name, "web-0");
  EXPECT_FALSE(tokens.Redeem(*a).has_value()) << "a second use is refused";
  EXPECT_FALSE(tokens.Redeem(std::string(32, '0')).has_value()) << "an unknown token is refused";
  EXPECT_EQ(tokens.outstanding(), 1u);
}

TEST(ProgressTokens, AnUnusedTokenExpiresAfterTheTtlOnTheInjectedClock) {
  testing::ManualClock clock;
  ProgressTokens tokens(Options(&clock, 10));
  auto early = tokens.Issue(Pod("a"));
  auto late = tokens.Issue(Pod("b"));
  clock.Advance(seconds(29));
  auto fresh = tokens.Issue(Pod("c"));
  ASSERT_TRUE(early.ok() && late.ok() && fresh.ok());
  EXPECT_TRUE(tokens.Redeem(*late).has_value()) << "29 s: still valid";
  clock.Advance(seconds(1));
  EXPECT_FALSE(tokens.Redeem(*early).has_value()) << "30 s: expired";
  EXPECT_EQ(tokens.outstanding(), 1u) << "only the token issued at 29 s waits";
  clock.Advance(seconds(28));
  EXPECT_TRUE(tokens.Redeem(*fresh).has_value()) << "issued at 29 s, valid until 59 s";
}

TEST(ProgressTokens, AtTheCapNewTokensAreRefusedUntilOneIsUsedOrExpires) {
  testing::ManualClock clock;
  ProgressTokens tokens(Options(&clock, 3));
  std::vector<std::string> issued;
  for (int i = 0; i < 3; ++i) issued.push_back(*tokens.Issue(Pod("p")));
  auto over = tokens.Issue(Pod("p"));
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("too many"), std::string::npos) << over.status().message();
  EXPECT_EQ(over.status().code(), StatusCode::kResourceExhausted) << "the caller's to retry later, as a full server";
  ASSERT_TRUE(tokens.Redeem(issued[0]).has_value());
  EXPECT_TRUE(tokens.Issue(Pod("p")).ok()) << "a used token frees its place";
  EXPECT_FALSE(tokens.Issue(Pod("p")).ok());
  clock.Advance(seconds(30));
  EXPECT_TRUE(tokens.Issue(Pod("p")).ok()) << "expired tokens free theirs";
}

TEST(ProgressTokens, NoRandomnessNoToken) {
  ProgressTokensOptions o;
  o.random = [](unsigned char*, size_t) { return Internal("no entropy"); };
  ProgressTokens tokens(o);
  EXPECT_FALSE(tokens.Issue(Pod("p")).ok());
}

// Strict: one JSON object per line, only the KEP's keys in its order, the right types,
// omitted (not empty) optional fields.
nlohmann::ordered_json StrictLine(const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << "one line";
  auto j = nlohmann::ordered_json::parse(line.substr(0, line.size() - 1));
  EXPECT_TRUE(j.is_object());
  static const std::vector<std::string> kOrder = {"image", "layer", "progress", "total", "error"};
  size_t at = 0;
  for (const auto& [k, v] : j.items()) {
    while (at < kOrder.size() && kOrder[at] != k) ++at;
    EXPECT_LT(at, kOrder.size()) << "unknown or out-of-order key " << k;
    if (k == "progress" || k == "total") EXPECT_TRUE(v.is_number_integer()) << k;
    else EXPECT_TRUE(v.is_string() && !v.get<std::string>().empty()) << k;
  }
  EXPECT_TRUE(j.contains("progress") && j.contains("total"));
  return j;
}

TEST(ProgressLine, LayerObjectsCarryTheKepFieldsAndLeaveOutEmptyOnes) {
  std::string out;
  AppendProgressLine({"127.0.0.1:5000/a:1", "sha256:ab", 5, 10, ""}, &out);
  EXPECT_EQ(out, "{\"image\":\"127.0.0.1:5000/a:1\",\"layer\":\"sha256:ab\",\"progress\":5,\"total\":10}\n");
  StrictLine(out);
  out.clear();
  AppendProgressLine({"docker.io/library/x:1", "", 0, 0, "stalled: \"no bytes\"\n"}, &out);
  auto j = StrictLine(out);
  EXPECT_FALSE(j.contains("layer"));
  EXPECT_EQ(j["error"], "stalled: \"no bytes\"\n");
  out.clear();
  AppendProgressLine({"", "", 1, 2, ""}, &out);
  EXPECT_EQ(out, "{\"progress\":1,\"total\":2}\n");
}

TEST(ProgressLine, TextThatIsNotUtf8IsReplacedNotPassedThrough) {
  std::string out;
  AppendProgressLine({"img\xff", "", 0, 0, "bad \xc3"}, &out);
  auto j = StrictLine(out);
  EXPECT_EQ(j["image"], "img\xEF\xBF\xBD");
}

TEST(ProgressTarget, IdsMapThroughTheRuntimeListsAndBadIdsAreNotFound) {
  MetadataMap map;
  auto sandbox = std::make_shared<ContainerMetadata>();
  sandbox->container_id = sandbox->pod_sandbox_id = "sb1";
  sandbox->pod_namespace = "shop";
  sandbox->pod_name = "web-0";
  sandbox->pod_uid = "u1";
  sandbox->is_sandbox = true;
  map.by_container_id["sb1"] = sandbox;
  map.sandbox_by_pod_uid["u1"] = sandbox;
  auto c = std::make_shared<ContainerMetadata>(*sandbox);
  c->container_id = "c1";
  c->is_sandbox = false;
  c->image = "busybox";
  map.by_container_id["c1"] = c;

  auto pod = ResolveTarget(map, "sb1", "");
  ASSERT_TRUE(pod.ok());
  EXPECT_EQ(pod->pod, (PodRef{"shop", "web-0", "u1"}));
  EXPECT_TRUE(pod->image.empty());
  auto container = ResolveTarget(map, "", "c1");
  ASSERT_TRUE(container.ok());
  EXPECT_EQ(container->image, "docker.io/library/busybox:latest");
  EXPECT_EQ(ResolveTarget(map, "", "").status().code(), StatusCode::kInvalidArgument);
  auto bad = ResolveTarget(map, "nope", "");
  EXPECT_EQ(bad.status().code(), StatusCode::kNotFound);
  EXPECT_NE(bad.status().message().find("nope"), std::string::npos);
  EXPECT_EQ(ResolveTarget(map, "", "sb1").status().code(), StatusCode::kNotFound) << "a sandbox is no container";
  EXPECT_EQ(ResolveTarget(map, "other", "c1").status().code(), StatusCode::kNotFound);
}

// containerd 1.6 keeps no user_specified_image. Its ListContainers gives the image as the
// kubelet created the container (the image id), its ContainerStatus the image's first
// repository tag and first repository digest: none need be the name the pod wrote.
TEST(ProgressTarget, AContainerWithoutTheNameThePodWroteMatchesByDigestRefIdOrRepository) {
  const std::string id = "sha256:" + std::string(64, 'c');
  const std::string manifest = "sha256:" + std::string(64, 'a');
  MetadataMap map;
  auto sandbox = std::make_shared<ContainerMetadata>();
  sandbox->container_id = sandbox->pod_sandbox_id = "sb1";
  sandbox->pod_namespace = "shop";
  sandbox->pod_name = "web-0";
  sandbox->pod_uid = "u1";
  sandbox->is_sandbox = true;
  map.by_container_id["sb1"] = sandbox;
  // As ContainerStatus answers: the first tag (the pod wrote :1) and the repository digest.
  auto status = std::make_shared<ContainerMetadata>(*sandbox);
  status->container_id = "c1";
  status->is_sandbox = false;
  status->image = "127.0.0.1:5000/app:latest";
  status->image_ref = "127.0.0.1:5000/app@" + manifest;
  map.by_container_id["c1"] = status;
  // As ListContainers answers before any ContainerStatus: the id, twice.
  auto listed = std::make_shared<ContainerMetadata>(*status);
  listed->container_id = "c2";
  listed->image = id;
  listed->image_ref = id;
  map.by_container_id["c2"] = listed;
  // A ContainerStatus for an image pulled by digest only: the id as image, the digest ref.
  auto by_digest = std::make_shared<ContainerMetadata>(*status);
  by_digest->container_id = "c3";
  by_digest->image = id;
  map.by_container_id["c3"] = by_digest;

  auto pull = [](const std::string& image, const std::string& pod, const std::string& image_ref = "") {
    PullView v;
    v.image = image;
    v.image_ref = image_ref;
    v.pods.push_back({"shop", pod, ""});
    return v;
  };
  auto t = ResolveTarget(map, "", "c1");
  ASSERT_TRUE(t.ok()) << t.status().ToString();
  EXPECT_TRUE(Follows(*t, pull("127.0.0.1:5000/app:1", "web-0"))) << "the tag the pod wrote, the runtime gave another";
  EXPECT_TRUE(Follows(*t, pull("127.0.0.1:5000/app@" + manifest, "web-0"))) << "pulled by its digest";
  EXPECT_TRUE(Follows(*t, pull("127.0.0.1:5000/app:latest", "web-0")));
  EXPECT_FALSE(Follows(*t, pull("127.0.0.1:5000/db:1", "web-0"))) << "another image of the pod";
  EXPECT_FALSE(Follows(*t, pull("127.0.0.1:5000/app:1", "web-1"))) << "another pod";
  EXPECT_FALSE(Follows(*t, pull("127.0.0.1:5001/app:1", "web-0"))) << "another registry";

  auto d = ResolveTarget(map, "", "c3");
  ASSERT_TRUE(d.ok()) << d.status().ToString();
  EXPECT_EQ(d->image, "");
  EXPECT_TRUE(Follows(*d, pull("127.0.0.1:5000/app@" + manifest, "web-0")));
  EXPECT_TRUE(Follows(*d, pull("127.0.0.1:5000/app:2", "web-0"))) << "its repository";
  EXPECT_FALSE(Follows(*d, pull("docker.io/library/sha256:" + std::string(64, 'c'), "web-0"))) << "an id names no pull";
  EXPECT_FALSE(Follows(*d, pull("127.0.0.1:5000/db:1", "web-0")));

  // Known by its id alone: said so, rather than a stream that can match nothing.
  auto none = ResolveTarget(map, "", "c2");
  ASSERT_FALSE(none.ok());
  EXPECT_EQ(none.status().code(), StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("only by its id"), std::string::npos) << none.status().message();
  EXPECT_NE(none.status().message().find(id), std::string::npos) << none.status().message();
  EXPECT_NE(none.status().message().find("pod_sandbox_id"), std::string::npos) << none.status().message();

  // A name the pod wrote (user_specified_image, or a runtime that keeps it) matches by
  // name, and the runtime's answer (the id) matches a finished pull of it too.
  status->image = "127.0.0.1:5000/app:1";
  status->image_ref = id;
  auto named = ResolveTarget(map, "", "c1");
  ASSERT_TRUE(named.ok());
  EXPECT_EQ(named->image, "127.0.0.1:5000/app:1");
  EXPECT_TRUE(Follows(*named, pull("127.0.0.1:5000/app:1", "web-0")));
  EXPECT_TRUE(Follows(*named, pull("docker.io/library/other:1", "web-0", id))) << "the runtime's answer";
}

// Pull views as the engine publishes them; `asked` counts the streams' looks.
struct Feed {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<PullViewPtr> pulls;
  uint64_t generation = 1;
  int asked = 0;
  int asked_at_set = 0;
  ProgressFeed feed() {
    return {[this] {
              std::lock_guard<std::mutex> lock(mu);
              ++asked;
              cv.notify_all();
              return pulls;
            },
            [this] {
              std::lock_guard<std::mutex> lock(mu);
              return generation;
            }};
  }
  void Set(std::vector<PullViewPtr> p) {
    std::lock_guard<std::mutex> lock(mu);
    pulls = std::move(p);
    ++generation;
    asked_at_set = asked;
  }
  // Waits (a deadline, no fixed sleep) until the streams looked since the last Set.
  bool WaitAsked() {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(10), [&] { return asked > asked_at_set; });
  }
  // Waits until every Set so far reached the streams: the streams look once more (the
  // same pulls again) after the look that read it, and their looks run one at a time.
  bool Applied() {
    if (!WaitAsked()) return false;
    std::vector<PullViewPtr> same;
    {
      std::lock_guard<std::mutex> lock(mu);
      same = pulls;
    }
    Set(std::move(same));
    return WaitAsked();
  }
};

PullViewPtr View(const std::string& image, int64_t start, std::vector<LayerState> layers, PullPhase phase,
                 const std::string& pod = "web-0") {
  auto v = std::make_shared<PullView>();
  v->image = image;
  v->started_unix_ns = start;
  v->layers = std::move(layers);
  v->phase = phase;
  if (PullFinished(phase)) v->finished_unix_ns = start + 1;
  v->pods.push_back({"shop", pod, ""});
  return v;
}

std::string TakeAll(ByteStream* s, bool* woken = nullptr) {
  std::string out;
  s->Take(&out, [woken] {
    if (woken) *woken = true;
  });
  return out;
}

TEST(ProgressStreams, AStreamSendsTheLatestValuePerLayerNotEveryChange) {
  Feed feed;
  feed.pulls = {View("a:1", 1, {{"sha256:l1", 100, 10, LayerStage::kDownloading}}, PullPhase::kDownloading),
                View("other:1", 2, {{"sha256:o", 5, 1, LayerStage::kDownloading}}, PullPhase::kDownloading, "db-0"),
                View("old:1", 0, {{"sha256:x", 5, 5, LayerStage::kDownloaded}}, PullPhase::kSucceeded)};
  ProgressStreams streams(feed.feed(), {.max_streams = 2, .max_entries = 16, .interval = std::chrono::hours(1)});
  auto s = streams.Open(Pod("web-0"));
  ASSERT_NE(s, nullptr);
  EXPECT_EQ(TakeAll(s.get()), "{\"image\":\"a:1\",\"layer\":\"sha256:l1\",\"progress\":10,\"total\":100}\n")
      << "the pod's pull in flight only: not another pod's, not one finished before";
  bool woken = false;
  EXPECT_EQ(TakeAll(s.get(), &woken), "");
  EXPECT_FALSE(woken);
  EXPECT_EQ(streams.open(), 1u);
  s->Close();
  EXPECT_EQ(streams.open(), 0u);
}

TEST(ProgressStreams, ChangesTheReaderDidNotTakeCoalesceIntoTheLatestAndAFinishedPullIsSentOnce) {
  Feed feed;
  auto layer = [](uint64_t offset, LayerStage st) { return LayerState{"sha256:l1", 100, offset, st}; };
  feed.pulls = {View("a:1", 1, {layer(10, LayerStage::kDownloading)}, PullPhase::kDownloading)};
  ProgressStreams streams(feed.feed(), {.interval = std::chrono::milliseconds(1)});
  auto s = streams.Open(Pod("web-0"));
  EXPECT_NE(TakeAll(s.get()).find("\"progress\":10,"), std::string::npos);
  for (uint64_t offset : {20, 30, 40}) {
    feed.Set({View("a:1", 1, {layer(offset, LayerStage::kDownloading)}, PullPhase::kDownloading)});
    ASSERT_TRUE(feed.WaitAsked());
  }
  ASSERT_TRUE(feed.Applied());
  EXPECT_EQ(TakeAll(s.get()), "{\"image\":\"a:1\",\"layer\":\"sha256:l1\",\"progress\":40,\"total\":100}\n")
      << "one line with the latest value, not three";
  feed.Set({View("a:1", 1, {layer(100, LayerStage::kDownloaded)}, PullPhase::kSucceeded),
            View("b:1", 5, {{"sha256:l2", 50, 0, LayerStage::kWaiting}}, PullPhase::kResolving)});
  ASSERT_TRUE(feed.Applied());
  EXPECT_EQ(TakeAll(s.get()),
            "{\"image\":\"a:1\",\"layer\":\"sha256:l1\",\"progress\":100,\"total\":100}\n"
            "{\"image\":\"b:1\",\"layer\":\"sha256:l2\",\"progress\":0,\"total\":50}\n")
      << "the end of a pull, and a pull that started after the stream opened";
  feed.Set({View("a:1", 1, {layer(100, LayerStage::kDownloaded)}, PullPhase::kSucceeded),
            View("b:1", 5, {{"sha256:l2", 50, 0, LayerStage::kWaiting}}, PullPhase::kFailed)});
  ASSERT_TRUE(feed.Applied());
  const std::string failed = TakeAll(s.get());
  EXPECT_EQ(failed.find("a:1"), std::string::npos) << "a finished pull is not sent again: " << failed;
  EXPECT_NE(failed.find("\"error\":\"Failed\""), std::string::npos) << failed;
}

TEST(ProgressStreams, TheCapRefusesAStreamAndClosingOneFreesItsPlace) {
  Feed feed;
  ProgressStreams streams(feed.feed(), {.max_streams = 2, .max_entries = 16, .interval = std::chrono::hours(1)});
  auto a = streams.Open(Pod("p"));
  auto b = streams.Open(Pod("p"));
  EXPECT_EQ(streams.Open(Pod("p")), nullptr);
  a.reset();  // the reader left and the connection dropped it
  EXPECT_NE(streams.Open(Pod("p")), nullptr);
  streams.Stop();
  std::string out;
  EXPECT_FALSE(b->Take(&out, [] {})) << "a stopped stream ends";
}

TEST(ProgressStreams, StopWakesAWaitingReader) {
  Feed feed;
  ProgressStreams streams(feed.feed(), {.interval = std::chrono::hours(1)});
  auto s = streams.Open(Pod("p"));
  bool woken = false;
  EXPECT_EQ(TakeAll(s.get(), &woken), "");
  streams.Stop();
  EXPECT_TRUE(woken);
}

}  // namespace
}  // namespace statlet::pulls
