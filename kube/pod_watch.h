// The pods of this node from the Kubernetes API server, for the Memory QoS view's requests:
// one node-scoped list (fieldSelector=spec.nodeName=<node>, in pages), then one watch from
// its resourceVersion, resumed from the last version seen when it ends or breaks, listed
// again when the server answers 410 Gone. Also the Node object's kubelet version, fetched
// at start and every node_refresh. A background thread does all of it and publishes an
// immutable PodMemorySpecs; Current() only reads that.
//
// Bounded: at most max_pods pods (the rest are counted and logged once), a watch event or a
// list page larger than its cap ends that request (a page is asked again smaller), and each
// pod keeps only its uid, class and its containers' names, ids, requests and limits.
// Needs RBAC to list and watch pods and to get nodes (deploy/kubernetes/rbac.yaml).
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>

#include "base/kube_api_client.h"
#include "collector/memory_qos_inputs.h"

namespace statlet::kube {

struct PodWatchOptions {
  // An empty token_file: the service account's over https, or when it exists (else no token,
  // for a test server over http://); an empty ca_file: the service account's.
  KubeApiOptions api{.token_file = "", .ca_file = ""};
  std::string node_name;
  size_t max_pods = 1024;
  size_t max_event_bytes = 4 << 20;
  size_t max_page_bytes = 16 << 20;
  size_t max_node_bytes = 4 << 20;
  int page_size = 100;
  std::chrono::seconds watch_timeout{300};  // the server ends a watch after this (timeoutSeconds)
  std::chrono::milliseconds min_backoff{500};
  std::chrono::milliseconds max_backoff{30000};
  std::chrono::seconds node_refresh{600};
};

struct PodWatchCounters {
  uint64_t lists = 0;         // complete lists
  uint64_t watches = 0;       // watch requests answered 200
  uint64_t events = 0;        // watch events applied (bookmarks included)
  uint64_t gone = 0;          // 410 answers that made it list again
  uint64_t failures = 0;      // requests that failed (connection, HTTP status, bad data)
  uint64_t pods_dropped = 0;  // pods left out over max_pods
  uint64_t node_fetches = 0;  // Node objects read
};

class PodWatch : public PodSpecSource {
 public:
  static StatusOr<std::unique_ptr<PodWatch>> Create(PodWatchOptions options);
  ~PodWatch() override;

  void Start();
  // Ends the request in flight and joins the thread.
  void Stop();

  std::shared_ptr<const PodMemorySpecs> Current() override;
  SourceState State() const override;
  PodWatchCounters counters() const;

 private:
  explicit PodWatch(PodWatchOptions options) : options_(std::move(options)) {}
  void Loop();
  bool Stopping();
  // Waits the backoff (or until Stop) and doubles it.
  void Backoff();
  Status FetchNode();
  Status List(std::string* resource_version, bool* gone);
  // Watches from *resource_version, advancing it; *gone on 410; *delivered when an event
  // arrived.
  Status Watch(std::string* resource_version, bool* gone, bool* delivered);
  // Applies one watch event (a JSON line); false on a 410 ERROR event.
  Status ApplyEvent(const std::string& line, std::string* resource_version, bool* gone);
  void Upsert(std::unordered_map<std::string, PodMemorySpec>* pods, PodMemorySpec spec);
  void Publish();
  void Failed(const Status& s);
  void Succeeded();

  const PodWatchOptions options_;
  std::string selector_;  // the URL-encoded fieldSelector query value
  std::unique_ptr<KubeApiClient> client_;
  std::thread thread_;

  // Owned by the loop's thread.
  std::unordered_map<std::string, PodMemorySpec> pods_;
  std::string kubelet_version_;
  std::chrono::milliseconds backoff_{0};
  bool drop_logged_ = false;

  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;     // guarded by mu_
  bool running_ = false;  // guarded by mu_: the loop's thread has not returned
  std::shared_ptr<const PodMemorySpecs> current_ = std::make_shared<const PodMemorySpecs>();  // guarded by mu_
  SourceState state_;                                                                         // guarded by mu_
  PodWatchCounters counters_;                                                                 // guarded by mu_
};

// "%"-encodes a query value (RFC 3986 unreserved characters stay).
std::string QueryEscape(const std::string& s);

}  // namespace statlet::kube
