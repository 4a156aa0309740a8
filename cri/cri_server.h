// CriServer: serves CriStatsService (and any more RuntimeService methods statlet answers)
// and an ImageService on a unix socket. The daemon
// starts one with its SnapshotSource (and its image service, pulls/) and stops it at
// shutdown. In proxy mode (`proxy` set) the socket is a ProxyRouter's (cri/proxy_router.h):
// every runtime.v1 call statlet does not answer goes to the runtime, and the calls it
// answers reach this server through the router.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "cri/cri_daemon_options.h"  // kDefaultCriListenPath
#include "cri/passthrough.h"
#include "cri/proxy_router.h"
#include "cri/stats_service.h"
#include "metrics/call_observer.h"
#include "snapshot/snapshot_source.h"

namespace grpc {
class CallbackGenericService;
class Server;
class Service;
}  // namespace grpc

namespace statlet::cri {

struct CriServerOptions {
  std::string listen_path = kDefaultCriListenPath;  // a path or unix:///path
  mode_t socket_mode = 0660;
  CriServiceOptions service;
  metrics::CallObserver* call_observer = nullptr;  // told every call when set; must outlive the server
  // Serves runtime.v1.ImageService (must outlive the server); null: every image call
  // answers UNIMPLEMENTED (passes to the runtime in proxy mode, where it must register only
  // the methods statlet answers itself).
  grpc::Service* image_service = nullptr;
  // More runtime.v1.RuntimeService methods statlet answers itself (ImagePullProgress,
  // pulls/pull_progress_service.h), registered beside the stats service. Must outlive the
  // server; null: none.
  grpc::Service* runtime_extra = nullptr;
  // Proxy mode: the runtime, the bounds of passed calls, and the methods image_service and
  // runtime_extra answer (local_methods: the router sends them here with the stats calls).
  // service.stats_calls_only is then implied.
  std::optional<PassThroughOptions> proxy;
};

class CriServer {
 public:
  // Prepares the path (a stale socket file is replaced, a live one refused), binds,
  // sets the mode and starts serving. `source` must outlive the server.
  static StatusOr<std::unique_ptr<CriServer>> Start(SnapshotSource* source, const CriServerOptions& options);
  ~CriServer();

  // Stops accepting calls, lets running ones finish within `grace`, removes the socket
  // file. Idempotent.
  void Stop(std::chrono::milliseconds grace = std::chrono::milliseconds(2000));
  const std::string& path() const { return path_; }

 private:
  CriServer(std::string path, std::unique_ptr<CriStatsService> stats);

  std::string path_;
  ino_t socket_inode_ = 0;
  std::unique_ptr<CriStatsService> stats_;
  std::unique_ptr<grpc::Service> unimplemented_images_;         // when no image service is given
  std::unique_ptr<grpc::CallbackGenericService> unregistered_;  // proxy mode; outlives server_
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ProxyRouter> router_;  // proxy mode: the socket
};

}  // namespace statlet::cri
