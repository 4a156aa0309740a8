#include "pulls/pull_engine.h"

#include <algorithm>
#include <optional>
#include <set>
#include <unordered_map>

#include "base/log.h"
#include "pulls/manifest_match.h"

namespace statlet::pulls {

const std::vector<double> kDurationBuckets = {1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800};

namespace {

// gRPC status codes the engine answers with (values of grpc::StatusCode).
constexpr int kCancelledCode = 1;
constexpr int kDeadlineExceededCode = 4;
constexpr int kResourceExhaustedCode = 8;
constexpr int kUnavailableCode = 14;

// Joins and runtime answers ask for a poll at once; a flood of them must not turn into a
// flood of content store calls.
constexpr std::chrono::milliseconds kMinPollGap{50};
// While a young pull has no manifest yet, polls come every kMinPollGap: the manifest lands
// within milliseconds of the start, and with it the image's total, which clients are told
// at once. Past this age a pull without a manifest is waiting on its registry.
constexpr std::chrono::seconds kFastResolveWindow{2};

int64_t UnixNow() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

std::string Seconds(std::chrono::seconds s) { return std::to_string(s.count()) + "s"; }

}  // namespace

std::string PullKey(const ImageName& name, const std::string& runtime_handler) {
  return runtime_handler.empty() ? name.Normalized() : name.Normalized() + " (" + runtime_handler + ")";
}

struct PullEngine::Pull {
  Pull(uint64_t id_, PullRequest r, Clock::time_point now, int64_t unix_now)
      : id(id_), request(std::move(r)), tracker(now, unix_now), started(now), started_unix_ns(unix_now) {}

  uint64_t id;
  PullRequest request;
  LayerTracker tracker;
  Clock::time_point started;
  int64_t started_unix_ns;
  std::unique_ptr<RuntimePuller::Call> call;
  std::vector<Subscription> subs;
  // Subscribers that stalled when nobody else followed the pull: they get their outcome
  // once the runtime has answered the cancellation, or at cancel_deadline.
  std::vector<std::pair<Subscription, PullOutcome>> awaiting;
  std::optional<PullOutcome> cancel_reason;
  Clock::time_point cancel_deadline;
  std::optional<RuntimePullResult> result;
  bool abandoned = false;
  bool final_manifest_checked = false;
  bool finished = false;  // answered and reported: removed at the end of the poll
  uint64_t joins = 0;
  uint64_t version = 0;
  std::vector<PodRef> pods;
  PullViewPtr view;

  // Remembers the pod a request was made for (each pod once, the first few).
  void AddPod(const std::optional<PodRef>& pod) {
    if (!pod || pods.size() >= kMaxPodsPerPull) return;
    if (std::find(pods.begin(), pods.end(), *pod) == pods.end()) pods.push_back(*pod);
  }
};

struct PullEngine::Note {
  std::shared_ptr<PullSubscriber> subscriber;
  PullViewPtr view;
  std::optional<PullOutcome> done;  // OnDone when set, else OnProgress
};

PullEngine::PullEngine(PullEngineOptions options, std::unique_ptr<ContentSource> content,
                       std::unique_ptr<RuntimePuller> runtime)
    : options_(std::move(options)), content_(std::move(content)), runtime_(std::move(runtime)) {
  counters_.duration_buckets.assign(kDurationBuckets.size(), 0);
}

PullEngine::~PullEngine() { Stop(); }

void PullEngine::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable() || stopping_) return;
  thread_ = std::thread([this] { Loop(); });
}

void PullEngine::Stop() {
  std::vector<Note> notes;
  {
    std::unique_lock<std::mutex> lock(mu_);
    if (stopping_ && !thread_.joinable() && pulls_.empty() && cancelling_.empty()) return;
    stopping_ = true;
    PullOutcome bye{PullOutcome::kCancelled, kUnavailableCode, "statlet is shutting down"};
    auto drop = [&](Pull* p) {
      if (p->call) p->call->Cancel();
      for (auto& s : p->subs) notes.push_back({s.subscriber, p->view, bye});
      for (auto& [s, o] : p->awaiting) notes.push_back({s.subscriber, p->view, bye});
      subscribers_ -= p->subs.size() + p->awaiting.size();
      p->subs.clear();
      p->awaiting.clear();
      if (!p->cancel_reason) p->cancel_reason = bye;
    };
    for (auto& [key, p] : pulls_) drop(p.get());
    for (auto& p : cancelling_) drop(p.get());
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
  Deliver(&notes);
  // Runtime calls answer their cancellation promptly; their callbacks use this object.
  std::unique_lock<std::mutex> lock(mu_);
  wake_.wait(lock, [&] { return runtime_calls_ == 0; });
  pulls_.clear();
  cancelling_.clear();
}

JoinResult PullEngine::Join(PullRequest request, std::shared_ptr<PullSubscriber> subscriber, SubscribeOptions options) {
  JoinResult out;
  PullViewPtr view;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) {
      out.error = {PullOutcome::kCancelled, kUnavailableCode, "statlet is shutting down"};
      return out;
    }
    if (subscribers_ >= options_.max_subscribers) {
      ++counters_.rejected;
      generation_.fetch_add(1, std::memory_order_relaxed);
      out.error = {PullOutcome::kFailed, kResourceExhaustedCode,
                   "too many pull calls in flight (" + std::to_string(options_.max_subscribers) + ")"};
      return out;
    }
    const auto now = options_.now();
    auto it = pulls_.find(request.key);
    Pull* p;
    if (it == pulls_.end()) {
      if (pulls_.size() + cancelling_.size() >= options_.max_pulls) {
        ++counters_.rejected;
        generation_.fetch_add(1, std::memory_order_relaxed);
        out.error = {PullOutcome::kFailed, kResourceExhaustedCode,
                     "too many images being pulled at once (" + std::to_string(options_.max_pulls) + ")"};
        return out;
      }
      std::string key = request.key;
      std::optional<PodRef> pod = request.pod;
      auto owned = std::make_unique<Pull>(next_id_++, std::move(request), now, UnixNow());
      p = owned.get();
      p->AddPod(pod);
      pulls_.emplace(std::move(key), std::move(owned));
      ++counters_.started;
      const uint64_t pull_id = p->id;
      // The runtime answers on one of its library's threads, never inside Start.
      ++runtime_calls_;
      p->call = runtime_->Start(p->request.runtime_request,
                                [this, pull_id](RuntimePullResult r) { RuntimeAnswered(pull_id, std::move(r)); });
      log::Debug("pull of " + p->request.key + " started");
    } else {
      p = it->second.get();
      ++p->joins;
      ++counters_.joins;
      p->AddPod(request.pod);
      if (p->abandoned) p->abandoned = false;
    }
    Subscription s;
    s.id = next_id_++;
    s.subscriber = subscriber;
    s.timeout = options.no_progress_timeout;
    s.joined = now;
    p->subs.push_back(s);
    ++subscribers_;
    out.subscription = s.id;
    PublishLocked(p);
    view = p->view;
    poke_ = true;
  }
  wake_.notify_all();
  subscriber->OnProgress(view);  // the first report does not wait for a poll
  return out;
}

void PullEngine::Leave(uint64_t subscription) {
  std::lock_guard<std::mutex> lock(mu_);
  auto erase_from = [&](Pull* p) {
    auto it = std::find_if(p->subs.begin(), p->subs.end(), [&](const Subscription& s) { return s.id == subscription; });
    if (it != p->subs.end()) {
      p->subs.erase(it);
      --subscribers_;
      return true;
    }
    auto at =
        std::find_if(p->awaiting.begin(), p->awaiting.end(), [&](const auto& a) { return a.first.id == subscription; });
    if (at != p->awaiting.end()) {
      p->awaiting.erase(at);
      --subscribers_;
      return true;
    }
    return false;
  };
  for (auto it = pulls_.begin(); it != pulls_.end(); ++it) {
    Pull* p = it->second.get();
    if (!erase_from(p)) continue;
    if (p->subs.empty()) {
      if (options_.keep_abandoned) {
        p->abandoned = true;
        log::Debug("pull of " + p->request.key + " continues with no client following it");
      } else {
        CancelLocked(p, {PullOutcome::kCancelled, kCancelledCode, "every client left"});
      }
    }
    PublishLocked(p);
    return;
  }
  for (auto& p : cancelling_) {
    if (erase_from(p.get())) return;
  }
}

void PullEngine::CancelLocked(Pull* p, PullOutcome reason) {
  p->cancel_reason = std::move(reason);
  p->cancel_deadline = options_.now() + options_.cancel_grace;
  if (p->call) p->call->Cancel();
  // A new request for the image starts a new pull rather than joining a cancelled one.
  auto it = pulls_.find(p->request.key);
  if (it != pulls_.end() && it->second.get() == p) {
    cancelling_.push_back(std::move(it->second));
    pulls_.erase(it);
  }
}

void PullEngine::RuntimeAnswered(uint64_t pull_id, RuntimePullResult result) {
  // Everything under the lock, the notification included: once runtime_calls_ is 0, Stop
  // may return and this object go away.
  std::lock_guard<std::mutex> lock(mu_);
  --runtime_calls_;
  for (auto& [key, p] : pulls_) {
    if (p->id == pull_id) p->result = result;
  }
  for (auto& p : cancelling_) {
    if (p->id == pull_id) p->result = result;
  }
  answered_ = true;
  wake_.notify_all();
}

void PullEngine::PublishLocked(Pull* p) {
  auto v = std::make_shared<PullView>();
  v->image = p->request.name.Normalized();
  p->tracker.Fill(v.get());
  if (p->result && p->result->grpc_code == 0) {
    v->phase = PullPhase::kSucceeded;
  } else if (!p->tracker.has_manifest()) {
    v->phase = PullPhase::kResolving;
  } else if (p->tracker.all_done()) {
    v->phase = PullPhase::kUnpacking;
  } else {
    v->phase = PullPhase::kDownloading;
  }
  v->started = p->started;
  v->started_unix_ns = p->started_unix_ns;
  v->subscribers = static_cast<int>(p->subs.size() + p->awaiting.size());
  v->joins = p->joins;
  v->pods = p->pods;
  v->version = ++p->version;
  p->view = std::move(v);
  generation_.fetch_add(1, std::memory_order_relaxed);
}

void PullEngine::FinishLocked(Pull* p, Clock::time_point now, std::vector<Note>* notes) {
  const RuntimePullResult& r = *p->result;
  PullOutcome outcome;
  auto v = std::make_shared<PullView>();
  v->image = p->request.name.Normalized();
  if (r.grpc_code == 0) {
    p->tracker.Complete(now);
    p->tracker.Fill(v.get());
    v->phase = PullPhase::kSucceeded;
    v->image_ref = r.image_ref;
    outcome = {PullOutcome::kSucceeded, 0, ""};
    ++counters_.succeeded;
    const double secs = std::chrono::duration<double>(now - p->started).count();
    for (size_t i = 0; i < kDurationBuckets.size(); ++i) {
      if (secs <= kDurationBuckets[i]) ++counters_.duration_buckets[i];
    }
    counters_.duration_sum += secs;
    ++counters_.duration_count;
  } else {
    p->tracker.Fill(v.get());
    if (p->cancel_reason) {
      outcome = *p->cancel_reason;
    } else {
      outcome = {PullOutcome::kFailed, r.grpc_code, r.message};
    }
    switch (outcome.kind) {
      case PullOutcome::kStalled:
        v->phase = PullPhase::kStalled;
        ++counters_.stalled;
        break;
      case PullOutcome::kCancelled:
        v->phase = PullPhase::kCancelled;
        ++counters_.cancelled;
        break;
      default:
        v->phase = PullPhase::kFailed;
        ++counters_.failed;
        break;
    }
    v->reason = outcome.message;
  }
  // The average over the whole pull, once it is over.
  const double secs = std::chrono::duration<double>(now - p->started).count();
  v->bytes_per_second = secs > 0 ? static_cast<double>(v->offset) / secs : 0;
  v->eta_seconds.reset();
  v->started = p->started;
  v->started_unix_ns = p->started_unix_ns;
  v->finished_unix_ns = UnixNow();
  v->joins = p->joins;
  v->pods = p->pods;
  v->version = ++p->version;
  p->view = v;
  generation_.fetch_add(1, std::memory_order_relaxed);
  for (auto& s : p->subs) notes->push_back({s.subscriber, v, outcome});
  for (auto& [s, own] : p->awaiting) {
    // Told to stop by its timeout, unless the runtime had the image anyway.
    notes->push_back({s.subscriber, v, r.grpc_code == 0 ? outcome : own});
  }
  subscribers_ -= p->subs.size() + p->awaiting.size();
  p->subs.clear();
  p->awaiting.clear();
  history_.push_back(v);
  while (history_.size() > options_.history) history_.pop_front();
  log::Debug("pull of " + p->request.key + " ended: " + PullPhaseName(v->phase) +
             (v->reason.empty() ? "" : " (" + v->reason + ")"));
}

void PullEngine::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  Clock::time_point next = Clock::now();
  Clock::time_point last_tick{};
  while (!stopping_) {
    if (pulls_.empty() && cancelling_.empty()) {
      wake_.wait(lock, [&] { return stopping_ || !pulls_.empty() || !cancelling_.empty(); });
      next = Clock::now();
    } else {
      wake_.wait_until(lock, next, [&] { return stopping_ || poke_ || answered_; });
    }
    if (stopping_) break;
    const auto earliest = last_tick + kMinPollGap;
    if (!answered_ && Clock::now() < earliest) {
      // Poked by a join right after a poll: wait out the gap (an answer or a stop ends it).
      wake_.wait_until(lock, earliest, [&] { return stopping_ || answered_; });
      if (stopping_) break;
    }
    poke_ = false;
    answered_ = false;
    lock.unlock();
    std::vector<Note> notes;
    Tick(&notes);
    Deliver(&notes);
    last_tick = Clock::now();
    lock.lock();
    next = last_tick + options_.poll_interval;
    const auto engine_now = options_.now();  // pulls' start times are on the engine's clock
    for (const auto& [key, p] : pulls_) {
      if (!p->tracker.has_manifest() && engine_now - p->started < kFastResolveWindow) {
        next = std::min(next, last_tick + kMinPollGap);
      }
    }
  }
}

// What one poll asks the content store about one pull (decided under the lock), and the
// manifest it read for it.
struct PullEngine::Ask {
  uint64_t id;
  ImageName name;
  int64_t started_unix_ns;
  bool need_manifest;
  std::string config_check;  // the runtime's answer, to confirm the manifest with
  std::vector<std::string> unfinished;
  std::optional<Manifest> manifest;
};

// One poll: the asks, then what the content store answered.
struct PullEngine::Poll {
  std::vector<Ask> asks;
  bool observed = false;  // ingests and committed blobs both read
  std::vector<Ingest> ingests;
  std::vector<BlobInfo> committed;
  Status error;  // the last call that failed
};

void PullEngine::Tick(std::vector<Note>* notes) {
  Poll poll;
  PlanPoll(&poll);
  AskContentStore(&poll);  // without the lock

  std::lock_guard<std::mutex> lock(mu_);
  const auto now = options_.now();
  NoteContentStoreLocked(poll.error);
  std::unordered_map<uint64_t, const Ask*> by_id;
  for (const Ask& a : poll.asks) by_id[a.id] = &a;
  // UpdateLocked may move a pull from pulls_ to cancelling_ (the object stays where it is).
  std::vector<Pull*> all;
  for (auto& [key, p] : pulls_) all.push_back(p.get());
  for (auto& p : cancelling_) all.push_back(p.get());
  for (Pull* p : all) {
    auto it = by_id.find(p->id);
    p->finished = UpdateLocked(p, it == by_id.end() ? nullptr : it->second, poll, now, notes);
  }
  std::erase_if(pulls_, [](const auto& kv) { return kv.second->finished; });
  std::erase_if(cancelling_, [](const auto& p) { return p->finished; });
  const auto cutoff = UnixNow() - std::chrono::duration_cast<std::chrono::nanoseconds>(options_.history_ttl).count();
  while (!history_.empty() && history_.front()->finished_unix_ns < cutoff) history_.pop_front();
}

void PullEngine::PlanPoll(Poll* poll) {
  std::lock_guard<std::mutex> lock(mu_);
  auto add = [&](Pull* p) {
    Ask a{p->id, p->request.name, p->started_unix_ns, !p->tracker.has_manifest(), "", p->tracker.Unfinished(), {}};
    if (p->result && p->result->grpc_code == 0 && !p->final_manifest_checked &&
        p->tracker.config_digest() != p->result->image_ref) {
      a.config_check = p->result->image_ref;
    }
    poll->asks.push_back(std::move(a));
  };
  for (auto& [key, p] : pulls_) add(p.get());
  for (auto& p : cancelling_) add(p.get());
}

void PullEngine::AskContentStore(Poll* poll) {
  auto in = content_->LayerIngests();
  if (!in.ok()) {
    poll->error = in.status();
    return;
  }
  poll->ingests = std::move(*in);
  std::set<std::string> downloading;
  for (const auto& i : poll->ingests) downloading.insert(i.digest);
  std::set<std::string> wanted;
  for (Ask& a : poll->asks) {
    ReadManifest(&a, downloading, &poll->error);
    if (a.manifest) {
      for (const auto& l : a.manifest->layers) wanted.insert(l.digest);
    }
    wanted.insert(a.unfinished.begin(), a.unfinished.end());
  }
  auto c = content_->Committed(std::vector<std::string>(wanted.begin(), wanted.end()));
  if (c.ok()) {
    poll->committed = std::move(*c);
    poll->observed = true;
  } else {
    poll->error = c.status();
  }
}

void PullEngine::ReadManifest(Ask* a, const std::set<std::string>& downloading, Status* error) {
  std::optional<std::string> digest;
  if (!a->config_check.empty()) {
    auto c = content_->ManifestsWithConfig(a->config_check);
    if (c.ok()) {
      if (auto i = PickByConfig(*c, a->name)) digest = (*c)[*i].digest;
    } else {
      *error = c.status();
    }
  } else if (a->need_manifest) {
    auto c = content_->ManifestsOf(a->name);
    if (c.ok()) {
      if (auto i = PickManifest(*c, a->name, a->started_unix_ns, downloading)) digest = (*c)[*i].digest;
    } else {
      *error = c.status();
    }
  }
  if (!digest) return;
  auto m = content_->ReadManifest(*digest);
  if (m.ok()) {
    a->manifest = std::move(*m);
  } else {
    *error = m.status();
  }
}

void PullEngine::NoteContentStoreLocked(const Status& error) {
  if (!error.ok()) {
    ++counters_.content_errors;
    generation_.fetch_add(1, std::memory_order_relaxed);
    if (!content_down_) {
      log::Warn("image pull progress unavailable: " + error.message() +
                "; pulls go on, reported without progress and without no-progress timeouts until it answers");
    }
    content_down_ = true;
  } else if (content_down_) {
    log::Info("image pull progress available again");
    content_down_ = false;
  }
}

bool PullEngine::UpdateLocked(Pull* p, const Ask* ask, const Poll& poll, Clock::time_point now,
                              std::vector<Note>* notes) {
  if (ask != nullptr) {
    if (ask->manifest) p->tracker.SetManifest(*ask->manifest);
    if (!ask->config_check.empty()) p->final_manifest_checked = true;
    if (poll.observed) p->tracker.Observe(now, poll.ingests, poll.committed);
  }
  if (p->result) {
    if (p->result->grpc_code == 0 && !p->final_manifest_checked && p->tracker.config_digest() != p->result->image_ref) {
      // Answered while this poll was under way: one more poll confirms the manifest
      // from the runtime's answer before the last report.
      answered_ = true;
      PublishLocked(p);
      return false;
    }
    // The runtime answered: the last observation is in, the pull is over.
    FinishLocked(p, now, notes);
    return true;
  }
  PublishLocked(p);
  // No-progress timeouts: only while observing (an unanswered content store says
  // nothing about bytes) and while bytes are expected (not while unpacking).
  const PullPhase phase = p->view->phase;
  const bool expecting_bytes =
      poll.observed && !content_down_ && (phase == PullPhase::kResolving || phase == PullPhase::kDownloading);
  if (expecting_bytes && !p->cancel_reason) {
    ApplyNoProgressTimeoutsLocked(p, now, notes);
    PublishLocked(p);
  }
  if (!p->awaiting.empty() && now >= p->cancel_deadline) {
    log::Warn("the runtime did not answer the cancellation of " + p->request.key + " within " +
              std::to_string(options_.cancel_grace.count()) + "ms; answering its clients anyway");
    for (auto& [s, o] : p->awaiting) notes->push_back({s.subscriber, p->view, o});
    subscribers_ -= p->awaiting.size();
    p->awaiting.clear();
  }
  for (auto& s : p->subs) notes->push_back({s.subscriber, p->view, std::nullopt});
  return false;
}

void PullEngine::ApplyNoProgressTimeoutsLocked(Pull* p, Clock::time_point now, std::vector<Note>* notes) {
  std::vector<Subscription> stalled;
  std::vector<Subscription> kept;
  for (auto& s : p->subs) {
    const auto basis = std::max(s.joined, p->tracker.last_progress());
    if (s.timeout.count() > 0 && now - basis >= s.timeout) {
      stalled.push_back(s);
    } else {
      kept.push_back(s);
    }
  }
  auto stall_outcome = [&](std::chrono::seconds t) {
    return PullOutcome{PullOutcome::kStalled, kDeadlineExceededCode,
                       "no progress for " + Seconds(t) + ": " + DescribeUnfinishedLayers(*p->view)};
  };
  if (!stalled.empty() && kept.empty()) {
    // The last followers stalled: cancel the runtime's pull, answer them once it is.
    for (auto& s : stalled) p->awaiting.emplace_back(s, stall_outcome(s.timeout));
    p->subs.clear();
    std::chrono::seconds shortest = stalled.front().timeout;
    for (auto& s : stalled) shortest = std::min(shortest, s.timeout);
    log::Info("image pull of " + p->request.key + " cancelled: " + stall_outcome(shortest).message);
    CancelLocked(p, stall_outcome(shortest));
  } else if (!stalled.empty()) {
    for (auto& s : stalled) notes->push_back({s.subscriber, p->view, stall_outcome(s.timeout)});
    subscribers_ -= stalled.size();
    p->subs = std::move(kept);
  }
  if (p->subs.empty() && p->awaiting.empty() && p->abandoned && options_.abandoned_no_progress_timeout.count() > 0 &&
      now - p->tracker.last_progress() >= options_.abandoned_no_progress_timeout) {
    auto o = stall_outcome(options_.abandoned_no_progress_timeout);
    log::Info("image pull of " + p->request.key + " (no client left) cancelled: " + o.message);
    CancelLocked(p, o);
  }
}

void PullEngine::Deliver(std::vector<Note>* notes) {
  for (auto& n : *notes) {
    if (n.done) {
      n.subscriber->OnDone(n.view, *n.done);
    } else {
      n.subscriber->OnProgress(n.view);
    }
  }
  notes->clear();
}

std::vector<PullViewPtr> PullEngine::Pulls() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PullViewPtr> out(history_.begin(), history_.end());
  for (const auto& [key, p] : pulls_) out.push_back(p->view);
  for (const auto& p : cancelling_) out.push_back(p->view);
  std::sort(out.begin(), out.end(),
            [](const PullViewPtr& a, const PullViewPtr& b) { return a->started_unix_ns < b->started_unix_ns; });
  const auto cutoff = UnixNow() - std::chrono::duration_cast<std::chrono::nanoseconds>(options_.history_ttl).count();
  out.erase(
      std::remove_if(out.begin(), out.end(),
                     [&](const PullViewPtr& v) { return v->finished_unix_ns != 0 && v->finished_unix_ns < cutoff; }),
      out.end());
  return out;
}

PullCounters PullEngine::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

}  // namespace statlet::pulls
