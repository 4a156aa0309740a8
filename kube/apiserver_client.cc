#include "kube/apiserver_client.h"

#include <httplib.h>
#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace statlet::kube {
namespace {

constexpr size_t kMaxErrorBody = 64 << 10;

bool Exists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

StatusOr<std::string> ReadToken(const std::string& path) {
  std::ifstream in(path);
  if (!in) return Unavailable("cannot read the bearer token " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string t = ss.str();
  while (!t.empty() && (t.back() == '\n' || t.back() == '\r' || t.back() == ' ')) t.pop_back();
  if (t.empty()) return Unavailable("the bearer token " + path + " is empty");
  return t;
}

}  // namespace

StatusOr<std::unique_ptr<ApiServerClient>> ApiServerClient::Create(ApiServerOptions options) {
  std::string url = options.url;
  const bool in_cluster = url == "in-cluster";
  if (in_cluster) {
    // As client-go's in-cluster configuration.
    const char* host = std::getenv("KUBERNETES_SERVICE_HOST");
    const char* port = std::getenv("KUBERNETES_SERVICE_PORT");
    if (host == nullptr || port == nullptr || *host == '\0' || *port == '\0') {
      return Unavailable("not in a cluster: KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set");
    }
    std::string h = host;
    if (h.find(':') != std::string::npos) h = "[" + h + "]";  // IPv6
    url = "https://" + h + ":" + port;
  }
  if (url.rfind("https://", 0) != 0 && url.rfind("http://", 0) != 0) {
    return InvalidArgument("API server URL " + url +
                           ": expected \"in-cluster\", https://host:port or http://host:port");
  }
  while (!url.empty() && url.back() == '/') url.pop_back();
  const bool tls = url.rfind("https://", 0) == 0;
  if (options.token_file.empty()) {
    const std::string sa = std::string(kServiceAccountDir) + "/token";
    if (tls || Exists(sa)) options.token_file = sa;
  }
  if (options.ca_file.empty() && tls) options.ca_file = std::string(kServiceAccountDir) + "/ca.crt";
  std::unique_ptr<ApiServerClient> c(new ApiServerClient(std::move(options)));
  c->base_ = url;
  return c;
}

ApiServerClient::~ApiServerClient() = default;

StatusOr<std::unique_ptr<httplib::Client>> ApiServerClient::Connect(std::chrono::seconds read_timeout) {
  auto client = std::make_unique<httplib::Client>(base_);
  client->set_connection_timeout(options_.timeout);
  client->set_read_timeout(read_timeout);
  client->set_write_timeout(options_.timeout);
  if (base_.rfind("https://", 0) == 0) {
    client->enable_server_certificate_verification(true);
    client->set_ca_cert_path(options_.ca_file.c_str());
  }
  if (!options_.token_file.empty()) {
    auto token = ReadToken(options_.token_file);
    if (!token.ok()) return token.status();
    client->set_bearer_token_auth(token->c_str());
  }
  client->set_default_headers({{"Accept", "application/json"}});
  return client;
}

void ApiServerClient::Cancel() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = true;
  if (active_ != nullptr) active_->stop();
}

void ApiServerClient::Reset() {
  std::lock_guard<std::mutex> lock(mu_);
  cancelled_ = false;
}

StatusOr<ApiResponse> ApiServerClient::Stream(const std::string& path, std::chrono::seconds read_timeout,
                                              const std::function<bool(const char*, size_t)>& on_data,
                                              const std::function<void(int)>& on_status) {
  auto client = Connect(read_timeout);
  if (!client.ok()) return client.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (cancelled_) return Unavailable("cancelled");
    active_ = client->get();
  }
  ApiResponse out;
  bool stopped_by_caller = false;
  auto res = (*client)->Get(
      path,
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
  {
    std::lock_guard<std::mutex> lock(mu_);
    active_ = nullptr;
  }
  if (stopped_by_caller) return out;
  if (!res) return Unavailable("GET " + base_ + path + ": " + httplib::to_string(res.error()));
  out.status = res->status;
  return out;
}

StatusOr<ApiResponse> ApiServerClient::Get(const std::string& path, size_t max_bytes) {
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

}  // namespace statlet::kube
