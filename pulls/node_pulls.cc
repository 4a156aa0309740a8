#include "pulls/node_pulls.h"

#include <time.h>

#include <algorithm>
#include <cmath>

#include <nlohmann/json.hpp>

#include "pulls/pull_engine.h"

namespace statlet::pulls {
namespace {

// RFC 3339 in UTC, to the second, as Kubernetes writes times.
std::string Rfc3339(int64_t unix_ns) {
  time_t secs = static_cast<time_t>(unix_ns / 1000000000);
  struct tm tm;
  gmtime_r(&secs, &tm);
  char buf[32];
  strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

// At most `max` bytes; a cut UTF-8 sequence is replaced when the JSON is written.
std::string Clip(const std::string& s, size_t max) { return s.size() <= max ? s : s.substr(0, max); }

}  // namespace

std::string NodePullsJson(const NodePullsOptions& options, const std::vector<PullViewPtr>& pulls, int64_t now_unix_ns,
                          bool with_time) {
  using nlohmann::json;
  // In flight first (all of them, up to the cap), then the most recently finished.
  std::vector<const PullView*> chosen;
  for (const auto& p : pulls) {
    if (!PullFinished(p->phase) && chosen.size() < kNodePullsMaxImages) chosen.push_back(p.get());
  }
  for (auto it = pulls.rbegin(); it != pulls.rend() && chosen.size() < kNodePullsMaxImages; ++it) {
    if (PullFinished((*it)->phase)) chosen.push_back(it->get());
  }
  std::sort(chosen.begin(), chosen.end(),
            [](const PullView* a, const PullView* b) { return a->started_unix_ns < b->started_unix_ns; });
  uint64_t pulling = 0, done = 0, failed = 0, bytes_done = 0, bytes_total = 0;
  json images = json::array();
  for (const PullView* p : chosen) {
    json e;
    e["image"] = Clip(p->image, 512);
    e["state"] = PullPhaseName(p->phase);
    e["bytesDone"] = p->offset;
    if (p->total) e["bytesTotal"] = *p->total;
    e["clients"] = p->subscribers;
    e["startTime"] = Rfc3339(p->started_unix_ns);
    if (!p->pods.empty()) {
      json pods = json::array();
      for (const auto& pod : p->pods) {
        pods.push_back(
            {{"namespace", Clip(pod.namespace_, 253)}, {"name", Clip(pod.name, 253)}, {"uid", Clip(pod.uid, 64)}});
      }
      e["pods"] = std::move(pods);
    }
    if (!p->layers.empty()) {
      json layers = json::array();
      for (const auto& l : p->layers) {
        if (layers.size() == kNodePullsMaxLayers) break;
        layers.push_back({{"digest", Clip(l.digest, 128)},
                          {"state", LayerStageName(l.stage)},
                          {"bytesDone", l.offset},
                          {"bytesTotal", l.size}});
      }
      e["layers"] = std::move(layers);
    }
    if (!PullFinished(p->phase)) {
      ++pulling;
      bytes_done += p->offset;
      bytes_total += p->total.value_or(0);
      e["bytesPerSecond"] = static_cast<uint64_t>(std::llround(std::max(0.0, p->bytes_per_second)));
      if (p->eta_seconds) e["etaSeconds"] = static_cast<uint64_t>(std::ceil(std::max(0.0, *p->eta_seconds)));
    } else {
      e["completionTime"] = Rfc3339(p->finished_unix_ns);
      if (p->phase == PullPhase::kSucceeded) {
        ++done;
        e["imageRef"] = Clip(p->image_ref, 512);
      } else {
        ++failed;
      }
    }
    if (!p->reason.empty()) e["reason"] = Clip(p->reason, 1000);
    images.push_back(std::move(e));
  }
  json status;
  status["nodeName"] = options.node_name;
  status["updateTime"] = with_time ? Rfc3339(now_unix_ns) : "";
  status["updatePeriodSeconds"] = options.period.count();
  status["pulling"] = pulling;
  status["done"] = done;
  status["failed"] = failed;
  status["bytesDone"] = bytes_done;
  status["bytesTotal"] = bytes_total;
  status["images"] = std::move(images);
  json obj;
  obj["apiVersion"] = kNodePullsApiVersion;
  obj["kind"] = kNodePullsKind;
  obj["metadata"] = {{"name", options.node_name}};
  obj["status"] = std::move(status);
  return obj.dump(-1, ' ', false, json::error_handler_t::replace);
}

NodePullsView::NodePullsView(PullEngine* engine, NodePullsOptions options, Listener listener)
    : engine_(engine), options_(std::move(options)), listener_(std::move(listener)) {
  Build();
}

NodePullsView::~NodePullsView() { Stop(); }

void NodePullsView::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] {
    std::unique_lock<std::mutex> lock(mu_);
    auto next = std::chrono::steady_clock::now() + options_.period;
    while (!cv_.wait_until(lock, next, [&] { return stop_; })) {
      lock.unlock();
      Build();
      lock.lock();
      next += options_.period;  // a fixed grid: the period does not drift
    }
  });
}

void NodePullsView::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void NodePullsView::Build() {
  const int64_t now =
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch()).count();
  auto pulls = engine_->Pulls();
  auto object = std::make_shared<const std::string>(NodePullsJson(options_, pulls, now));
  {
    std::lock_guard<std::mutex> lock(mu_);
    current_ = object;
    ++builds_;
  }
  if (listener_) listener_(object, NodePullsJson(options_, pulls, now, /*with_time=*/false));
}

std::shared_ptr<const std::string> NodePullsView::Current() const {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

uint64_t NodePullsView::builds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return builds_;
}

}  // namespace statlet::pulls
