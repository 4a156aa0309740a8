#include "base/kube_api_client.h"

#include <httplib.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace statlet {
namespace {

constexpr size_t kKeptConnections = 4;
constexpr size_t kMaxErrorBody = 64 << 10;

bool SameTime(const timespec& a, const timespec& b) { return a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec; }

// What went wrong, in words an operator can act on.
std::string Describe(httplib::Error e, const KubeApiOptions& o) {
  switch (e) {
    case httplib::Error::Connection: return "cannot connect (connection refused or no route)";
    case httplib::Error::ConnectionTimeout: return "cannot connect (timed out)";
    case httplib::Error::Read: return "no answer (connection closed, or timed out)";
    case httplib::Error::Write: return "cannot send the request (connection closed, or timed out)";
    case httplib::Error::SSLConnection: return "TLS handshake failed";
    case httplib::Error::SSLLoadingCerts: return "cannot load the CA bundle " + o.ca_file;
    case httplib::Error::SSLServerVerification: return "the server's certificate does not verify against " + o.ca_file;
    default: return httplib::to_string(e);
  }
}

httplib::Headers RequestHeaders(const std::string& authorization) {
  httplib::Headers headers = {{"Accept", "application/json"}};
  if (!authorization.empty()) headers.emplace("Authorization", authorization);
  return headers;
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

KubeApiClient::KubeApiClient(KubeApiOptions options) : options_(std::move(options)) {}
KubeApiClient::~KubeApiClient() = default;

StatusOr<std::unique_ptr<KubeApiClient>> KubeApiClient::Create(KubeApiOptions options) {
  std::string url = options.url;
  if (url == "in-cluster") {
    auto in_cluster = InClusterApiServer();
    if (!in_cluster.ok()) return in_cluster.status();
    url = *in_cluster;
  }
  const bool plain = url.rfind("http://", 0) == 0;
  if (plain && !options.token_file.empty() && !options.allow_plain_http) {
    return InvalidArgument("API server URL " + url +
                           ": plain http would send the bearer token in clear text; expected https://host:port or "
                           "\"in-cluster\"");
  }
  if (url.rfind("https://", 0) != 0 && !plain) {
    return InvalidArgument("API server URL " + url + ": expected https://host:port or \"in-cluster\"");
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  std::unique_ptr<KubeApiClient> c(new KubeApiClient(std::move(options)));
  c->base_ = url;
  return c;
}

StatusOr<std::string> KubeApiClient::Token() {
  const std::string& path = options_.token_file;
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return Unavailable("cannot read the service account token " + path);
  std::lock_guard<std::mutex> lock(mu_);
  if (!token_.empty() && st.st_ino == token_ino_ && st.st_size == token_size_ && SameTime(st.st_mtim, token_mtime_)) {
    return token_;
  }
  std::ifstream in(path);
  if (!in) return Unavailable("cannot read the service account token " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.empty()) return Unavailable("the service account token " + path + " is empty");
  token_ = t;
  token_ino_ = st.st_ino;
  token_size_ = st.st_size;
  token_mtime_ = st.st_mtim;
  return t;
}

StatusOr<std::string> KubeApiClient::Authorization() {
  if (options_.token_file.empty()) return std::string();
  auto token = Token();
  if (!token.ok()) return token.status();
  return "Bearer " + *token;
}

std::unique_ptr<httplib::Client> KubeApiClient::NewConnection(std::chrono::milliseconds read_timeout) const {
  auto c = std::make_unique<httplib::Client>(base_);
  c->set_connection_timeout(options_.timeout);
  c->set_read_timeout(read_timeout);
  c->set_write_timeout(options_.timeout);
  if (base_.rfind("https://", 0) == 0) {
    c->enable_server_certificate_verification(true);
    c->set_ca_cert_path(options_.ca_file.c_str());
  }
  return c;
}

std::unique_ptr<httplib::Client> KubeApiClient::Connection(bool* kept) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    *kept = !idle_.empty();
    if (*kept) {
      auto c = std::move(idle_.back());
      idle_.pop_back();
      return c;
    }
  }
  auto c = NewConnection(options_.timeout);
  c->set_keep_alive(true);
  return c;
}

bool KubeApiClient::Begin(httplib::Client* c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (cancelled_) return false;
  in_flight_.push_back(c);
  return true;
}

void KubeApiClient::End(httplib::Client* c) {
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.erase(std::find(in_flight_.begin(), in_flight_.end(), c));
}

void KubeApiClient::KeepConnection(std::unique_ptr<httplib::Client> c) {
  std::lock_guard<std::mutex> lock(mu_);
  if (idle_.size() < kKeptConnections) idle_.push_back(std::move(c));
}

void KubeApiClient::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  // httplib's stop() may be called from another thread: it shuts the socket of a request
  // in flight, which then fails.
  for (httplib::Client* c : in_flight_) c->stop();
  idle_.clear();
}

void KubeApiClient::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = false;
}

StatusOr<KubeApiResponse> KubeApiClient::Send(const std::string& method, const std::string& path,
                                              const std::string& body, const std::string& content_type) {
  auto authorization = Authorization();
  if (!authorization.ok()) return authorization.status();
  const httplib::Headers headers = RequestHeaders(*authorization);
  // A kept connection the server has closed meanwhile fails: then once more on a new one.
  for (int attempt = 0; attempt < 2; ++attempt) {
    bool kept = false;
    std::unique_ptr<httplib::Client> c = Connection(&kept);
    if (!Begin(c.get())) return Unavailable(method + " " + base_ + path + ": cancelled (stopping)");
    const auto started = std::chrono::steady_clock::now();
    httplib::Result res = method == "POST"    ? c->Post(path.c_str(), headers, body, content_type.c_str())
                          : method == "PATCH" ? c->Patch(path.c_str(), headers, body, content_type.c_str())
                          : method == "PUT"   ? c->Put(path.c_str(), headers, body, content_type.c_str())
                                              : c->Get(path.c_str(), headers);
    End(c.get());
    if (res) {
      KubeApiResponse r{res->status, std::move(res->body)};
      KeepConnection(std::move(c));
      return r;
    }
    const httplib::Error error = res.error();
    // A closed connection fails at once; a timeout (which took its time) is not repeated.
    const bool quick = std::chrono::steady_clock::now() - started < std::chrono::seconds(1);
    if (kept && quick && (error == httplib::Error::Read || error == httplib::Error::Write)) continue;
    return Unavailable(method + " " + base_ + path + ": " + Describe(error, options_));
  }
  return Unavailable(method + " " + base_ + path + ": failed twice");
}

StatusOr<KubeApiResponse> KubeApiClient::Stream(const std::string& path, std::chrono::milliseconds read_timeout,
                                                const std::function<bool(const char*, size_t)>& on_data,
                                                const std::function<void(int)>& on_status) {
  auto authorization = Authorization();
  if (!authorization.ok()) return authorization.status();
  std::unique_ptr<httplib::Client> c = NewConnection(read_timeout);
  if (!Begin(c.get())) return Unavailable("GET " + base_ + path + ": cancelled (stopping)");
  KubeApiResponse out;
  bool stopped_by_caller = false;
  httplib::Result res = c->Get(
      path, RequestHeaders(*authorization),
      [&](const httplib::Response& r) {
        out.status = r.status;
        if (on_status) on_status(r.status);
        return true;
      },
      [&](const char* data, size_t size) {
        if (out.status != 200) {
          if (out.body.size() < kMaxErrorBody) out.body.append(data, std::min(size, kMaxErrorBody - out.body.size()));
          return true;
        }
        if (!on_data(data, size)) {
          stopped_by_caller = true;
          return false;
        }
        return true;
      });
  End(c.get());
  if (stopped_by_caller) return out;
  if (!res) return Unavailable("GET " + base_ + path + ": " + Describe(res.error(), options_));
  out.status = res->status;
  return out;
}

StatusOr<KubeApiResponse> KubeApiClient::Get(const std::string& path, size_t max_bytes) {
  std::string body;
  bool too_big = false;
  auto r = Stream(path, options_.timeout, [&](const char* data, size_t size) {
    if (body.size() + size > max_bytes) {
      too_big = true;
      return false;
    }
    body.append(data, size);
    return true;
  });
  if (!r.ok()) return r.status();
  if (too_big) return Unavailable("GET " + path + ": the answer exceeds " + std::to_string(max_bytes) + " bytes");
  if (r->status == 200) r->body = std::move(body);
  return r;
}

}  // namespace statlet
