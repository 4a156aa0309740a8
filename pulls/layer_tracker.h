// LayerTracker: the progress of one pull, layer by layer, from what the content store
// shows at each poll: ingests in flight (bytes written so far) and committed blobs. Pure
// logic, no I/O: the engine feeds it.
//
// Rules:
//   * The total is the sum of the manifest's layer sizes (the config is not counted).
//   * A layer committed before the pull started is present; one committed since then is
//     downloaded; both count in full.
//   * Reported offsets never go back: a restarted layer keeps its high-water mark.
//   * Bytes "moved" when any layer's raw ingest offset changed, an ingest appeared or a
//     layer was committed; the time of the poll that saw it is the last progress.
#pragma once

#include <deque>
#include <string>
#include <utility>
#include <vector>

#include "pulls/content_source.h"
#include "pulls/pull_view.h"

namespace statlet::pulls {

class LayerTracker {
 public:
  LayerTracker(Clock::time_point started, int64_t started_unix_ns);

  bool has_manifest() const { return !manifest_digest_.empty(); }
  const std::string& manifest_digest() const { return manifest_digest_; }
  const std::string& config_digest() const { return config_digest_; }
  // Adopts the manifest's layers, keeping what is known of layers both share.
  void SetManifest(const Manifest& manifest);

  // Layers not done yet: what to ask the content store about.
  std::vector<std::string> Unfinished() const;
  // One poll: `ingests` are all layer ingests in flight, `committed` the committed blobs
  // among Unfinished(). Returns whether bytes moved since the previous poll.
  bool Observe(Clock::time_point now, const std::vector<Ingest>& ingests, const std::vector<BlobInfo>& committed);
  // The runtime has the image: layers not seen committed are done too.
  void Complete(Clock::time_point now);

  bool all_done() const;
  Clock::time_point last_progress() const { return last_progress_; }
  // Fills the progress fields of `view` (total, offset, layers, rate, ETA, last progress).
  void Fill(PullView* view) const;

 private:
  struct Layer {
    LayerState state;
    uint64_t raw_offset = 0;  // the ingest's offset at the last poll
  };
  uint64_t Offset() const;
  void Sample(Clock::time_point now);

  Clock::time_point started_;
  int64_t started_unix_ns_;
  std::string manifest_digest_, config_digest_;
  std::vector<Layer> layers_;
  Clock::time_point last_progress_;
  Clock::time_point last_poll_;
  std::deque<std::pair<Clock::time_point, uint64_t>> samples_;  // (poll time, offset) for the rate
};

}  // namespace statlet::pulls
