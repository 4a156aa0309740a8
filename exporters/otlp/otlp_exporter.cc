#include "exporters/otlp/otlp_exporter.h"

#include <unistd.h>

#include <algorithm>

#include "base/log.h"

namespace statlet::otlp {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

NodeResource MakeNodeResource(const OtlpOptions& o) {
  NodeResource r;
  char host[256] = {};
  if (::gethostname(host, sizeof host - 1) == 0) r.attributes.emplace_back("host.name", host);
  std::string node = o.node_name;
  if (node.empty()) {
    if (const char* n = std::getenv("NODE_NAME"); n && *n) node = n;
  }
  if (!node.empty()) r.attributes.emplace_back("k8s.node.name", node);
  // OTEL_SERVICE_NAME wins over a service.name in OTEL_RESOURCE_ATTRIBUTES.
  r.attributes.emplace_back("service.name", o.service_name);
  for (const auto& kv : o.resource_attributes) {
    if (kv.first != "service.name") r.attributes.push_back(kv);
  }
  return r;
}

}  // namespace

StatusOr<std::unique_ptr<OtlpExporter>> OtlpExporter::Create(const OtlpOptions& options, metrics::SampleRules rules,
                                                             SnapshotSource* source, SelfMetrics* self) {
  auto transport = options.protocol == Protocol::kGrpc ? MakeGrpcTransport(options) : MakeHttpTransport(options);
  if (!transport.ok()) return transport.status();
  return std::make_unique<OtlpExporter>(options, std::move(rules), std::move(*transport), source, self);
}

OtlpExporter::OtlpExporter(const OtlpOptions& options, metrics::SampleRules rules, std::unique_ptr<Transport> transport,
                           SnapshotSource* source, SelfMetrics* self)
    : options_(options),
      transport_(std::move(transport)),
      source_(source),
      self_(self),
      encoder_(MakeNodeResource(options), std::move(rules), options.max_request_bytes),
      rng_(std::random_device{}()) {}

OtlpExporter::~OtlpExporter() { Stop(); }

void OtlpExporter::Start() {
  thread_ = std::thread([this] { Run(); });
}

void OtlpExporter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  transport_->Abort();  // a request in flight ends now, not at its deadline
  if (thread_.joinable()) thread_.join();
}

milliseconds OtlpExporter::Backoff(int attempts) {
  // 1 s, 2 s, 4 s ... at most 30 s, each in [50 %, 100 %] of that (jitter).
  const int64_t cap = std::min<int64_t>(int64_t{1000} << std::min(attempts - 1, 5), 30000);
  std::uniform_int_distribution<int64_t> d(cap / 2, cap);
  return milliseconds(d(rng_));
}

void OtlpExporter::Collect() {
  // Younger than half an interval: a scrape's snapshot is shared, never a second collection.
  auto snap = source_->Get(std::chrono::duration_cast<std::chrono::nanoseconds>(options_.interval / 2));
  if (!snap.ok()) {
    log::Warn("otlp: collection failed: " + snap.status().ToString());
    return;
  }
  encoder_.Encode(**snap, &export_);
  for (std::string_view r : export_.requests) {
    Batch b;
    b.buffer = export_.bytes;  // requests split without a copy: each holds the one buffer
    b.request = r;
    b.bytes = r.size();
    if (b.bytes > options_.max_queue_bytes) {  // could never wait in the queue
      if (self_) self_->ObserveOtlpDrop("queue_full");
      continue;
    }
    while (!queue_.empty() && queue_bytes_ + b.bytes > options_.max_queue_bytes) {
      queue_bytes_ -= queue_.front().bytes;
      queue_.pop_front();
      // retry_at_ and failures_ stay: the receiver's backoff is not the dropped batch's.
      if (self_) self_->ObserveOtlpDrop("queue_full");
    }
    queue_bytes_ += b.bytes;
    queue_.push_back(std::move(b));
  }
  if (self_) self_->SetOtlpQueueBytes(queue_bytes_);
}

void OtlpExporter::SendHead() {
  Batch& b = queue_.front();
  if (b.attempts++ == 0) b.first_try = Clock::now();
  SendResult r = transport_->Send(b.request);
  auto drop = [&](std::string_view reason) {
    queue_bytes_ -= b.bytes;
    queue_.pop_front();
    if (self_) {
      if (!reason.empty()) self_->ObserveOtlpDrop(reason);
      self_->SetOtlpQueueBytes(queue_bytes_);
    }
  };
  switch (r.kind) {
    case SendResult::kOk:
      failures_ = 0;
      retry_at_ = {};
      if (self_) self_->ObserveOtlpRequest(static_cast<uint64_t>(std::max<int64_t>(0, r.rejected_points)));
      if ((r.rejected_points > 0 || !r.message.empty()) && !partial_logged_) {
        partial_logged_ = true;  // logged once; the count goes on in the self metrics
        log::Warn("otlp: partial success: " + std::to_string(r.rejected_points) + " points rejected: " + r.message);
      }
      drop("");
      return;
    case SendResult::kPermanent:
      // The receiver answered: the next batch goes without waiting.
      failures_ = 0;
      retry_at_ = {};
      if (self_) self_->ObserveOtlpFailure(false);
      log::Warn("otlp: export failed, batch dropped: " + r.message);
      drop("permanent");
      return;
    case SendResult::kRetryable: {
      if (self_) self_->ObserveOtlpFailure(true);
      // The backoff counts the receiver's failures in a row, whichever batch met them.
      milliseconds wait = Backoff(++failures_);
      if (r.retry_after) wait = std::max(wait, *r.retry_after);
      retry_at_ = Clock::now() + wait;
      if (retry_at_ - b.first_try > options_.max_retry_time) {
        log::Warn("otlp: export failed, retried too long, batch dropped: " + r.message);
        drop("expired");  // the next batch waits out the same backoff
        return;
      }
      log::Debug("otlp: export failed, retry in " + std::to_string(wait.count()) + " ms: " + r.message);
      return;
    }
  }
}

void OtlpExporter::Run() {
  std::uniform_real_distribution<double> jitter(-0.1, 0.1);
  auto next_interval = [&] {
    return std::chrono::duration_cast<Clock::duration>(options_.interval * (1.0 + jitter(rng_)));
  };
  // The first export after a short random delay, not in step with other nodes.
  Clock::time_point next_export =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::min<milliseconds>(options_.interval, milliseconds(1000)) * (0.5 + jitter(rng_)));
  std::unique_lock<std::mutex> lock(mu_);
  while (!stop_) {
    const Clock::time_point now = Clock::now();
    if (now >= next_export) {
      lock.unlock();
      Collect();
      lock.lock();
      next_export = std::max(next_export + next_interval(), Clock::now());
      continue;
    }
    if (!queue_.empty() && now >= retry_at_) {
      lock.unlock();
      SendHead();
      lock.lock();
      continue;
    }
    Clock::time_point wake = next_export;
    if (!queue_.empty()) wake = std::min(wake, retry_at_);
    cv_.wait_until(lock, wake, [&] { return stop_; });
  }
}

}  // namespace statlet::otlp
