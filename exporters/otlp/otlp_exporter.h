// OtlpExporter: pushes the snapshot's metrics to an OTLP receiver every interval (with
// jitter), on its own thread. Collections go through the shared SnapshotSource (single
// flight with /metrics and CRI callers); sending never holds anything those wait on, and
// every request has a deadline, so a receiver that is down or hangs costs them nothing.
//
// Encoded requests wait in a queue bounded in bytes (the oldest dropped and counted);
// the head is retried with exponential backoff and jitter on retryable failures, waiting at
// least what the receiver asked (RetryInfo, Retry-After), and given up after
// max_retry_time. The backoff belongs to the receiver, not to a batch: dropping a batch
// (queue full, expired) does not shorten it; an answer (success or permanent) ends it.
#pragma once

#include <atomic>
#include <condition_variable>
#include <deque>
#include <memory>
#include <mutex>
#include <random>
#include <thread>

#include "exporters/otlp/otlp_encoder.h"
#include "exporters/otlp/otlp_options.h"
#include "exporters/otlp/otlp_transport.h"
#include "exporters/self_metrics.h"
#include "snapshot/snapshot_source.h"

namespace statlet::otlp {

class OtlpExporter {
 public:
  // `source` and `self` must outlive the exporter (`self` may be null).
  static StatusOr<std::unique_ptr<OtlpExporter>> Create(const OtlpOptions& options, metrics::SampleRules rules,
                                                        SnapshotSource* source, SelfMetrics* self);
  OtlpExporter(const OtlpOptions& options, metrics::SampleRules rules, std::unique_ptr<Transport> transport,
               SnapshotSource* source, SelfMetrics* self);
  ~OtlpExporter();

  // Before Start: node metrics exported with every snapshot (`source` outlives the
  // exporter).
  void AddFamilies(const metrics::ExtraSource* source) { encoder_.AddFamilies(source); }

  void Start();
  // Stops at once: a request in flight is aborted; what is queued is dropped.
  void Stop();

 private:
  struct Batch {
    std::shared_ptr<const std::string> buffer;  // the export's bytes, shared by its batches
    std::string_view request;                   // this batch's within them
    size_t bytes = 0;
    std::chrono::steady_clock::time_point first_try{};
    int attempts = 0;
  };
  void Run();
  void Collect();
  void SendHead();
  std::chrono::milliseconds Backoff(int attempts);

  OtlpOptions options_;
  std::unique_ptr<Transport> transport_;
  SnapshotSource* source_;
  SelfMetrics* self_;
  OtlpEncoder encoder_;
  EncodedExport export_;  // the last export (its views' capacity reused)
  std::mt19937_64 rng_;

  std::deque<Batch> queue_;  // only the exporter thread touches it
  size_t queue_bytes_ = 0;
  // No request before this (backoff or the receiver's wait); kept across dropped batches.
  std::chrono::steady_clock::time_point retry_at_{};
  int failures_ = 0;  // retryable failures in a row
  bool partial_logged_ = false;

  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace statlet::otlp
