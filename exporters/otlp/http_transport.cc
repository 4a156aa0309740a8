// OTLP/HTTP with a protobuf body over libcurl: POST, Content-Type application/x-protobuf,
// optional gzip, the answer bounded to 4 MiB, Retry-After read from the headers. The
// transfer runs on a multi handle so that Abort (another thread) ends it at once through
// curl_multi_wakeup instead of waiting for the request's deadline. libcurl is loaded by the
// first transport (curl_library.h).

#include <atomic>
#include <cstring>
#include <ctime>

#include "exporters/gzip_compressor.h"
#include "exporters/otlp/curl_library.h"
#include "exporters/otlp/otlp_transport.h"
#include "google/rpc/status.pb.h"
#include "opentelemetry/proto/collector/metrics/v1/metrics_service.pb.h"

namespace statlet::otlp {
namespace {

namespace cm = opentelemetry::proto::collector::metrics::v1;

constexpr size_t kMaxResponseBytes = 4 << 20;

struct Answer {
  std::string body;
  bool too_large = false;
  std::string retry_after;
};

size_t OnBody(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Answer*>(user);
  if (a->body.size() + size * n > kMaxResponseBytes) {
    a->too_large = true;
    return 0;  // aborts the transfer
  }
  a->body.append(data, size * n);
  return size * n;
}

size_t OnHeader(char* data, size_t size, size_t n, void* user) {
  auto* a = static_cast<Answer*>(user);
  std::string_view line(data, size * n);
  constexpr std::string_view kName = "retry-after:";
  if (line.size() > kName.size() && strncasecmp(line.data(), kName.data(), kName.size()) == 0) {
    std::string_view v = line.substr(kName.size());
    while (!v.empty() && (v.front() == ' ' || v.front() == '\t')) v.remove_prefix(1);
    while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.remove_suffix(1);
    a->retry_after.assign(v);
  }
  return size * n;
}

class HttpTransport final : public Transport {
 public:
  HttpTransport(const OtlpOptions& o, const CurlLibrary& lib) : lib_(lib), options_(o), url_(HttpUrl(o)) {
    curl_ = lib_.easy_init();
    multi_ = lib_.multi_init();
    headers_ = lib_.slist_append(headers_, "Content-Type: application/x-protobuf");
    if (o.gzip) headers_ = lib_.slist_append(headers_, "Content-Encoding: gzip");
    headers_ = lib_.slist_append(headers_, "Expect:");  // no 100-continue round trip
    for (const auto& [k, v] : o.headers) headers_ = lib_.slist_append(headers_, (k + ": " + v).c_str());
  }
  ~HttpTransport() override {
    lib_.slist_free_all(headers_);
    if (curl_) lib_.easy_cleanup(curl_);
    if (multi_) lib_.multi_cleanup(multi_);
  }

  void Abort() override {
    aborted_.store(true);
    if (multi_) lib_.multi_wakeup(multi_);  // thread-safe: ends the poll of a Send in flight
  }

  SendResult Send(std::string_view request) override {
    SendResult r;
    if (!curl_ || !multi_) return {SendResult::kPermanent, std::nullopt, 0, "curl init failed"};
    if (aborted_.load()) return {SendResult::kPermanent, std::nullopt, 0, "HTTP: stopping"};
    std::string_view body = request;  // the encoder's bytes, not copied
    if (options_.gzip) {
      if (Status s = gzip_.Compress(request, &compressed_); !s.ok())
        return {SendResult::kPermanent, std::nullopt, 0, s.message()};
      body = compressed_;
    }
    Answer answer;
    CURL* c = curl_;
    lib_.easy_reset(c);
    lib_.easy_setopt(c, CURLOPT_URL, url_.c_str());
    lib_.easy_setopt(c, CURLOPT_POST, 1L);
    lib_.easy_setopt(c, CURLOPT_POSTFIELDS, body.data());
    lib_.easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
    lib_.easy_setopt(c, CURLOPT_HTTPHEADER, headers_);
    lib_.easy_setopt(c, CURLOPT_USERAGENT, "statlet-otlp-exporter");
    lib_.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    lib_.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(std::min<int64_t>(options_.timeout.count(), 10000)));
    if (options_.timeout.count() > 0)
      lib_.easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(options_.timeout.count()));
    lib_.easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
    lib_.easy_setopt(c, CURLOPT_WRITEDATA, &answer);
    lib_.easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
    lib_.easy_setopt(c, CURLOPT_HEADERDATA, &answer);
    lib_.easy_setopt(c, CURLOPT_PROTOCOLS_STR, "http,https");
    if (!options_.ca_file.empty()) lib_.easy_setopt(c, CURLOPT_CAINFO, options_.ca_file.c_str());
    CURLcode rc = Perform(c);
    if (answer.too_large) return {SendResult::kPermanent, std::nullopt, 0, "answer larger than 4 MiB"};
    if (rc != CURLE_OK) {
      // Cannot connect, disconnected, timed out: the spec's retry-with-backoff cases.
      return {SendResult::kRetryable, std::nullopt, 0, std::string("HTTP: ") + lib_.easy_strerror(rc)};
    }
    long code = 0;
    lib_.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &code);
    if (code >= 200 && code < 300) {
      cm::ExportMetricsServiceResponse response;
      if (!answer.body.empty() && response.ParseFromString(answer.body) && response.has_partial_success()) {
        r.rejected_points = response.partial_success().rejected_data_points();
        r.message = response.partial_success().error_message();
      }
      return r;
    }
    r.message = "HTTP " + std::to_string(code);
    google::rpc::Status status;
    if (!answer.body.empty() && status.ParseFromString(answer.body) && !status.message().empty()) {
      r.message += ": " + status.message();
    }
    r.retry_after = ParseRetryAfter(answer.retry_after, std::chrono::system_clock::now());
    r.kind =
        (code == 429 || code == 502 || code == 503 || code == 504) ? SendResult::kRetryable : SendResult::kPermanent;
    return r;
  }

 private:
  // curl_easy_perform on the multi handle, checking the abort flag between polls.
  CURLcode Perform(CURL* c) {
    if (lib_.multi_add_handle(multi_, c) != CURLM_OK) return CURLE_FAILED_INIT;
    CURLcode rc = CURLE_OK;
    for (;;) {
      int running = 0;
      if (lib_.multi_perform(multi_, &running) != CURLM_OK) {
        rc = CURLE_FAILED_INIT;
        break;
      }
      if (running == 0) {
        int left = 0;
        rc = CURLE_RECV_ERROR;
        while (CURLMsg* m = lib_.multi_info_read(multi_, &left)) {
          if (m->msg == CURLMSG_DONE && m->easy_handle == c) rc = m->data.result;
        }
        break;
      }
      if (aborted_.load()) {
        rc = CURLE_ABORTED_BY_CALLBACK;
        break;
      }
      // Woken by the sockets, libcurl's own timers (connect and request deadlines), or Abort.
      if (lib_.multi_poll(multi_, nullptr, 0, 1000, nullptr) != CURLM_OK) {
        rc = CURLE_FAILED_INIT;
        break;
      }
    }
    lib_.multi_remove_handle(multi_, c);
    return rc;
  }

  const CurlLibrary& lib_;
  OtlpOptions options_;
  std::string url_;
  CURLM* multi_ = nullptr;
  std::atomic<bool> aborted_{false};
  CURL* curl_ = nullptr;
  curl_slist* headers_ = nullptr;
  GzipCompressor gzip_{6};
  std::string compressed_;
};

}  // namespace

std::optional<std::chrono::milliseconds> ParseRetryAfter(const std::string& value,
                                                         std::chrono::system_clock::time_point now) {
  if (value.empty()) return std::nullopt;
  if (value.find_first_not_of("0123456789") == std::string::npos) {
    if (value.size() > 9) return std::nullopt;
    return std::chrono::milliseconds(std::stoll(value) * 1000);
  }
  auto curl = Curl();  // its HTTP-date parser reads the obsolete forms too (RFC 9110 §5.6.7)
  if (!curl.ok()) return std::nullopt;
  time_t t = (*curl)->getdate(value.c_str(), nullptr);
  if (t < 0) return std::nullopt;
  auto at = std::chrono::system_clock::from_time_t(t);
  if (at <= now) return std::chrono::milliseconds(0);
  return std::chrono::duration_cast<std::chrono::milliseconds>(at - now);
}

StatusOr<std::unique_ptr<Transport>> MakeHttpTransport(const OtlpOptions& o) {
  std::string url = HttpUrl(o);
  if (url.rfind("http://", 0) != 0 && url.rfind("https://", 0) != 0) {
    return InvalidArgument("otlp.endpoint: expected http:// or https://, got \"" + o.endpoint + "\"");
  }
  auto curl = Curl();
  if (!curl.ok()) return curl.status();
  return std::unique_ptr<Transport>(new HttpTransport(o, **curl));
}

}  // namespace statlet::otlp
