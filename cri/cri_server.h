// CriServer: serves CriStatsService (and any more RuntimeService methods statlet answers)
// and an ImageService on a unix socket. The daemon
// starts one with its SnapshotSource (and its image service, pulls/) and stops it at
// shutdown. In proxy mode (`proxy` set) it also registers the generic PassThroughService:
// every call neither service registers goes to the runtime (cri/passthrough.h), and the
// image service's calls reach it in-process through the pass-through.
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
  // answers UNIMPLEMENTED (passes to the runtime in proxy mode). In proxy mode it must
  // register only the methods statlet answers itself, named in image_methods (full
  // paths): it then serves on an in-process server of its own, and the pass-through
  // passes those calls to it (cri_server.cc says why).
  grpc::Service* image_service = nullptr;
  std::vector<std::string> image_methods;
  // More runtime.v1.RuntimeService methods statlet answers itself (ImagePullProgress,
  // pulls/pull_progress_service.h), registered beside the stats service: in proxy mode
  // gRPC matches them before the generic service, so they never reach the runtime. Must
  // outlive the server; null: none.
  grpc::Service* runtime_extra = nullptr;
  // Proxy mode: the runtime and the bounds of passed calls. service.stats_calls_only is
  // then implied.
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
  // Proxy mode's passed calls; null otherwise.
  const PassThroughService* pass_through() const { return pass_through_.get(); }

 private:
  CriServer(std::string path, std::unique_ptr<CriStatsService> stats);

  std::string path_;
  ino_t socket_inode_ = 0;
  std::unique_ptr<CriStatsService> stats_;
  std::unique_ptr<grpc::Service> unimplemented_images_;                // when no image service is given
  std::unique_ptr<PassThroughService> pass_through_;                   // proxy mode; outlives server_
  std::unique_ptr<grpc::CallbackGenericService> unregistered_images_;  // outlives images_server_
  std::unique_ptr<grpc::Server> images_server_;                        // proxy mode: image_service, in-process only
  std::unique_ptr<grpc::Server> server_;
};

}  // namespace statlet::cri
