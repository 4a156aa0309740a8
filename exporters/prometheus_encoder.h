// PrometheusEncoder: renders a Snapshot as Prometheus text 0.0.4 or OpenMetrics 1.0.
//
// Writes straight from the snapshot into a caller-owned buffer whose capacity is reused.
// Each cgroup's escaped label block (`{container="…",id="…",…`) is rendered once per
// cgroup lifetime and cached; the cache is keyed by cgroup path and invalidated when the
// cgroup id, its creation time or the labelled fields of its runtime metadata change. The cache is walked in step
// with the path-sorted snapshot, so lookups need no hashing and vanished cgroups are evicted
// in the same pass. Series order is stable: families in table order, cgroups in path order.
//
// Apart from statlet_cardinality_dropped_total (a sum over collections), the output is a
// function of the snapshot alone: the caches only save work, and no series' labels depend
// on what an earlier encode saw (the OOM kills are labelled from the events themselves).
//
// Not thread-safe: one caller at a time (the HTTP layer serialises encodes).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "collector/snapshot.h"
#include "collector/snapshot_source.h"
#include "exporters/exposition_text.h"
#include "exporters/metric_families.h"

namespace statlet {

struct EncoderOptions {
  // cAdvisor's per-CPU mode: container_cpu_usage_seconds_total gets one series per CPU
  // (cpu="cpu00"…, zero values left out) instead of cpu="total", when per-CPU time is known.
  bool per_cpu = false;
  // Cardinality guard: at most this many cgroups (in path order) and interfaces per network
  // namespace are exposed; 0 = no cap. What is left out is counted in
  // statlet_cardinality_dropped_total.
  size_t max_cgroups = 0;
  size_t max_interfaces = 0;
  std::string version = "unknown";
  std::string revision = "unknown";
};

// Names a block device for the `device` label ("/dev/sda"); called once per device.
using DeviceNamer = std::function<std::string(uint32_t major, uint32_t minor)>;
// Reads /sys/dev/block/<major>:<minor>/uevent; falls back to "<major>:<minor>".
std::string SysfsDeviceName(uint32_t major, uint32_t minor);

class PrometheusEncoder {
 public:
  explicit PrometheusEncoder(EncoderOptions options, DeviceNamer namer = SysfsDeviceName);

  // Replaces the contents of *out (keeping its capacity) with the exposition of `snapshot`.
  // `sampler` feeds the single-flight self-metrics.
  void Encode(const Snapshot& snapshot, const SamplerStats& sampler, ExpositionFormat format,
              std::string* out);

  size_t cached_cgroups() const { return cache_.size(); }
  uint64_t last_series() const { return series_; }
  // Label blocks rendered since construction (a block is rendered once per cgroup lifetime).
  uint64_t label_blocks_rendered() const { return blocks_rendered_; }

 private:
  struct CgroupLabels {
    std::string path;
    uint64_t cgroup_id = 0;
    int64_t created_ns = 0;
    std::shared_ptr<const ContainerMetadata> meta;  // held so the pointer identity stays valid
    std::string block;                              // `name{` excluded: `{container="…",id="…"`
  };
  struct StringHash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  using SuffixMap = std::unordered_map<std::string, std::string, StringHash, std::equal_to<>>;

  void SyncLabelCache(const Snapshot& snapshot, size_t count);
  void RenderBlock(const CgroupStats& c, CgroupLabels* entry);
  void EncodeCgroupFamily(const MetricFamily& f, const Snapshot& s, size_t count);
  void EncodeHistogram(const MetricFamily& f, size_t cgroup, const std::vector<uint64_t>& log2_us_buckets,
                       const Opt<uint64_t>& sum_ns);
  void EncodeEventFamily(const MetricFamily& f, const Snapshot& s);
  void EncodeProcessFamily(const MetricFamily& f, const Snapshot& s, const SamplerStats& sampler);
  const std::string& CpuSuffix(size_t cpu);
  const std::string& LeSuffix(size_t bucket);
  const std::string& DeviceSuffix(uint32_t major, uint32_t minor);
  const std::string& InterfaceSuffix(std::string_view name);
  const std::string& BlkioSuffix(uint32_t major, uint32_t minor);
  const std::string& CachedSuffix(SuffixMap* map, std::string_view label, std::string_view value);

  // Sample writers: `name` + block + extra (",k=\"v\"") + "} " + value + "\n".
  void Begin(const MetricFamily& f, size_t cgroup, std::string_view extra, std::string_view extra2 = {});
  // The same for a histogram's samples: `name` + `sample_suffix` ("_bucket", "_count", "_sum").
  void BeginSuffixed(const MetricFamily& f, std::string_view sample_suffix, size_t cgroup, std::string_view extra);
  void SampleU(const MetricFamily& f, size_t cgroup, std::string_view extra, uint64_t v);
  void SampleScaled(const MetricFamily& f, size_t cgroup, std::string_view extra, uint64_t v, int decimals);
  void SampleD(const MetricFamily& f, size_t cgroup, std::string_view extra, double v);

  EncoderOptions options_;
  DeviceNamer namer_;
  std::array<std::string, kFamilyCount> text_headers_;
  std::array<std::string, kFamilyCount> om_headers_;

  std::vector<CgroupLabels> cache_;     // sorted by path, parallel to the encoded cgroups
  std::vector<CgroupLabels> scratch_;   // the previous cache while syncing (capacity reused)
  std::vector<std::string> cpu_suffixes_;
  std::unordered_map<uint64_t, std::string> device_suffixes_;
  SuffixMap interface_suffixes_;
  std::unordered_map<uint64_t, std::string> blkio_suffixes_;  // device, major, minor
  SuffixMap fs_device_suffixes_;
  SuffixMap page_size_suffixes_;
  SuffixMap drop_reason_suffixes_;
  std::vector<std::string> le_suffixes_;  // ",le=\"2e-06\"" for log2 bucket i (2^(i+1) us)

  std::string* out_ = nullptr;
  uint64_t series_ = 0;
  uint64_t blocks_rendered_ = 0;
  // statlet_cardinality_dropped_total, summed once per snapshot sequence.
  uint64_t dropped_cgroups_ = 0;
  uint64_t dropped_interfaces_ = 0;
  uint64_t last_counted_sequence_ = UINT64_MAX;
};

}  // namespace statlet
