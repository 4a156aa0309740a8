// PullEngine: every image pull statlet serves, one runtime pull per image however many
// clients ask for it (in-flight sharing as zot's blob streaming design does it, applied to the runtime's pull).
//
//   Join ──► in flight for this image? ──no──► start the runtime's PullImage
//                     │ yes (a join)
//                     ▼
//              subscribers of that pull ◄── one loop thread polls the content store every
//                                             poll_interval for all pulls at once, updates
//                                             each pull's LayerTracker, applies each
//                                             subscriber's no-progress timeout and tells
//                                             every subscriber (they pick their reports).
//
// Leaving: a subscriber that leaves does not stop the pull for the others. When the last
// one leaves, the pull goes on to the end (keep_abandoned, the bytes are not wasted) or is
// cancelled. A subscriber whose no-progress timeout expires ends with DEADLINE_EXCEEDED
// naming the unfinished layers; if it was the last one, the runtime's pull is cancelled
// first (the runtime then keeps no image) and the error is sent once the runtime answered
// the cancellation (or after cancel_grace). A pull whose subscribers have all left is held
// to the engine's default no-progress timeout.
//
// Threads: Join and Leave come from RPC threads; runtime answers arrive on RPC library
// threads; all pull state changes happen under one mutex, and subscribers are called
// outside it. Content store calls happen on the loop thread only.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "pulls/content_source.h"
#include "pulls/image_name.h"
#include "pulls/layer_tracker.h"
#include "pulls/observed_pulls.h"
#include "pulls/pull_view.h"
#include "pulls/runtime_puller.h"

namespace statlet::pulls {

struct PullRequest {
  ImageName name;
  std::string key;              // what makes two requests the same pull
  std::string runtime_request;  // serialized runtime.v1.PullImageRequest, sent as is
  std::optional<PodRef> pod;    // from the request's sandbox_config, when it names a pod
};
// The key of a request: the normalized image and the runtime handler it is pulled for.
std::string PullKey(const ImageName& name, const std::string& runtime_handler);

class PullSubscriber {
 public:
  virtual ~PullSubscriber() = default;
  // After joining and after every poll while the pull runs. Must not block.
  virtual void OnProgress(const PullViewPtr& view) = 0;
  // Exactly once, last (not after Leave returned... except when racing with it).
  virtual void OnDone(const PullViewPtr& view, const PullOutcome& outcome) = 0;
};

struct SubscribeOptions {
  std::chrono::seconds no_progress_timeout{0};  // 0: never
};

struct PullEngineOptions {
  std::chrono::milliseconds poll_interval{250};
  // Applied to pulls nobody follows any more (0: never).
  std::chrono::seconds abandoned_no_progress_timeout{0};
  bool keep_abandoned = true;
  size_t max_pulls = 32;         // different images in flight
  size_t max_subscribers = 256;  // calls following pulls
  // How long stalled subscribers wait for the runtime to confirm the cancellation.
  std::chrono::milliseconds cancel_grace{2000};
  // Finished pulls kept for the per-node view.
  size_t history = 64;
  std::chrono::seconds history_ttl{600};
  // Pulls statlet does not carry (ObservedPulls, set with Observe): polled every
  // observe_interval while none is in flight (one ListStatuses per namespace), every
  // poll_interval while one is. The namespace of the runtime's own pulls (the CRI plugin's)
  // is where the pulls statlet carries show up too, to be left out there.
  std::chrono::milliseconds observe_interval{1000};
  std::string runtime_namespace = "k8s.io";
  // The time no-progress timeouts, the cancellation grace and durations are measured in;
  // tests drive it by hand. The loop's polling pace stays on the steady clock.
  std::function<Clock::time_point()> now = Clock::now;
};

// Cumulative counts, for /metrics.
struct PullCounters {
  uint64_t started = 0;
  uint64_t succeeded = 0, failed = 0, stalled = 0, cancelled = 0;
  uint64_t joins = 0;
  uint64_t rejected = 0;        // joins refused by max_pulls / max_subscribers
  uint64_t content_errors = 0;  // polls the content store did not answer
  // Durations of succeeded pulls, seconds: counts per upper bound in kDurationBuckets.
  std::vector<uint64_t> duration_buckets;
  double duration_sum = 0;
  uint64_t duration_count = 0;
};
extern const std::vector<double> kDurationBuckets;

struct JoinResult {
  uint64_t subscription = 0;  // 0: refused, see error
  PullOutcome error;
  bool ok() const { return subscription != 0; }
};

class PullEngine {
 public:
  PullEngine(PullEngineOptions options, std::unique_ptr<ContentSource> content, std::unique_ptr<RuntimePuller> runtime);
  ~PullEngine();

  // Follows the pulls statlet does not carry on the engine's loop (before Start).
  void Observe(std::unique_ptr<ObservedPulls> observed);
  void Start();
  // Cancels every pull, ends every subscription with UNAVAILABLE and joins the loop.
  void Stop();

  JoinResult Join(PullRequest request, std::shared_ptr<PullSubscriber> subscriber, SubscribeOptions options);
  // The subscriber is gone (its client cancelled): it is not called again once this returns.
  void Leave(uint64_t subscription);

  // Pulls in flight and recently finished ones, in start order, observed ones included.
  std::vector<PullViewPtr> Pulls() const;
  // Zero when no ObservedPulls is set.
  ObservedCounters observed_counters() const;
  // Whether pulls statlet does not carry are followed (an ObservedPulls is set).
  bool observing() const { return observed_ != nullptr; }
  PullCounters counters() const;
  // Changes whenever a pull's view or a counter does.
  uint64_t generation() const { return generation_.load(std::memory_order_relaxed); }
  const PullEngineOptions& options() const { return options_; }

 private:
  struct Subscription {
    uint64_t id = 0;
    std::shared_ptr<PullSubscriber> subscriber;
    std::chrono::seconds timeout{0};
    Clock::time_point joined;
  };
  struct Pull;
  struct Note;  // a call to make outside the lock
  struct Ask;
  struct Poll;

  void Loop();
  // One poll for every pull: plan it (under the lock), ask the content store (without),
  // then update each pull (under the lock) and collect the calls to make.
  void Tick(std::vector<Note>* notes);
  void PlanPoll(Poll* poll);
  void AskContentStore(Poll* poll);
  // The manifest the ask waits for: the one the runtime's answer names, else the image's
  // that fits the pull; a failed call goes to *error.
  void ReadManifest(Ask* ask, const std::set<std::string>& downloading, Status* error);
  // Counts a failed poll and logs the content store going away and coming back (mu_ held).
  void NoteContentStoreLocked(const Status& error);
  // Applies the poll to `p` (its ask may be null); true when the pull is over (mu_ held).
  bool UpdateLocked(Pull* p, const Ask* ask, const Poll& poll, Clock::time_point now, std::vector<Note>* notes);
  // Ends the subscriptions whose no-progress timeout passed, cancelling the runtime's pull
  // when nobody is left (mu_ held).
  void ApplyNoProgressTimeoutsLocked(Pull* p, Clock::time_point now, std::vector<Note>* notes);
  void RuntimeAnswered(uint64_t pull_id, RuntimePullResult result);
  // Moves `p` to cancelling_ and cancels the runtime's pull (mu_ held).
  void CancelLocked(Pull* p, PullOutcome reason);
  void FinishLocked(Pull* p, Clock::time_point now, std::vector<Note>* notes);
  void PublishLocked(Pull* p);
  void Deliver(std::vector<Note>* notes);
  // The pulls statlet carries, in flight or finished within a minute (mu_ held).
  std::vector<CarriedPull> CarriedLocked(Clock::time_point now) const;

  PullEngineOptions options_;
  std::unique_ptr<ContentSource> content_;
  std::unique_ptr<RuntimePuller> runtime_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  bool stopping_ = false;
  bool poke_ = false;      // a join: poll soon (at most one poll per kMinPollGap)
  bool answered_ = false;  // a runtime answered: poll now, its clients are waiting
  uint64_t next_id_ = 1;
  std::map<std::string, std::unique_ptr<Pull>> pulls_;  // running, by key
  std::vector<std::unique_ptr<Pull>> cancelling_;       // cancelled, waiting for the runtime
  size_t subscribers_ = 0;
  size_t runtime_calls_ = 0;  // started and not answered yet
  std::deque<PullViewPtr> history_;
  PullCounters counters_;
  bool content_down_ = false;
  std::atomic<uint64_t> generation_{0};
  std::unique_ptr<ObservedPulls> observed_;
  // Manifests of finished pulls, for a minute: their leases may still be seen in containerd.
  std::deque<std::pair<Clock::time_point, CarriedPull>> carried_recently_;
  std::thread thread_;
};

}  // namespace statlet::pulls
