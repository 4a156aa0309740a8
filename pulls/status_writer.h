// StatusWriter: server-side-applies the node's NodeImagePulls object to the Kubernetes API
// server (PATCH .../nodeimagepulls/<node>?fieldManager=statlet&force=true with an
// application/apply-patch+yaml body) through the KubeApiClient (base/kube_api_client.h):
// the service account's token and CA.
//
// Rate limited: at most one request per min_interval, only when the object's content
// changed or resync has passed since the last write; after a failure the wait doubles up
// to max_backoff. Offer() never blocks: a newer object replaces one not yet written.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "base/kube_api_client.h"
#include "base/status.h"

namespace statlet::pulls {

struct StatusWriterOptions {
  std::string url;  // "https://10.0.0.1:443" or "in-cluster"; plain http:// is refused
  std::string token_file = std::string(kServiceAccountDir) + "/token";
  std::string ca_file = std::string(kServiceAccountDir) + "/ca.crt";
  std::string node_name;
  std::chrono::milliseconds min_interval{5000};
  std::chrono::milliseconds resync{60000};
  std::chrono::milliseconds max_backoff{60000};
  std::chrono::seconds timeout{10};
};

struct StatusWriterCounters {
  uint64_t written = 0;
  uint64_t failed = 0;
};

class StatusWriter {
 public:
  static StatusOr<std::unique_ptr<StatusWriter>> Create(StatusWriterOptions options);
  ~StatusWriter();
  void Start();
  void Stop();
  // The latest object and its content without the update time (what changes are told by).
  void Offer(std::shared_ptr<const std::string> object, std::string content);
  StatusWriterCounters counters() const;

 private:
  explicit StatusWriter(StatusWriterOptions options) : options_(std::move(options)) {}
  void Loop();
  Status Apply(const std::string& body);

  StatusWriterOptions options_;
  std::unique_ptr<KubeApiClient> api_;
  std::string path_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::shared_ptr<const std::string> pending_;
  std::string pending_content_;
  StatusWriterCounters counters_;
  std::string last_error_;
  std::thread thread_;
};

}  // namespace statlet::pulls
