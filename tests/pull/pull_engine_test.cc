// PullEngine's rules with a scripted content store and runtime (in addition to the e2e
// suite, which runs them against containerd): one runtime pull per image, joins, leaving,
// per-client no-progress timeouts, the cancellation grace, limits, an unanswering content
// store, and shutdown. Time on the engine's clock is moved by hand: a timeout is shown to
// hold up to its last instant and to fire at it, whatever the machine's pace.
#include <atomic>
#include <condition_variable>
#include <mutex>
#include <thread>

#include <gtest/gtest.h>

#include "pulls/pull_engine.h"
#include "tests/pull/scripted_digests.h"
#include "tests/support/manual_clock.h"
#include "tests/support/wait_for.h"

namespace statlet::pulls {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;

using scripted::kConfig;
using scripted::kLayer;
using scripted::kManifest;

class ScriptedContent final : public ContentSource {
 public:
  StatusOr<std::vector<Ingest>> LayerIngests() override {
    std::lock_guard<std::mutex> lock(mu);
    ++polls;  // every poll starts here
    if (down) return Unavailable("scripted outage");
    return ingests;
  }
  StatusOr<std::vector<BlobInfo>> ManifestsOf(const ImageName&) override {
    std::lock_guard<std::mutex> lock(mu);
    BlobInfo b{kManifest, 300, created_ns, {}};
    b.labels[kConfigLabel] = kConfig;
    b.labels[std::string(kLayerLabelPrefix) + "0"] = kLayer;
    return std::vector<BlobInfo>{b};
  }
  StatusOr<std::vector<BlobInfo>> ManifestsWithConfig(const std::string&) override { return ManifestsOf(ImageName()); }
  StatusOr<Manifest> ReadManifest(const std::string&) override {
    return Manifest{kManifest, kConfig, {{kLayer, 1000}}};
  }
  StatusOr<std::vector<BlobInfo>> Committed(const std::vector<std::string>&) override {
    std::lock_guard<std::mutex> lock(mu);
    if (committed) return std::vector<BlobInfo>{{kLayer, 1000, created_ns, {}}};
    return std::vector<BlobInfo>();
  }
  void SetIngest(uint64_t offset) {
    std::lock_guard<std::mutex> lock(mu);
    ingests = {{kLayer, offset, 1000}};
  }
  std::mutex mu;
  std::vector<Ingest> ingests;
  bool committed = false;
  bool down = false;
  uint64_t polls = 0;
  int64_t created_ns = INT64_MAX / 2;  // committed "after" any pull start
};

// A runtime whose pulls end when the test says, or when cancelled (after `cancel_delay`,
// or never with `answer_cancel` false).
class ScriptedRuntime final : public RuntimePuller {
 public:
  struct Pull {
    std::string request;
    std::function<void(RuntimePullResult)> done;
    bool cancelled = false;
    bool answered = false;
  };
  class Call final : public RuntimePuller::Call {
   public:
    Call(ScriptedRuntime* rt, size_t i) : rt_(rt), i_(i) {}
    void Cancel() override { rt_->Cancelled(i_); }

   private:
    ScriptedRuntime* rt_;
    size_t i_;
  };
  ~ScriptedRuntime() override {
    for (auto& t : threads_) t.join();
  }
  std::unique_ptr<RuntimePuller::Call> Start(std::string request,
                                             std::function<void(RuntimePullResult)> done) override {
    std::lock_guard<std::mutex> lock(mu_);
    pulls_.push_back({std::move(request), std::move(done)});
    return std::make_unique<Call>(this, pulls_.size() - 1);
  }
  void Answer(size_t i, RuntimePullResult r, milliseconds delay = milliseconds(0)) {
    std::lock_guard<std::mutex> lock(mu_);
    if (pulls_[i].answered) return;
    pulls_[i].answered = true;
    auto done = pulls_[i].done;
    threads_.emplace_back([done, r, delay] {
      std::this_thread::sleep_for(delay);  // the runtime's own time to answer
      done(r);
    });
  }
  void Cancelled(size_t i) {
    bool answer;
    {
      std::lock_guard<std::mutex> lock(mu_);
      pulls_[i].cancelled = true;
      answer = answer_cancel;
    }
    if (answer) Answer(i, {1, "context canceled", ""}, cancel_delay);
  }
  size_t pulls() {
    std::lock_guard<std::mutex> lock(mu_);
    return pulls_.size();
  }
  bool cancelled(size_t i) {
    std::lock_guard<std::mutex> lock(mu_);
    return pulls_[i].cancelled;
  }
  milliseconds cancel_delay{0};
  bool answer_cancel = true;

 private:
  std::mutex mu_;
  std::vector<Pull> pulls_;
  std::vector<std::thread> threads_;
};

class Recorder final : public PullSubscriber {
 public:
  void OnProgress(const PullViewPtr& v) override {
    std::lock_guard<std::mutex> lock(mu_);
    views_.push_back(v);
  }
  void OnDone(const PullViewPtr& v, const PullOutcome& o) override {
    std::lock_guard<std::mutex> lock(mu_);
    EXPECT_FALSE(outcome_.has_value()) << "OnDone twice";
    outcome_ = o;
    final_ = v;
    done_at_ = Clock::now();
  }
  std::optional<PullOutcome> outcome() {
    std::lock_guard<std::mutex> lock(mu_);
    return outcome_;
  }
  bool WaitDone(milliseconds timeout = seconds(10)) {
    return testing::WaitFor([&] { return outcome().has_value(); }, timeout);
  }
  size_t progress_count() {
    std::lock_guard<std::mutex> lock(mu_);
    return views_.size();
  }
  Clock::time_point done_at() {
    std::lock_guard<std::mutex> lock(mu_);
    return done_at_;
  }

 private:
  std::mutex mu_;
  std::vector<PullViewPtr> views_;
  std::optional<PullOutcome> outcome_;
  PullViewPtr final_;
  Clock::time_point done_at_;
};

PullRequest Request(const std::string& image) {
  PullRequest r;
  r.name = *ParseImageName(image);
  r.key = PullKey(r.name, "");
  r.runtime_request = "bytes of " + image;
  return r;
}

struct Engine {
  explicit Engine(PullEngineOptions o = {}) {
    o.poll_interval = milliseconds(50);
    o.now = [c = clock] { return c->Now(); };
    auto c = std::make_unique<ScriptedContent>();
    auto r = std::make_unique<ScriptedRuntime>();
    content = c.get();
    runtime = r.get();
    engine = std::make_unique<PullEngine>(o, std::move(c), std::move(r));
    engine->Start();
  }
  // A cancellation the test left unanswered is answered now, as a runtime would: the
  // engine's Stop waits for every runtime call (a failed assertion must not hang here).
  ~Engine() {
    runtime->answer_cancel = true;
    for (size_t i = 0; i < runtime->pulls(); ++i) {
      if (runtime->cancelled(i)) runtime->Answer(i, {1, "context canceled", ""});
    }
  }
  uint64_t Join(const std::shared_ptr<Recorder>& rec, int timeout_s = 0, const std::string& image = "busybox") {
    auto j = engine->Join(Request(image), rec, SubscribeOptions{seconds(timeout_s)});
    EXPECT_TRUE(j.ok()) << j.error.message;
    return j.subscription;
  }
  // Returns once the engine has polled `n` more times (each poll reads the engine's clock
  // after asking the content store, so what a poll decides sees every Advance before it).
  void WaitPolls(int n) {
    auto polls = [&] {
      std::lock_guard<std::mutex> lock(content->mu);
      return content->polls;
    };
    const uint64_t target = polls() + static_cast<uint64_t>(n) + 1;  // +1: a poll under way may have read earlier
    ASSERT_TRUE(testing::WaitFor([&] { return polls() >= target; }, seconds(10))) << "the engine stopped polling";
  }
  std::shared_ptr<testing::ManualClock> clock = std::make_shared<testing::ManualClock>();
  ScriptedContent* content;
  ScriptedRuntime* runtime;
  std::unique_ptr<PullEngine> engine;
};

TEST(PullEngine, OneRuntimePullServesEveryClientOfAnImage) {
  Engine e;
  auto a = std::make_shared<Recorder>(), b = std::make_shared<Recorder>(), c = std::make_shared<Recorder>();
  e.Join(a);
  e.Join(b);
  e.Join(c, 0, "docker.io/library/busybox:latest");  // another spelling of the same image
  EXPECT_EQ(e.runtime->pulls(), 1u);
  EXPECT_GE(a->progress_count(), 1u) << "a report at once, before any poll";
  e.content->SetIngest(500);
  ASSERT_TRUE(testing::WaitFor([&] { return e.engine->Pulls().back()->offset == 500; }, seconds(5)));
  e.content->committed = true;
  e.runtime->Answer(0, {0, "", kConfig});
  for (auto& r : {a, b, c}) {
    ASSERT_TRUE(r->WaitDone());
    EXPECT_EQ(r->outcome()->kind, PullOutcome::kSucceeded);
  }
  auto counters = e.engine->counters();
  EXPECT_EQ(counters.started, 1u);
  EXPECT_EQ(counters.joins, 2u);
  EXPECT_EQ(counters.succeeded, 1u);
  auto last = e.engine->Pulls().back();
  EXPECT_EQ(last->phase, PullPhase::kSucceeded);
  EXPECT_EQ(last->image_ref, kConfig);
  EXPECT_EQ(last->offset, 1000u);
}

TEST(PullEngine, TheLastClientStallingCancelsThePullAndHearsOnceTheRuntimeAnswered) {
  Engine e;
  e.runtime->answer_cancel = false;  // the test answers the cancellation itself
  auto a = std::make_shared<Recorder>();
  e.content->SetIngest(400);
  e.Join(a, 1);
  // The first poll sees the 400 B (moved since the join): the timeout counts from there.
  ASSERT_TRUE(testing::WaitFor([&] { return e.engine->Pulls().back()->offset == 400; }, seconds(10)));
  e.clock->Advance(milliseconds(999));
  e.WaitPolls(2);
  EXPECT_FALSE(e.runtime->cancelled(0)) << "cancelled before the 1 s timeout passed";
  e.clock->Advance(milliseconds(1));
  ASSERT_TRUE(testing::WaitFor([&] { return e.runtime->cancelled(0); }, seconds(10)))
      << "not cancelled once the 1 s timeout passed";
  e.WaitPolls(2);
  EXPECT_FALSE(a->outcome().has_value()) << "answered before the runtime confirmed the cancellation";
  e.runtime->Answer(0, {1, "context canceled", ""});
  ASSERT_TRUE(a->WaitDone());
  EXPECT_EQ(a->outcome()->kind, PullOutcome::kStalled);
  EXPECT_EQ(a->outcome()->grpc_code, 4);
  EXPECT_NE(a->outcome()->message.find("no progress for 1s: layer " + kLayer + " at 400 B of 1000 B"),
            std::string::npos)
      << a->outcome()->message;
  EXPECT_EQ(e.engine->counters().stalled, 1u);
  EXPECT_EQ(e.engine->Pulls().back()->phase, PullPhase::kStalled);
}

TEST(PullEngine, AClientStallingLeavesTheOthersAndThePullAlone) {
  Engine e;
  auto patient = std::make_shared<Recorder>(), hasty = std::make_shared<Recorder>();
  e.Join(patient, 0);
  e.Join(hasty, 1);
  e.clock->Advance(seconds(1));
  ASSERT_TRUE(hasty->WaitDone());
  EXPECT_EQ(hasty->outcome()->kind, PullOutcome::kStalled);
  EXPECT_FALSE(e.runtime->cancelled(0));
  EXPECT_FALSE(patient->outcome().has_value());
  e.runtime->Answer(0, {0, "", kConfig});
  ASSERT_TRUE(patient->WaitDone());
  EXPECT_EQ(patient->outcome()->kind, PullOutcome::kSucceeded);
}

TEST(PullEngine, BytesMovingKeepThePullAlive) {
  Engine e;
  auto a = std::make_shared<Recorder>();
  e.Join(a, 1);
  for (int i = 1; i <= 8; ++i) {  // 2 s of progress on the engine's clock, bytes moving every 250 ms
    e.content->SetIngest(static_cast<uint64_t>(i) * 100);
    ASSERT_TRUE(testing::WaitFor([&] { return e.engine->Pulls().back()->offset == static_cast<uint64_t>(i) * 100; },
                                 seconds(10)));
    e.clock->Advance(milliseconds(250));
  }
  e.clock->Advance(milliseconds(749));  // 999 ms since the last bytes moved
  e.WaitPolls(2);
  EXPECT_FALSE(a->outcome().has_value());
  EXPECT_FALSE(e.runtime->cancelled(0));
  e.runtime->Answer(0, {0, "", kConfig});
  ASSERT_TRUE(a->WaitDone());
  EXPECT_EQ(a->outcome()->kind, PullOutcome::kSucceeded);
}

TEST(PullEngine, LeavingLastKeepsThePullOrCancelsIt) {
  {
    Engine keep;
    auto a = std::make_shared<Recorder>();
    keep.engine->Leave(keep.Join(a));
    keep.clock->Advance(std::chrono::hours(1));  // no timer of its own cancels it either
    keep.WaitPolls(3);
    EXPECT_FALSE(keep.runtime->cancelled(0));
    EXPECT_EQ(keep.engine->Pulls().back()->subscribers, 0);
    keep.runtime->Answer(0, {0, "", kConfig});
    ASSERT_TRUE(testing::WaitFor([&] { return keep.engine->counters().succeeded == 1; }, seconds(5)));
    EXPECT_FALSE(a->outcome().has_value()) << "a client that left is not called again";
  }
  {
    PullEngineOptions o;
    o.keep_abandoned = false;
    Engine drop(o);
    auto a = std::make_shared<Recorder>(), b = std::make_shared<Recorder>();
    uint64_t ia = drop.Join(a);
    uint64_t ib = drop.Join(b);
    drop.engine->Leave(ia);
    EXPECT_FALSE(drop.runtime->cancelled(0)) << "b still follows it";
    drop.engine->Leave(ib);
    EXPECT_TRUE(drop.runtime->cancelled(0));
    ASSERT_TRUE(testing::WaitFor([&] { return drop.engine->counters().cancelled == 1; }, seconds(5)));
    // A new request starts a new pull.
    auto c = std::make_shared<Recorder>();
    drop.Join(c);
    EXPECT_EQ(drop.runtime->pulls(), 2u);
  }
}

TEST(PullEngine, ARuntimeErrorReachesEveryClient) {
  Engine e;
  auto a = std::make_shared<Recorder>(), b = std::make_shared<Recorder>();
  e.Join(a);
  e.Join(b);
  e.runtime->Answer(0, {5, "busybox: not found", ""});
  for (auto& r : {a, b}) {
    ASSERT_TRUE(r->WaitDone());
    EXPECT_EQ(r->outcome()->kind, PullOutcome::kFailed);
    EXPECT_EQ(r->outcome()->grpc_code, 5);
    EXPECT_EQ(r->outcome()->message, "busybox: not found");
  }
  EXPECT_EQ(e.engine->counters().failed, 1u);
}

TEST(PullEngine, LimitsRefuseWithResourceExhausted) {
  PullEngineOptions o;
  o.max_pulls = 1;
  o.max_subscribers = 2;
  Engine e(o);
  auto a = std::make_shared<Recorder>();
  e.Join(a, 0, "a");
  auto other = e.engine->Join(Request("b"), std::make_shared<Recorder>(), {});
  EXPECT_FALSE(other.ok());
  EXPECT_EQ(other.error.grpc_code, 8);
  e.Join(std::make_shared<Recorder>(), 0, "a");
  auto third = e.engine->Join(Request("a"), std::make_shared<Recorder>(), {});
  EXPECT_FALSE(third.ok());
  EXPECT_EQ(third.error.grpc_code, 8);
  EXPECT_EQ(e.engine->counters().rejected, 2u);
  EXPECT_EQ(e.runtime->pulls(), 1u);
}

TEST(PullEngine, AnUnansweringContentStorePausesTimeoutsInsteadOfFailingPulls) {
  Engine e;
  e.content->down = true;
  auto a = std::make_shared<Recorder>();
  e.Join(a, 1);
  e.clock->Advance(milliseconds(1600));  // past the timeout, with no observation
  e.WaitPolls(3);
  EXPECT_FALSE(a->outcome().has_value());
  EXPECT_FALSE(e.runtime->cancelled(0));
  EXPECT_GT(e.engine->counters().content_errors, 0u);
  e.runtime->Answer(0, {0, "", kConfig});
  ASSERT_TRUE(a->WaitDone());
  EXPECT_EQ(a->outcome()->kind, PullOutcome::kSucceeded);
}

TEST(PullEngine, ARuntimeThatDoesNotAnswerTheCancellationStillFreesItsClients) {
  PullEngineOptions o;
  o.cancel_grace = milliseconds(400);
  Engine e(o);
  e.runtime->answer_cancel = false;
  auto a = std::make_shared<Recorder>();
  e.Join(a, 1);
  e.clock->Advance(seconds(1));
  ASSERT_TRUE(testing::WaitFor([&] { return e.runtime->cancelled(0); }, seconds(10)));
  e.clock->Advance(milliseconds(399));
  e.WaitPolls(2);
  EXPECT_FALSE(a->outcome().has_value()) << "freed before the 400 ms grace passed";
  e.clock->Advance(milliseconds(1));
  ASSERT_TRUE(a->WaitDone()) << "still waiting once the 400 ms grace passed";
  EXPECT_EQ(a->outcome()->kind, PullOutcome::kStalled);
  EXPECT_TRUE(e.runtime->cancelled(0));
  e.runtime->Answer(0, {1, "finally", ""});  // so that Stop finds every call answered
}

TEST(PullEngine, StopEndsEveryClientWithUnavailable) {
  Engine e;
  e.runtime->cancel_delay = milliseconds(50);
  auto a = std::make_shared<Recorder>();
  e.Join(a);
  e.engine->Stop();
  ASSERT_TRUE(a->outcome().has_value());
  EXPECT_EQ(a->outcome()->grpc_code, 14);
  EXPECT_TRUE(e.runtime->cancelled(0));
  auto late = e.engine->Join(Request("busybox"), std::make_shared<Recorder>(), {});
  EXPECT_FALSE(late.ok());
  EXPECT_EQ(late.error.grpc_code, 14);
}

TEST(PullEngine, APullNamesEachPodItWasMadeForOnce) {
  Engine e;
  auto for_pod = [](const std::string& name) {
    PullRequest r = Request("busybox");
    r.pod = PodRef{"default", name, "uid-" + name};
    return r;
  };
  auto anonymous = std::make_shared<Recorder>();
  ASSERT_TRUE(e.engine->Join(Request("busybox"), anonymous, {}).ok());
  EXPECT_TRUE(e.engine->Pulls().back()->pods.empty()) << "a pull without a sandbox_config names no pod";
  for (const char* name : {"web-0", "web-1", "web-0"}) {
    ASSERT_TRUE(e.engine->Join(for_pod(name), std::make_shared<Recorder>(), {}).ok());
  }
  auto pods = e.engine->Pulls().back()->pods;
  ASSERT_EQ(pods.size(), 2u);
  EXPECT_EQ(pods[0], (PodRef{"default", "web-0", "uid-web-0"}));
  EXPECT_EQ(pods[1], (PodRef{"default", "web-1", "uid-web-1"}));
  for (size_t i = 0; i < kMaxPodsPerPull + 4; ++i) {
    ASSERT_TRUE(e.engine->Join(for_pod("many-" + std::to_string(i)), std::make_shared<Recorder>(), {}).ok());
  }
  EXPECT_EQ(e.engine->Pulls().back()->pods.size(), kMaxPodsPerPull);
  e.content->committed = true;
  e.runtime->Answer(0, {0, "", kConfig});
  ASSERT_TRUE(anonymous->WaitDone());
  auto last = e.engine->Pulls().back();
  EXPECT_EQ(last->phase, PullPhase::kSucceeded);
  EXPECT_EQ(last->pods.size(), kMaxPodsPerPull) << "the finished pull still names its pods";
}

}  // namespace
}  // namespace statlet::pulls
