// The per-node NodeImagePulls object (deploy/kubernetes/nodeimagepulls-crd.yaml): the
// pulls this node served, in flight and recently finished, rebuilt from the PullEngine
// every `period` (1s..1m, as the 2019 KEP's per-node resource asks). The HTTP server
// serves the latest object on /imagepulls; the optional StatusWriter applies it to the
// API server.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/node_name.h"
#include "base/status.h"
#include "pulls/pull_view.h"

namespace statlet::pulls {

class PullEngine;

inline constexpr char kNodePullsApiVersion[] = "statlet.io/v1alpha1";
inline constexpr char kNodePullsKind[] = "NodeImagePulls";
inline constexpr size_t kNodePullsMaxImages = 256;  // the CRD's maxItems
inline constexpr size_t kNodePullsMaxLayers = 128;  // per image, the CRD's maxItems

struct NodePullsOptions {
  std::string node_name;
  std::chrono::seconds period{5};
};

// The object for `pulls` (oldest first) at `now_unix_ns`. With `with_time` false the
// updateTime is left empty: what two objects are compared by.
std::string NodePullsJson(const NodePullsOptions& options, const std::vector<PullViewPtr>& pulls, int64_t now_unix_ns,
                          bool with_time = true);

class NodePullsView {
 public:
  // Called on the view's thread with each rebuilt object and its content without the time.
  using Listener = std::function<void(std::shared_ptr<const std::string> object, const std::string& content)>;

  NodePullsView(PullEngine* engine, NodePullsOptions options, Listener listener = nullptr);
  ~NodePullsView();
  void Start();
  void Stop();
  // The object as last built (built once at construction).
  std::shared_ptr<const std::string> Current() const;
  uint64_t builds() const;

 private:
  void Build();
  PullEngine* engine_;
  NodePullsOptions options_;
  Listener listener_;
  mutable std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;
  std::shared_ptr<const std::string> current_;
  uint64_t builds_ = 0;
  std::thread thread_;
};

}  // namespace statlet::pulls
