// GET requests to the Kubernetes API server, authenticated with a bearer token (re-read before
// each request: projected service account tokens rotate), the server checked against a CA
// bundle. A whole answer is bounded in size; a streamed one (a watch) goes chunk by chunk to
// the caller, who bounds what it keeps. Cancel() aborts a request in flight from another thread.
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "base/status.h"

namespace httplib {
class Client;
}

namespace statlet::kube {

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

struct ApiServerOptions {
  // "in-cluster" ($KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT over https, the service
  // account's token and CA), https://host:port, or http://host:port (tests).
  std::string url = "in-cluster";
  std::string token_file;  // "" : the service account's (only read when it exists, for http)
  std::string ca_file;     // "" : the service account's
  std::chrono::seconds timeout{10};
};

struct ApiResponse {
  int status = 0;    // HTTP status
  std::string body;  // a whole answer, or the start of a failed stream's
};

class ApiServerClient {
 public:
  static StatusOr<std::unique_ptr<ApiServerClient>> Create(ApiServerOptions options);
  ~ApiServerClient();

  // The whole answer; an error when it exceeds max_bytes or the connection fails.
  StatusOr<ApiResponse> Get(const std::string& path, size_t max_bytes);
  // A streamed answer: every chunk of a 200 answer goes to on_data (returning false ends
  // the request). read_timeout: the longest silence allowed. A non-200 answer's body (up to
  // 64 KiB) comes back in the response.
  // on_status (optional) hears the HTTP status as soon as the headers arrive.
  StatusOr<ApiResponse> Stream(const std::string& path, std::chrono::seconds read_timeout,
                               const std::function<bool(const char* data, size_t size)>& on_data,
                               const std::function<void(int status)>& on_status = nullptr);
  // Ends a request in flight (it returns an error) and makes later ones fail at once until
  // Reset().
  void Cancel();
  void Reset();

  const std::string& base_url() const { return base_; }

 private:
  explicit ApiServerClient(ApiServerOptions options) : options_(std::move(options)) {}
  StatusOr<std::unique_ptr<httplib::Client>> Connect(std::chrono::seconds read_timeout);

  ApiServerOptions options_;
  std::string base_;  // scheme://host:port
  std::mutex mu_;
  httplib::Client* active_ = nullptr;  // guarded by mu_
  bool cancelled_ = false;             // guarded by mu_
};

}  // namespace statlet::kube
