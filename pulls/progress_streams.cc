#include "pulls/progress_streams.h"

#include <map>
#include <set>
#include <string>
#include <utility>

#include "pulls/progress_line.h"

namespace statlet::pulls {

class ProgressStreams::Stream final : public ByteStream {
 public:
  Stream(ProgressTarget target, size_t max_entries, std::shared_ptr<std::atomic<size_t>> open)
      : target_(std::move(target)), max_entries_(max_entries), open_(std::move(open)) {}
  ~Stream() override { Close(); }

  bool Take(std::string* out, std::function<void()> wake) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = slots_.begin(); it != slots_.end();) {
      Slot& s = it->second;
      if (s.dirty) {
        AppendProgressLine(s.entry, out);
        s.dirty = false;
        if (s.last) {
          it = slots_.erase(it);
          continue;
        }
      }
      ++it;
    }
    if (ended_) return false;
    if (out->empty()) wake_ = std::move(wake);
    return true;
  }

  void Close() override {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return;
    closed_ = true;
    wake_ = nullptr;
    slots_.clear();
    finished_.clear();
    open_->fetch_sub(1, std::memory_order_relaxed);
  }

  // The reader gets what is kept, then the end of the answer.
  void End() {
    std::lock_guard<std::mutex> lock(mu_);
    ended_ = true;
    WakeLocked();
  }

  // Takes in the pulls as they are now; false once the reader has left.
  bool Update(const std::vector<PullViewPtr>& pulls) {
    std::lock_guard<std::mutex> lock(mu_);
    if (closed_) return false;
    std::set<std::string> present;
    for (const PullViewPtr& v : pulls) {
      if (!v || !Follows(target_, *v)) continue;
      std::string key = v->image + "@" + std::to_string(v->started_unix_ns);
      if (finished_.count(key) != 0) {
        present.insert(std::move(key));
        continue;
      }
      const bool running = InFlight(*v);
      if (first_ && !running) {  // finished before the stream opened: not followed
        finished_.insert(key);
        present.insert(std::move(key));
        continue;
      }
      for (const LayerState& l : v->layers) {
        const uint64_t progress = LayerDone(l.stage) ? l.size : l.offset;
        Put({v->image, l.digest, static_cast<int64_t>(progress), static_cast<int64_t>(l.size), ""}, !running);
      }
      const bool failed =
          v->phase == PullPhase::kFailed || v->phase == PullPhase::kStalled || v->phase == PullPhase::kCancelled;
      if (!running && failed) {
        std::string why = v->reason.empty() ? PullPhaseName(v->phase) : v->reason;
        Put({v->image, "", static_cast<int64_t>(v->offset), static_cast<int64_t>(v->total.value_or(0)), why}, true);
      }
      if (!running) finished_.insert(key);
      present.insert(std::move(key));
    }
    first_ = false;
    // Pulls that left the engine's history cannot come back: their keys go.
    for (auto it = finished_.begin(); it != finished_.end();) {
      it = present.count(*it) != 0 ? std::next(it) : finished_.erase(it);
    }
    if (dirty_) WakeLocked();
    return true;
  }

 private:
  struct Slot {
    ProgressEntry entry;
    bool dirty = false;
    bool last = false;  // the pull finished: dropped once sent
  };

  void Put(ProgressEntry e, bool last) {
    std::string key = e.image + '\n' + e.layer;
    auto it = slots_.find(key);
    if (it == slots_.end()) {
      if (slots_.size() >= max_entries_) return;
      it = slots_.emplace(std::move(key), Slot{}).first;
    } else if (it->second.entry == e) {
      if (last && !it->second.dirty) slots_.erase(it);  // sent as it ends
      else it->second.last = last;
      return;
    }
    it->second.entry = std::move(e);
    it->second.dirty = true;
    it->second.last = last;
    dirty_ = true;
  }

  void WakeLocked() {
    dirty_ = false;
    if (!wake_) return;
    // The sender's wake only schedules its next Take (it never takes this lock inline).
    auto wake = std::move(wake_);
    wake_ = nullptr;
    wake();
  }

  const ProgressTarget target_;
  const size_t max_entries_;
  const std::shared_ptr<std::atomic<size_t>> open_;
  std::mutex mu_;
  std::map<std::string, Slot> slots_;  // by image and layer
  std::set<std::string> finished_;     // pulls (image@start) sent to their end
  std::function<void()> wake_;
  bool first_ = true;
  bool dirty_ = false;
  bool ended_ = false;
  bool closed_ = false;
};

ProgressStreams::ProgressStreams(ProgressFeed feed, ProgressStreamsOptions options)
    : feed_(std::move(feed)), options_(options), open_(std::make_shared<std::atomic<size_t>>(0)) {
  // Read before the thread starts: a change between here and its first look is not missed.
  const uint64_t seen = feed_.generation();
  thread_ = std::thread([this, seen] { Loop(seen); });
}

ProgressStreams::~ProgressStreams() { Stop(); }

std::shared_ptr<ByteStream> ProgressStreams::Open(const ProgressTarget& target) {
  if (open_->fetch_add(1, std::memory_order_relaxed) >= options_.max_streams) {
    open_->fetch_sub(1, std::memory_order_relaxed);
    return nullptr;
  }
  auto s = std::make_shared<Stream>(target, options_.max_entries, open_);
  s->Update(feed_.pulls());
  std::lock_guard<std::mutex> lock(mu_);
  if (stop_) {
    s->End();
  } else {
    streams_.push_back(s);
    cv_.notify_all();
  }
  return s;
}

void ProgressStreams::Loop(uint64_t seen) {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    if (streams_.empty()) {
      cv_.wait(lock, [&] { return stop_ || !streams_.empty(); });
      continue;
    }
    cv_.wait_for(lock, options_.interval, [&] { return stop_; });
    if (stop_) break;
    const uint64_t generation = feed_.generation();
    std::vector<std::shared_ptr<Stream>> live;
    for (auto it = streams_.begin(); it != streams_.end();) {
      if (auto s = it->lock()) {
        live.push_back(std::move(s));
        ++it;
      } else {
        it = streams_.erase(it);
      }
    }
    if (generation == seen || live.empty()) continue;
    seen = generation;
    lock.unlock();
    const std::vector<PullViewPtr> pulls = feed_.pulls();
    std::vector<Stream*> gone;
    for (const auto& s : live) {
      if (!s->Update(pulls)) gone.push_back(s.get());
    }
    live.clear();  // a stream's last owner may be this loop: released outside mu_
    lock.lock();
    for (auto it = streams_.begin(); it != streams_.end();) {
      auto s = it->lock();
      bool drop = !s;
      for (Stream* g : gone) drop = drop || s.get() == g;
      it = drop ? streams_.erase(it) : std::next(it);
    }
  }
}

void ProgressStreams::Stop() {
  std::vector<std::shared_ptr<Stream>> live;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stop_ && !thread_.joinable()) return;
    stop_ = true;
    for (auto& w : streams_) {
      if (auto s = w.lock()) live.push_back(std::move(s));
    }
    streams_.clear();
    cv_.notify_all();
  }
  if (thread_.joinable()) thread_.join();
  for (auto& s : live) s->End();
}

}  // namespace statlet::pulls
