// A client of the Kubernetes API server, set up as client-go's in-cluster configuration
// sets one up: the server from $KUBERNETES_SERVICE_HOST and $KUBERNETES_SERVICE_PORT, the
// service account's bearer token, its certificate checked against the service account's
// CA bundle. Everything that talks to the API server (image pull status, token and access
// reviews, this node's pods for the Memory QoS view) goes through it.
//
// The token file is read again whenever it changed (projected service account tokens
// are rotated on disk). Connections are kept open between requests (TLS handshakes are
// the expensive part of a small request), one per concurrent caller, a few at most.
// A GET can also come back whole but bounded in size (Get), or chunk by chunk to the
// caller, who bounds what it keeps (Stream, for a watch): each on a connection of its own.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <ctime>
#include <functional>
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
  // Empty: requests carry no bearer token (a test server over http://).
  std::string token_file = std::string(kServiceAccountDir) + "/token";
  std::string ca_file = std::string(kServiceAccountDir) + "/ca.crt";
  std::chrono::milliseconds timeout{10000};  // connect, and each read or write
  // An http:// URL with a token file would send the bearer token in clear text: refused
  // unless this is set, which only tests do (no flag or config key reaches it). Without a
  // token (a stand-in API server) nothing secret goes out, and http:// is taken.
  bool allow_plain_http = false;
};

struct KubeApiResponse {
  int status = 0;
  std::string body;  // the answer, or the start of a failed stream's
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
  // A GET's whole answer; an error when it exceeds max_bytes or the connection fails.
  StatusOr<KubeApiResponse> Get(const std::string& path, size_t max_bytes);
  // A streamed GET: every chunk of a 200 answer goes to on_data (returning false ends the
  // request). read_timeout: the longest silence allowed. A non-200 answer's body (up to
  // 64 KiB) comes back in the response. on_status (optional) hears the HTTP status as soon
  // as the headers arrive.
  StatusOr<KubeApiResponse> Stream(const std::string& path, std::chrono::milliseconds read_timeout,
                                   const std::function<bool(const char* data, size_t size)>& on_data,
                                   const std::function<void(int status)>& on_status = nullptr);
  // Ends the requests in flight (they fail at once) and every later one until Reset(): for
  // a prompt stop whatever the API server does.
  void Cancel();
  void Reset();
  // scheme://host:port, as requests go to it.
  const std::string& url() const { return base_; }

 private:
  explicit KubeApiClient(KubeApiOptions options);
  StatusOr<std::string> Token();
  // A kept connection (*kept) or a new one.
  std::unique_ptr<httplib::Client> Connection(bool* kept);
  std::unique_ptr<httplib::Client> NewConnection(std::chrono::milliseconds read_timeout) const;
  // "Bearer <token>", or "" without a token file.
  StatusOr<std::string> Authorization();
  // Registers c as in flight; false once cancelled.
  bool Begin(httplib::Client* c);
  void End(httplib::Client* c);
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
