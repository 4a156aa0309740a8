#include "cri/cri_server.h"

#include "cri/call_metrics.h"

#include <errno.h>
#include <sys/stat.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include "base/log.h"
#include "cri/proto/image_service.grpc.pb.h"
#include "cri/socket_path.h"

namespace statlet::cri {
namespace {

// Every image call answers UNIMPLEMENTED (a server without a runtime behind it).
class UnimplementedImageService final : public ::runtime::v1::ImageService::Service {};

}  // namespace

CriServer::CriServer(std::string path, std::unique_ptr<CriStatsService> stats)
    : path_(std::move(path)), stats_(std::move(stats)) {}

CriServer::~CriServer() { Stop(std::chrono::milliseconds(0)); }

StatusOr<std::unique_ptr<CriServer>> CriServer::Start(SnapshotSource* source, const CriServerOptions& options) {
  if (source == nullptr) return InvalidArgument("CriServer needs a snapshot source");
  auto path = ParseUnixEndpoint(options.listen_path);
  if (!path.ok()) return path.status();
  if (Status s = PrepareListenPath(*path); !s.ok()) return s;

  std::unique_ptr<CriServer> server(new CriServer(*path, std::make_unique<CriStatsService>(source, options.service)));
  grpc::Service* images = options.image_service;
  if (images == nullptr) {
    server->unimplemented_images_ = std::make_unique<UnimplementedImageService>();
    images = server->unimplemented_images_.get();
  }
  grpc::ServerBuilder builder;
  int bound = 0;
  builder.AddListeningPort("unix:" + *path, grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(server->stats_.get());
  builder.RegisterService(images);
  if (options.self_metrics) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(CallMetricsInterceptorFactory(options.self_metrics));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || bound == 0) {
    return Unavailable("cannot listen on unix socket " + *path);
  }
  // The socket exists now; narrow its mode before anyone but root relies on it.
  if (chmod(path->c_str(), options.socket_mode) != 0) {
    Status s = ErrnoStatus(errno, "chmod " + *path);
    server->Stop(std::chrono::milliseconds(0));
    return s;
  }
  struct stat st;
  if (stat(path->c_str(), &st) == 0) server->socket_inode_ = st.st_ino;
  log::Info("CRI stats service listening on unix://" + *path);
  return server;
}

void CriServer::Stop(std::chrono::milliseconds grace) {
  if (server_ == nullptr) return;
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
  server_.reset();
  // Remove the socket only if it is still ours (not replaced by a newer instance).
  struct stat st;
  if (socket_inode_ != 0 && stat(path_.c_str(), &st) == 0 && st.st_ino == socket_inode_) unlink(path_.c_str());
}

}  // namespace statlet::cri
