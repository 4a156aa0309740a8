// A client of the Kubernetes API server, set up as client-go's in-cluster configuration
// sets one up: the server from $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT, the
// service account's bearer token, its certificate checked against the service account's
// CA bundle. Every edge that talks to the API server (image pull status, token and access
// reviews) goes through it.
//
// The token file is read again whenever it changed (projected service account tokens
// are rotated on disk). Connections are kept open between requests (TLS handshakes are
// the expensive part of a small request), one per concurrent caller, a few at most.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <ctime>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "base/status.h"

namespace httplib {
class Client;
}

namespace statlet {

inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

// https://$KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT, as client-go's in-cluster config.
StatusOr<std::string> InClusterApiServer();

struct KubeApiOptions {
  // "in-cluster" (InClusterApiServer), or https://host:port.
  std::string url = "in-cluster";
  std::string token_file = std::string(kServiceAccountDir) + "/token";
  std::string ca_file = std::string(kServiceAccountDir) + "/ca.crt";
  std::chrono::milliseconds timeout{10000};  // connect, and each read or write
  // An http:// URL would send the bearer token in clear text: refused unless this is set,
  // which only tests do (no flag or config key reaches it).
  bool allow_plain_http = false;
};

struct KubeApiResponse {
  int status = 0;
  std::string body;
};

class KubeApiClient {
 public:
  static StatusOr<std::unique_ptr<KubeApiClient>> Create(KubeApiOptions options);
  ~KubeApiClient();
  KubeApiClient(const KubeApiClient&) = delete;
  KubeApiClient& operator=(const KubeApiClient&) = delete;

  // One request to `path` (with its query); any HTTP status is a response, a transport
  // failure or an unreadable token an error. Safe to call from several threads.
  StatusOr<KubeApiResponse> Send(const std::string& method, const std::string& path, const std::string& body,
                                 const std::string& content_type);
  // Ends the requests in flight (their Send fails at once) and every later one: for a
  // prompt stop whatever the API server does.
  void Cancel();
  // scheme://host:port, as requests go to it.
  const std::string& url() const { return base_; }

 private:
  explicit KubeApiClient(KubeApiOptions options);
  StatusOr<std::string> Token();
  // A kept connection (*kept) or a new one.
  std::unique_ptr<httplib::Client> Connection(bool* kept);
  void KeepConnection(std::unique_ptr<httplib::Client> c);

  KubeApiOptions options_;
  std::string base_;
  std::mutex mu_;
  std::vector<std::unique_ptr<httplib::Client>> idle_;  // open connections, at most kKeptConnections
  std::vector<httplib::Client*> in_flight_;
  bool cancelled_ = false;
  // The token as last read, and what its file looked like then.
  std::string token_;
  ino_t token_ino_ = 0;
  timespec token_mtime_{};
  off_t token_size_ = -1;
};

}  // namespace statlet
