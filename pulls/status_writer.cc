#include "pulls/status_writer.h"

#include <algorithm>

#include "base/log.h"
#include "pulls/node_pulls.h"

namespace statlet::pulls {

StatusOr<std::unique_ptr<StatusWriter>> StatusWriter::Create(StatusWriterOptions options) {
  if (Status s = ValidateNodeName(options.node_name); !s.ok()) return s;
  auto api = KubeApiClient::Create(
      {.url = options.url, .token_file = options.token_file, .ca_file = options.ca_file, .timeout = options.timeout});
  if (!api.ok()) return api.status();
  std::unique_ptr<StatusWriter> w(new StatusWriter(std::move(options)));
  w->api_ = std::move(*api);
  w->path_ = std::string("/apis/") + kNodePullsApiVersion + "/nodeimagepulls/" + w->options_.node_name +
             "?fieldManager=statlet&force=true";
  return w;
}

StatusWriter::~StatusWriter() { Stop(); }

void StatusWriter::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void StatusWriter::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void StatusWriter::Offer(std::shared_ptr<const std::string> object, std::string content) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    pending_ = std::move(object);
    pending_content_ = std::move(content);
  }
  cv_.notify_all();
}

StatusWriterCounters StatusWriter::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

void StatusWriter::Loop() {
  using Clock = std::chrono::steady_clock;
  std::unique_lock<std::mutex> lock(mu_);
  Clock::time_point next_allowed{};  // the rate limit
  Clock::time_point last_written{};
  std::string written_content;
  bool ever_written = false;
  auto backoff = options_.min_interval;
  while (!stop_) {
    auto due = [&] {
      if (!pending_) return false;
      return !ever_written || pending_content_ != written_content || Clock::now() - last_written >= options_.resync;
    };
    if (!due()) {
      // Woken by an offer, or at the resync time.
      auto until = ever_written ? last_written + options_.resync : Clock::time_point::max();
      cv_.wait_until(lock, until, [&] { return stop_ || due(); });
      continue;
    }
    if (Clock::now() < next_allowed) {
      cv_.wait_until(lock, next_allowed, [&] { return stop_; });
      continue;
    }
    std::shared_ptr<const std::string> object = pending_;
    std::string content = pending_content_;
    lock.unlock();
    Status s = Apply(*object);
    lock.lock();
    const auto now = Clock::now();
    if (s.ok()) {
      ++counters_.written;
      written_content = std::move(content);
      ever_written = true;
      last_written = now;
      backoff = options_.min_interval;
      next_allowed = now + options_.min_interval;
      if (!last_error_.empty()) log::Info("NodeImagePulls writes to the API server work again");
      last_error_.clear();
    } else {
      ++counters_.failed;
      if (s.message() != last_error_) {
        log::Warn("cannot apply NodeImagePulls/" + options_.node_name + ": " + s.message() + "; retrying with backoff");
      }
      last_error_ = s.message();
      backoff = std::min(backoff * 2, options_.max_backoff);
      next_allowed = now + backoff;
    }
  }
}

Status StatusWriter::Apply(const std::string& body) {
  // A JSON document is YAML: server-side apply takes it as application/apply-patch+yaml.
  auto res = api_->Send("PATCH", path_, body, "application/apply-patch+yaml");
  if (!res.ok()) return res.status();
  if (res->status != 200 && res->status != 201) {
    return Unavailable("PATCH " + path_ + ": HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 300));
  }
  return Status::Ok();
}

}  // namespace statlet::pulls
