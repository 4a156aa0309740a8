// PrometheusEncoder: renders the metric families of a Snapshot as Prometheus text 0.0.4 or
// OpenMetrics 1.0. The samples and their values come from the value path
// (metrics/snapshot_samples.h); this class only writes them.
//
// Writes straight into a caller-owned buffer whose capacity is reused. Each cgroup's escaped
// label block (`{container="…",id="…",…`) is rendered once per cgroup lifetime and cached;
// the cache is keyed by cgroup path and invalidated when the cgroup id, its creation time or
// the labelled fields of its runtime metadata change. The cache is walked in step with the
// path-sorted snapshot, so lookups need no hashing and vanished cgroups are evicted in the
// same pass. A family's own labels are rendered once per (family, position within the
// cgroup) and reused while their values repeat, which they do from cgroup to cgroup. Series
// order is stable: families in table order, cgroups in path order.
//
// The output is a function of the snapshot alone: the caches only save work.
//
// EncodeKept writes the same text as a rope of segments kept between calls (kept_text.h):
// one segment per family and cgroup, holding that cgroup's series of the family. A call
// walks the value path as Encode does, compares each sample with what the segment was
// rendered from (the value and its kind, the label values), and renders again only the
// segments where one differs, or whose cgroup came or was relabelled; the others are
// spliced in as they are, without a copy. The segments are the same in both formats (only
// the family headers differ), so a text and an OpenMetrics scrape share them.
//
// Not thread-safe: one caller at a time (the HTTP layer serialises encodes).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "exporters/exposition_text.h"
#include "exporters/kept_text.h"
#include "metrics/families.h"
#include "metrics/sample.h"
#include "metrics/snapshot_samples.h"
#include "snapshot/snapshot.h"

namespace statlet {

namespace series_line {
class DoubleMemo;
}

class PrometheusEncoder {
 public:
  // `kept_chunk_bytes`: the size of EncodeKept's text chunks (tests make them small).
  explicit PrometheusEncoder(metrics::SampleRules rules = {},
                             metrics::DeviceNames::Namer namer = metrics::BlockDeviceName,
                             size_t kept_chunk_bytes = 256 * 1024);
  ~PrometheusEncoder();

  // Replaces the contents of *out (keeping its capacity) with the exposition of the
  // snapshot's metric families. OpenMetrics output is not terminated: the caller appends
  // further families (self metrics) and "# EOF\n".
  void Encode(const Snapshot& snapshot, ExpositionFormat format, std::string* out);

  // The same text as Encode, as a rope of the segments kept between calls: only what
  // changed since the last call is rendered. Replaces *out; the rope it held is reused when
  // nothing else holds it any more. The rope stays valid after later calls.
  void EncodeKept(const Snapshot& snapshot, ExpositionFormat format, std::shared_ptr<const TextRope>* out);

  // What the last EncodeKept did and what the kept state holds.
  struct KeptStats {
    uint64_t series_rendered = 0;   // changed or new (a histogram counts once)
    uint64_t series_spliced = 0;    // kept as they were
    uint64_t families_whole = 0;    // rendered whole, as Encode does (their values all moved lately)
    size_t text_live_bytes = 0;     // the segments' text
    size_t text_chunk_bytes = 0;    // the chunks holding it (live and dead bytes)
    size_t text_spare_bytes = 0;    // retired chunks kept for reuse
    size_t index_bytes = 0;         // what each segment was rendered from, and the segments
    size_t label_combinations = 0;  // of the families' own labels, kept with their text
  };
  KeptStats kept_stats() const;

  size_t cached_cgroups() const { return cache_.size(); }
  uint64_t last_series() const { return series_; }
  // Label blocks rendered since construction (a block is rendered once per cgroup lifetime).
  uint64_t label_blocks_rendered() const { return blocks_rendered_; }
  // Left out of the last encoded snapshot by the cardinality caps.
  uint64_t dropped_cgroups() const { return samples_.dropped_cgroups(); }
  uint64_t dropped_interfaces() const { return samples_.dropped_interfaces(); }

 private:
  struct CgroupLabels {
    std::string path;
    uint64_t version = 0;  // new for every rendering of a block, never reused
    uint64_t cgroup_id = 0;
    int64_t created_ns = 0;
    std::shared_ptr<const ContainerMetadata> meta;  // held so the pointer identity stays valid
    std::string block;                              // `name{` excluded: `{container="…",id="…"`
  };
  // The rendered own labels of one sample position of a family: ",k=\"v\"…", then
  // kCopyChunk bytes of padding so that it can be copied in whole chunks.
  struct Extra {
    uint8_t n = 0;
    std::array<std::string, metrics::LabelValues::kMax> values;
    std::string rendered;
    size_t size = 0;  // of the text in `rendered`, without the padding
  };
  template <class Text>
  class Writer;
  class KeptWriter;
  struct Kept;
  struct KeptEvents;

  // Returns whether cache_ changed (a block rendered, added, dropped or moved).
  bool SyncLabelCache(const Snapshot& snapshot, size_t count);
  void RenderBlock(const CgroupStats& c, CgroupLabels* entry);
  void PackBlocks();
  const Extra& ExtraFor(const MetricFamily& f, size_t position, const metrics::LabelValues& labels);
  // `,label="value"…` of a family's own labels into *out, then padding for chunked copies;
  // returns the size without the padding.
  static size_t RenderLabelSuffix(const MetricFamily& f, const metrics::LabelValues& labels, std::string* out);
  // An event-scope family's series lines (no header) into *out.
  void RenderEvents(const MetricFamily& f, std::string* out);
  // A cgroup-scope family's series lines (no header) as Encode writes them, into EncodeKept's
  // chunks.
  void RenderFamily(const MetricFamily& f, size_t count, KeptTextStream& out);
  // EncodeKept's: an event-scope family's lines into the rope, kept while the events are the
  // same (Kept::Events).
  void KeepEvents(const MetricFamily& f, KeptEvents& e, TextRope& rope);
  const std::string& LeLabel(size_t bucket, double bound);

  metrics::SnapshotSamples samples_;
  std::array<std::string, kFamilyCount> text_headers_;
  std::array<std::string, kFamilyCount> om_headers_;
  std::array<std::vector<Extra>, kFamilyCount> extras_;
  // Every family's name in a slot of name_stride_ bytes (a multiple of the copy chunk).
  std::string names_;
  size_t name_stride_ = 0;

  std::vector<CgroupLabels> cache_;    // sorted by path, parallel to the encoded cgroups
  std::vector<CgroupLabels> scratch_;  // the previous cache while syncing (capacity reused)
  // The blocks of cache_ back to back, in cgroup order, then padding: a family's series read
  // them in one forward sweep instead of from one heap string per cgroup. Block i is
  // [block_starts_[i], block_starts_[i + 1]).
  // Packed again only when the cache changed.
  std::string blocks_;
  std::vector<size_t> block_starts_;
  std::vector<std::string> le_labels_;                // ",le=\"2e-06\"" for bucket i
  std::unique_ptr<series_line::DoubleMemo> doubles_;  // text of the doubles seen, across encodes
  std::string event_line_;                            // an event-scope sample's head (capacity reused)

  uint64_t series_ = 0;
  uint64_t blocks_rendered_ = 0;
  uint64_t block_versions_ = 0;
  struct KeptDeleter {
    void operator()(Kept* k) const;
  };
  size_t kept_chunk_bytes_;
  std::unique_ptr<Kept, KeptDeleter> kept_;  // EncodeKept's state (prometheus_kept.cc), made by its first call
};

}  // namespace statlet
