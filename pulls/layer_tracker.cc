#include "pulls/layer_tracker.h"

#include <algorithm>
#include <unordered_map>

namespace statlet::pulls {
namespace {

// The rate is taken over the polls of the last few seconds: long enough to smooth the
// bursts of a TCP stream, short enough to follow a change of speed.
constexpr std::chrono::seconds kRateWindow{5};

}  // namespace

LayerTracker::LayerTracker(Clock::time_point started, int64_t started_unix_ns)
    : started_(started), started_unix_ns_(started_unix_ns), last_progress_(started), last_poll_(started) {}

void LayerTracker::SetManifest(const Manifest& manifest) {
  std::unordered_map<std::string, Layer> known;
  for (auto& l : layers_) known.emplace(l.state.digest, std::move(l));
  layers_.clear();
  layers_.reserve(manifest.layers.size());
  for (const auto& ml : manifest.layers) {
    Layer l;
    if (auto it = known.find(ml.digest); it != known.end()) l = it->second;
    l.state.digest = ml.digest;
    l.state.size = ml.size;
    l.state.offset = std::min(l.state.offset, ml.size);
    layers_.push_back(std::move(l));
  }
  manifest_digest_ = manifest.digest;
  config_digest_ = manifest.config_digest;
}

std::vector<std::string> LayerTracker::Unfinished() const {
  std::vector<std::string> out;
  for (const auto& l : layers_) {
    if (!LayerDone(l.state.stage)) out.push_back(l.state.digest);
  }
  return out;
}

bool LayerTracker::Observe(Clock::time_point now, const std::vector<Ingest>& ingests,
                           const std::vector<BlobInfo>& committed) {
  std::unordered_map<std::string, const Ingest*> active;
  for (const auto& in : ingests) active.emplace(in.digest, &in);
  std::unordered_map<std::string, const BlobInfo*> done;
  for (const auto& b : committed) done.emplace(b.digest, &b);
  bool moved = false;
  for (auto& l : layers_) {
    LayerState& s = l.state;
    if (LayerDone(s.stage)) continue;
    if (auto it = done.find(s.digest); it != done.end()) {
      s.stage = it->second->created_unix_ns < started_unix_ns_ ? LayerStage::kPresent : LayerStage::kDownloaded;
      s.offset = s.size;
      moved = true;
      continue;
    }
    if (auto it = active.find(s.digest); it != active.end()) {
      const Ingest& in = *it->second;
      if (s.stage != LayerStage::kDownloading || in.offset != l.raw_offset) moved = true;
      s.stage = LayerStage::kDownloading;
      l.raw_offset = in.offset;
      s.offset = std::max(s.offset, std::min(in.offset, s.size));
    }
    // Neither: not started, or between its ingest closing and its commit showing; a
    // layer that was downloading keeps its stage and offset until the commit shows.
  }
  if (moved) last_progress_ = now;
  last_poll_ = now;
  Sample(now);
  return moved;
}

void LayerTracker::Complete(Clock::time_point now) {
  for (auto& l : layers_) {
    if (LayerDone(l.state.stage)) continue;
    l.state.stage = LayerStage::kDownloaded;
    l.state.offset = l.state.size;
  }
  last_poll_ = now;
}

bool LayerTracker::all_done() const {
  if (!has_manifest()) return false;
  for (const auto& l : layers_) {
    if (!LayerDone(l.state.stage)) return false;
  }
  return true;
}

uint64_t LayerTracker::Offset() const {
  uint64_t sum = 0;
  for (const auto& l : layers_) sum += l.state.offset;
  return sum;
}

void LayerTracker::Sample(Clock::time_point now) {
  samples_.emplace_back(now, Offset());
  while (samples_.size() > 2 && now - samples_[1].first >= kRateWindow) samples_.pop_front();
}

void LayerTracker::Fill(PullView* view) const {
  view->layers.clear();
  view->layers.reserve(layers_.size());
  for (const auto& l : layers_) view->layers.push_back(l.state);
  view->offset = Offset();
  if (has_manifest()) {
    uint64_t total = 0;
    for (const auto& l : layers_) total += l.state.size;
    view->total = total;
  } else {
    view->total.reset();
  }
  view->last_progress = last_progress_;
  view->bytes_per_second = 0;
  view->eta_seconds.reset();
  if (samples_.size() >= 2) {
    const auto& [t0, o0] = samples_.front();
    const auto& [t1, o1] = samples_.back();
    double dt = std::chrono::duration<double>(t1 - t0).count();
    if (dt > 0 && o1 >= o0) view->bytes_per_second = static_cast<double>(o1 - o0) / dt;
  }
  if (view->total && view->bytes_per_second > 0 && *view->total >= view->offset) {
    view->eta_seconds = static_cast<double>(*view->total - view->offset) / view->bytes_per_second;
  }
}

}  // namespace statlet::pulls
