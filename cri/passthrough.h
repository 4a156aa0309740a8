// What proxy mode passes and how much a client may hold of it: the rule that picks the
// calls passed to the node runtime (runtime.v1 RuntimeService and ImageService, by method
// path, so a method no proto of statlet's names passes too), which of them change the
// node's workloads, and the bounds of passed calls. cri/proxy_router.h passes them.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace statlet::cri {

struct PassThroughOptions {
  std::string runtime_endpoint;                 // unix:///run/containerd/containerd.sock
  int max_calls = 4096;                         // calls in flight at once; more are answered RESOURCE_EXHAUSTED
  size_t max_message_bytes = size_t{16} << 20;  // what the kubelet and containerd accept
  size_t max_held_bytes = size_t{64} << 20;     // message bytes statlet holds for all calls
  std::chrono::milliseconds request_timeout{10000};
  std::chrono::milliseconds write_stall_timeout{120000};
  // Methods statlet answers itself besides the stats calls (full paths: its pulls and
  // ImagePullProgress): they go to statlet's own server, not to the runtime.
  std::vector<std::string> local_methods;
  // Called (on the router's thread, never under a lock of statlet's; it must not wait on
  // anything) when a call that changes the node's sandboxes or containers succeeded: the
  // runtime metadata is stale.
  std::function<void(std::string_view method)> on_change;
};

// The method paths statlet passes: runtime.v1 RuntimeService and ImageService.
bool IsPassableMethod(std::string_view path);
// Whether a successful call of `path` changes the node's sandboxes or containers.
bool ChangesWorkloads(std::string_view path);

}  // namespace statlet::cri
