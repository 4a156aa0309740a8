// The /metrics body: the container families of a snapshot (encoded once per snapshot and
// format, re-rendering only what changed since the last snapshot (PrometheusEncoder::
// EncodeKept), and shared by every scrape served from that snapshot) followed by statlet's self
// metrics and the extra families (image pulls), rendered fresh for each scrape, as one text
// or one gzip stream.
//
// Thread-safe: one Build at a time inside (the encoder is not), callers may be many.
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"
#include "exporters/gzip_compressor.h"
#include "exporters/prometheus_encoder.h"
#include "exporters/self_metrics.h"
#include "metrics/extra_families.h"
#include "snapshot/snapshot_source.h"

namespace statlet {

class ExpositionBuilder {
 public:
  // `self` may be null (no self metrics); it must outlive the builder.
  ExpositionBuilder(metrics::SampleRules rules, SelfMetrics* self, int gzip_level = 1);

  // A response body in two parts, to be sent one after the other: `head` is shared with
  // other scrapes of the same snapshot (never modified once returned), `tail` is this
  // scrape's. A plain head is the encoder's rope of kept segments; a gzip head one piece.
  struct Body {
    std::shared_ptr<const TextRope> head;
    std::string tail;
    size_t size() const { return head->size + tail.size(); }
  };
  StatusOr<Body> Build(const SnapshotPtr& snap, const SamplerStats& sampler, ExpositionFormat format, bool gzip);

  // Encodes actually done (the rest reused a head).
  uint64_t encodes() const;
  // Before the first Build: families collected and rendered after the self metrics in
  // every tail (`families` outlives the builder).
  void AddFamilies(const metrics::ExtraSource* families) { extras_.push_back(families); }

 private:
  struct Cached {
    uint64_t sequence = UINT64_MAX;
    std::shared_ptr<const TextRope> head;
    std::shared_ptr<std::string> gzip;  // a gzip head's bytes (reused when no response holds them)
    // What the caps left out of the encoded snapshot.
    uint64_t dropped_cgroups = 0;
    uint64_t dropped_interfaces = 0;
  };

  std::mutex mu_;
  SelfMetrics* self_;
  std::vector<const metrics::ExtraSource*> extras_;
  metrics::MetricSelection selection_;  // which extra families are served (before encoder_: rules move there)
  PrometheusEncoder encoder_;
  GzipCompressor gzip_[2];  // per format: keeps the state after its head
  std::string tail_scratch_;
  Cached heads_[2][2];  // [format][gzip]
  uint64_t encodes_ = 0;
};

}  // namespace statlet
