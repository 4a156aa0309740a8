#include "exporters/self_metrics.h"

#include <prometheus/text_serializer.h>

#include <sstream>

namespace statlet {
namespace {

using prometheus::BuildCounter;
using prometheus::BuildGauge;
using prometheus::BuildHistogram;

// Collections and scrapes take from microseconds (a few cgroups) to seconds (thousands).
const prometheus::Histogram::BucketBoundaries& DurationBuckets() {
  static const auto* b = new prometheus::Histogram::BucketBoundaries{0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05,
                                                                     0.1,    0.25,  0.5,    1,     2.5,  5,     10};
  return *b;
}

std::string_view StripTotal(std::string_view name) {
  constexpr std::string_view kTotal = "_total";
  if (name.size() > kTotal.size() && name.substr(name.size() - kTotal.size()) == kTotal) {
    return name.substr(0, name.size() - kTotal.size());
  }
  return name;
}

void AppendLabels(const std::vector<prometheus::ClientMetric::Label>& labels, std::string_view extra_name,
                  double extra_value, bool has_extra, std::string* out) {
  if (labels.empty() && !has_extra) return;
  out->push_back('{');
  bool first = true;
  for (const auto& l : labels) {
    if (!first) out->push_back(',');
    first = false;
    out->append(l.name).append("=\"");
    AppendEscapedLabelValue(out, l.value);
    out->push_back('"');
  }
  if (has_extra) {
    if (!first) out->push_back(',');
    out->append(extra_name).append("=\"");
    AppendCanonicalFloat(out, extra_value);
    out->push_back('"');
  }
  out->push_back('}');
}

}  // namespace

namespace {

// Names and help of every self-metric family, in exposition order (also docs/metrics.md).
enum Self : size_t {
  kBuildInfo,
  kCollectionDuration,
  kScrapeDuration,
  kScrapeError,
  kCgroupsTracked,
  kCgroupsReported,
  kFilesRead,
  kFilesCached,
  kCollections,
  kJoins,
  kReuses,
  kReadErrors,
  kDropped,
  kProbeUp,
  kProbeLost,
  kRuntimeUp,
  kRuntimeInfo,
  kCriCalls,
  kCriDuration,
  kOtlpRequests,
  kOtlpFailures,
  kOtlpDropped,
  kOtlpRejected,
  kOtlpQueueBytes,
  kExitWatcherRealtime,
  kExitWatcherMissed,
  kExitWatcherNice,
  kSelfCount,
};
constexpr SelfMetricDescription kSelf[kSelfCount] = {
    {"statlet_build_info", "gauge", "A constant 1 labelled with statlet's version and revision."},
    {"statlet_collection_duration_seconds", "histogram",
     "Duration of statlet's collections (every cgroup file, namespace and probe read of one snapshot), in seconds."},
    {"statlet_scrape_duration_seconds", "histogram",
     "Time from a /metrics request to its body being ready (collection or reuse, encoding, compression), in "
     "seconds."},
    {"container_scrape_error", "gauge", "1 if there was an error while getting container metrics, 0 otherwise."},
    {"statlet_cgroups_tracked", "gauge", "Cgroups tracked by discovery."},
    {"statlet_cgroups_reported", "gauge", "Cgroups reported in the snapshot being served."},
    {"statlet_collection_files_read", "gauge",
     "Cgroup files the collection of the snapshot being served read (or had rendered by the eBPF iterator)."},
    {"statlet_collection_files_cached", "gauge",
     "Cgroup limit files the collection of the snapshot being served took from memory, unwritten since last read."},
    {"statlet_collections_total", "counter", "Collections run by the sampler."},
    {"statlet_scrape_joins_total", "counter",
     "Requests that joined a collection already in flight instead of starting one."},
    {"statlet_snapshot_reuses_total", "counter", "Requests served a snapshot younger than the configured max age."},
    {"statlet_read_errors_total", "counter", "Failed reads of cgroup and proc files since start, by file and reason."},
    {"statlet_cardinality_dropped_total", "counter",
     "Cgroups and interfaces left out by the cardinality caps, summed over the snapshots served."},
    {"statlet_bpf_probe_up", "gauge",
     "Whether an eBPF probe (each name --bpf.probes takes has a series) is loaded and attached (1) or not (0)."},
    {"statlet_bpf_lost_events_total", "counter",
     "Updates an eBPF probe's kernel side could not record (full map or ring buffer)."},
    {"statlet_runtime_up", "gauge", "Whether the node runtime's CRI endpoint answers (1) or not (0)."},
    {"statlet_runtime_info", "gauge",
     "A constant 1 labelled with the name and version the node runtime reports, while it answers."},
    {"statlet_cri_calls_total", "counter", "CRI calls answered on statlet's socket, by method and gRPC status code."},
    {"statlet_cri_call_duration_seconds", "histogram",
     "Time to answer CRI calls on statlet's socket, by method, in seconds."},
    {"statlet_otlp_requests_total", "counter", "OTLP export requests the receiver accepted (fully or partly)."},
    {"statlet_otlp_request_failures_total", "counter",
     "OTLP export attempts that failed, by kind: retryable (retried later) or permanent (batch dropped)."},
    {"statlet_otlp_dropped_batches_total", "counter",
     "OTLP batches never delivered, by reason: queue_full (oldest dropped), permanent (non-retryable answer), "
     "expired (retried for too long)."},
    {"statlet_otlp_rejected_points_total", "counter",
     "Data points OTLP receivers rejected in partial-success answers."},
    {"statlet_otlp_queue_bytes", "gauge", "Serialized bytes of the OTLP batches waiting to be sent."},
    {"statlet_exit_watcher_realtime", "gauge",
     "Whether the exit watcher's thread runs real-time (SCHED_FIFO: 1) or as an ordinary thread at its nice value "
     "(0); absent without exit records."},
    {"statlet_exit_watcher_missed_total", "counter",
     "Emptied containers whose cgroup was removed before the exit watcher's final read (no exit record)."},
    {"statlet_exit_watcher_nice", "gauge",
     "The exit watcher thread's nice value (-10 when statlet may raise it; what applies when not real-time); "
     "absent without exit records."},
};

template <typename Builder>
auto& Register(Builder builder, Self which, prometheus::Registry& r) {
  return builder.Name(kSelf[which].name).Help(kSelf[which].help).Register(r);
}

}  // namespace

std::span<const SelfMetricDescription> SelfMetricDescriptions() { return kSelf; }

SelfMetrics::SelfMetrics(const std::string& version, const std::string& revision)
    : registry_(std::make_shared<prometheus::Registry>()),
      collection_duration_(Register(BuildHistogram(), kCollectionDuration, *registry_).Add({}, DurationBuckets())),
      scrape_duration_(Register(BuildHistogram(), kScrapeDuration, *registry_).Add({}, DurationBuckets())),
      scrape_error_(Register(BuildGauge(), kScrapeError, *registry_).Add({})),
      cgroups_tracked_(Register(BuildGauge(), kCgroupsTracked, *registry_).Add({})),
      cgroups_reported_(Register(BuildGauge(), kCgroupsReported, *registry_).Add({})),
      files_read_(Register(BuildGauge(), kFilesRead, *registry_).Add({})),
      files_cached_(Register(BuildGauge(), kFilesCached, *registry_).Add({})),
      collections_(Register(BuildCounter(), kCollections, *registry_).Add({})),
      joins_(Register(BuildCounter(), kJoins, *registry_).Add({})),
      reuses_(Register(BuildCounter(), kReuses, *registry_).Add({})),
      read_errors_(Register(BuildCounter(), kReadErrors, *registry_)),
      dropped_(Register(BuildCounter(), kDropped, *registry_)),
      dropped_cgroups_(dropped_.Add({{"kind", "cgroup"}})),
      dropped_interfaces_(dropped_.Add({{"kind", "interface"}})),
      probe_up_(Register(BuildGauge(), kProbeUp, *registry_)),
      probe_lost_(Register(BuildCounter(), kProbeLost, *registry_)),
      runtime_up_(Register(BuildGauge(), kRuntimeUp, *registry_)),
      runtime_info_(Register(BuildGauge(), kRuntimeInfo, *registry_)),
      cri_calls_(Register(BuildCounter(), kCriCalls, *registry_)),
      cri_duration_(Register(BuildHistogram(), kCriDuration, *registry_)),
      otlp_requests_(Register(BuildCounter(), kOtlpRequests, *registry_).Add({})),
      otlp_failures_(Register(BuildCounter(), kOtlpFailures, *registry_)),
      otlp_dropped_(Register(BuildCounter(), kOtlpDropped, *registry_)),
      otlp_rejected_(Register(BuildCounter(), kOtlpRejected, *registry_).Add({})),
      otlp_queue_bytes_(Register(BuildGauge(), kOtlpQueueBytes, *registry_).Add({})),
      exit_realtime_(Register(BuildGauge(), kExitWatcherRealtime, *registry_)),
      exit_missed_(Register(BuildCounter(), kExitWatcherMissed, *registry_)),
      exit_nice_(Register(BuildGauge(), kExitWatcherNice, *registry_)) {
  Register(BuildGauge(), kBuildInfo, *registry_).Add({{"version", version}, {"revision", revision}}).Set(1);
}

void SelfMetrics::AdvanceTo(prometheus::Counter& c, double value) {
  const double now = c.Value();
  if (value > now) c.Increment(value - now);
}

void SelfMetrics::ObserveCollection(const Snapshot& s) {
  collection_duration_.Observe(static_cast<double>(s.collection.duration_ns) / 1e9);
}

void SelfMetrics::ObserveScrape(double seconds, bool collection_failed) {
  scrape_duration_.Observe(seconds);
  scrape_error_.Set(collection_failed ? 1 : 0);
}

void SelfMetrics::ObserveOtlpRequest(uint64_t rejected_points) {
  otlp_requests_.Increment();
  if (rejected_points) otlp_rejected_.Increment(static_cast<double>(rejected_points));
}

void SelfMetrics::ObserveOtlpFailure(bool retryable) {
  otlp_failures_.Add({{"kind", retryable ? "retryable" : "permanent"}}).Increment();
}

void SelfMetrics::ObserveOtlpDrop(std::string_view reason) {
  otlp_dropped_.Add({{"reason", std::string(reason)}}).Increment();
}

void SelfMetrics::SetOtlpQueueBytes(uint64_t bytes) { otlp_queue_bytes_.Set(static_cast<double>(bytes)); }

void SelfMetrics::SetExitWatcher(bool realtime, int nice, uint64_t missed) {
  exit_realtime_.Add({}).Set(realtime ? 1 : 0);
  exit_nice_.Add({}).Set(nice);
  AdvanceTo(exit_missed_.Add({}), static_cast<double>(missed));
}

void SelfMetrics::ObserveCall(std::string_view method, std::string_view code, double seconds) {
  cri_calls_.Add({{"method", std::string(method)}, {"code", std::string(code)}}).Increment();
  cri_duration_.Add({{"method", std::string(method)}}, DurationBuckets()).Observe(seconds);
}

void SelfMetrics::Update(const Snapshot& s, const SamplerStats& sampler, uint64_t dropped_cgroups,
                         uint64_t dropped_interfaces) {
  std::lock_guard<std::mutex> lock(mu_);
  cgroups_tracked_.Set(static_cast<double>(s.collection.cgroups_tracked));
  cgroups_reported_.Set(static_cast<double>(s.cgroups.size()));
  files_read_.Set(static_cast<double>(s.collection.files_read));
  files_cached_.Set(static_cast<double>(s.collection.files_cached));
  AdvanceTo(collections_, static_cast<double>(sampler.collections));
  AdvanceTo(joins_, static_cast<double>(sampler.joins));
  AdvanceTo(reuses_, static_cast<double>(sampler.reuses));
  for (const ReadErrorCount& e : s.read_errors) {
    AdvanceTo(read_errors_.Add({{"file", e.file}, {"reason", e.reason}}), static_cast<double>(e.count));
  }
  if (s.sequence != last_sequence_) {  // each snapshot's drops once
    last_sequence_ = s.sequence;
    dropped_cgroups_.Increment(static_cast<double>(dropped_cgroups));
    dropped_interfaces_.Increment(static_cast<double>(dropped_interfaces));
  }
  for (const SourceState& p : s.bpf_probes) {
    probe_up_.Add({{"probe", p.name}}).Set(p.up ? 1 : 0);
    AdvanceTo(probe_lost_.Add({{"probe", p.name}}), static_cast<double>(p.lost_events));
  }
  if (s.runtime) {
    runtime_up_.Add({{"endpoint", s.runtime->name}}).Set(s.runtime->up ? 1 : 0);
    // An answering runtime's detail is "<name> <version>" (its CRI Version reply).
    std::string key;
    if (s.runtime->up) key = s.runtime->name + "\n" + s.runtime->detail;
    if (key != runtime_info_key_) {
      if (runtime_info_series_) runtime_info_.Remove(runtime_info_series_);
      runtime_info_series_ = nullptr;
      runtime_info_key_ = key;
      if (!key.empty()) {
        const std::string& detail = s.runtime->detail;
        const size_t space = detail.find(' ');
        prometheus::Labels labels{{"endpoint", s.runtime->name}, {"runtime", detail.substr(0, space)}};
        if (space != std::string::npos) labels["version"] = detail.substr(space + 1);
        runtime_info_series_ = &runtime_info_.Add(labels);
        runtime_info_series_->Set(1);
      }
    }
  }
}

void SelfMetrics::AppendExposition(ExpositionFormat format, std::string* out) const {
  const std::vector<prometheus::MetricFamily> families = registry_->Collect();
  if (format == ExpositionFormat::kOpenMetrics100) {
    AppendOpenMetrics(families, out);
    return;
  }
  std::ostringstream text;
  prometheus::TextSerializer().Serialize(text, families);
  out->append(text.str());
}

void AppendOpenMetrics(const std::vector<prometheus::MetricFamily>& families, std::string* out) {
  for (const prometheus::MetricFamily& f : families) {
    if (f.metric.empty()) continue;
    const bool counter = f.type == prometheus::MetricType::Counter;
    const std::string_view family = counter ? StripTotal(f.name) : std::string_view(f.name);
    std::string_view type = "unknown";
    switch (f.type) {
      case prometheus::MetricType::Counter: type = "counter"; break;
      case prometheus::MetricType::Gauge: type = "gauge"; break;
      case prometheus::MetricType::Histogram: type = "histogram"; break;
      case prometheus::MetricType::Summary: type = "summary"; break;
      default: break;
    }
    out->append("# TYPE ").append(family).push_back(' ');
    out->append(type).push_back('\n');
    if (constexpr std::string_view kSeconds = "_seconds";
        family.size() > kSeconds.size() && family.substr(family.size() - kSeconds.size()) == kSeconds) {
      out->append("# UNIT ").append(family).append(" seconds\n");
    }
    out->append("# HELP ").append(family).push_back(' ');
    AppendEscapedHelp(out, f.help, ExpositionFormat::kOpenMetrics100);
    out->push_back('\n');
    for (const prometheus::ClientMetric& m : f.metric) {
      switch (f.type) {
        case prometheus::MetricType::Counter:
          out->append(family).append("_total");
          AppendLabels(m.label, {}, 0, false, out);
          out->push_back(' ');
          AppendDouble(out, m.counter.value);
          out->push_back('\n');
          break;
        case prometheus::MetricType::Histogram: {
          for (const auto& b : m.histogram.bucket) {
            out->append(family).append("_bucket");
            AppendLabels(m.label, "le", b.upper_bound, true, out);
            out->push_back(' ');
            AppendUint(out, b.cumulative_count);
            out->push_back('\n');
          }
          out->append(family).append("_count");
          AppendLabels(m.label, {}, 0, false, out);
          out->push_back(' ');
          AppendUint(out, m.histogram.sample_count);
          out->append("\n").append(family).append("_sum");
          AppendLabels(m.label, {}, 0, false, out);
          out->push_back(' ');
          AppendDouble(out, m.histogram.sample_sum);
          out->push_back('\n');
          break;
        }
        default:
          out->append(family);
          AppendLabels(m.label, {}, 0, false, out);
          out->push_back(' ');
          AppendDouble(out, f.type == prometheus::MetricType::Gauge ? m.gauge.value : m.untyped.value);
          out->push_back('\n');
          break;
      }
    }
  }
}

}  // namespace statlet
