#include "pulls/status_writer.h"

#include <httplib.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "pulls/node_pulls.h"

namespace statlet::pulls {
namespace {

StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Unavailable("cannot read the service account token " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.empty()) return Unavailable("the service account token " + path + " is empty");
  return t;
}

}  // namespace

StatusOr<std::string> InClusterApiServer() {
  const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
  const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
  if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
    return Unavailable("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
  }
  std::string h = host;
  if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
  return "https://" + h + ":" + port;
}

StatusOr<std::unique_ptr<StatusWriter>> StatusWriter::Create(StatusWriterOptions options) {
  if (Status s = ValidateNodeName(options.node_name); !s.ok()) return s;
  const std::string& url = options.url;
  if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0) {
    return InvalidArgument("API server URL " + url + ": expected https://host:port");
  }
  std::string base = url;
  while (!base.empty() && base.back() == '/') base.pop_back();
  std::unique_ptr<StatusWriter> w(new StatusWriter(std::move(options)));
  w->scheme_host_port_ = base;
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
  auto token = ReadToken(options_.token_file);
  if (!token.ok()) return token.status();
  httplib::Client client(scheme_host_port_);
  client.set_connection_timeout(options_.timeout);
  client.set_read_timeout(options_.timeout);
  client.set_write_timeout(options_.timeout);
  if (scheme_host_port_.rfind("https://", 0) == 0) {
    client.enable_server_certificate_verification(true);
    client.set_ca_cert_path(options_.ca_file.c_str());
  }
  client.set_bearer_token_auth(token->c_str());
  // A JSON document is YAML: server-side apply takes it as application/apply-patch+yaml.
  auto res = client.Patch(path_.c_str(), body, "application/apply-patch+yaml");
  if (!res) return Unavailable("PATCH " + scheme_host_port_ + path_ + ": " + httplib::to_string(res.error()));
  if (res->status != 200 && res->status != 201) {
    return Unavailable("PATCH " + path_ + ": HTTP " + std::to_string(res->status) + ": " + res->body.substr(0, 300));
  }
  return Status::Ok();
}

}  // namespace statlet::pulls
