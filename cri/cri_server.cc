#include "cri/cri_server.h"

#include "cri/call_metrics.h"

#include <errno.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/resource_quota.h>
#include <grpcpp/server_posix.h>

#include "base/log.h"
#include "base/unix_socket.h"
#include "proto/image_service.grpc.pb.h"

namespace statlet::cri {
namespace {

// What one client may cost. The socket is 0660, but whoever can reach it must still not
// be able to take the daemon's threads or memory.
//
// Threads: a call whose answer is never granted HTTP/2 flow-control credit holds its
// server thread; streams per connection and threads overall are capped (a call past
// the thread cap is answered RESOURCE_EXHAUSTED at once), and a connection is closed
// after kMaxConnectionAge plus a grace, so a stalled call cannot hold a thread for longer
// (clients such as the kubelet reconnect transparently; stats calls take milliseconds).
// The grace is long because an image pull's progress stream lives as long as the pull: a
// pull still running when its connection's grace ends is not lost (it goes on), and the
// client's next request for the image joins it.
constexpr int kMaxThreads = 32;
constexpr int kMaxStreamsPerConnection = 16;
constexpr int kMaxConnectionAgeMs = 10 * 60 * 1000;
constexpr int kMaxConnectionAgeGraceMs = 20 * 60 * 1000;
// Memory: requests are small (an id, a filter); answers may be large. The transport reads
// at most kMaxReadChunkBytes at once (not megabytes), and its buffers count against
// kTransportMemoryBytes.
constexpr int kMaxRequestBytes = 2 * 1024 * 1024;
constexpr int kMaxReadChunkBytes = 64 * 1024;
constexpr int kMaxMetadataBytes = 16 * 1024;
constexpr size_t kTransportMemoryBytes = 64 * 1024 * 1024;
// PINGs: a client's PINGs are answered, and their answers are what bounds them: while
// 10,000 answers wait to be written (a client that does not read), the transport stops
// reading from that client. gRPC's own "ping strikes" (GOAWAY after too many PINGs) stay
// off: in gRPC 1.51 every PING parsed after the strike limit, until the connection is
// gone, adds a child to the transport's close error, and a flood of them grew the
// daemon by hundreds of MB (measured: 8 flooding clients for 5 s, peak RSS 210-740 MiB;
// with strikes off 20-27 MiB, also for 15 s). The server checks that an idle
// client is still there every kKeepaliveMs and drops it after kKeepaliveTimeoutMs without
// an answer.
constexpr int kMaxPingStrikes = 0;  // 0: no GOAWAY for PINGs
constexpr int kKeepaliveMs = 2 * 60 * 1000;
constexpr int kKeepaliveTimeoutMs = 20 * 1000;

constexpr int kPollerIdleMs = 1000;

// Proxy mode: the socket is the kubelet's runtime. Its calls are many and some live long
// (GetContainerEvents, PullImage and ExecSync have no deadline): no connection age, so a
// stream lasts as long as it would on the runtime's own socket, and more streams per
// connection (the kubelet's pod workers, probes and stats share one); its requests may be
// as large as the runtime accepts. Passed calls never reach this server: the router
// (cri/proxy_router.h) bounds what they hold and how long they may stall.
constexpr int kProxyMaxStreamsPerConnection = 512;

void Bound(grpc::ServerBuilder* builder, const std::optional<PassThroughOptions>& proxy) {
  grpc::ResourceQuota quota("statlet-cri");
  quota.SetMaxThreads(kMaxThreads);
  quota.Resize(kTransportMemoryBytes);
  builder->SetResourceQuota(quota);
  builder->SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::NUM_CQS, 1);
  builder->SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MIN_POLLERS, 1);
  builder->SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::MAX_POLLERS, 2);
  // A poller beyond MIN_POLLERS leaves when its wait times out: gRPC's default of 10 s kept
  // the threads of a burst of calls that long after it; one wake-up a second instead.
  builder->SetSyncServerOption(grpc::ServerBuilder::SyncServerOption::CQ_TIMEOUT_MSEC, kPollerIdleMs);
  if (proxy) {
    builder->SetMaxReceiveMessageSize(static_cast<int>(std::min<size_t>(proxy->max_message_bytes, INT32_MAX)));
    builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kProxyMaxStreamsPerConnection);
  } else {
    builder->SetMaxReceiveMessageSize(kMaxRequestBytes);
    builder->AddChannelArgument(GRPC_ARG_MAX_CONCURRENT_STREAMS, kMaxStreamsPerConnection);
    builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_MS, kMaxConnectionAgeMs);
    builder->AddChannelArgument(GRPC_ARG_MAX_CONNECTION_AGE_GRACE_MS, kMaxConnectionAgeGraceMs);
  }
  builder->AddChannelArgument(GRPC_ARG_TCP_MAX_READ_CHUNK_SIZE, kMaxReadChunkBytes);
  builder->AddChannelArgument(GRPC_ARG_MAX_METADATA_SIZE, kMaxMetadataBytes);
  builder->AddChannelArgument(GRPC_ARG_HTTP2_MAX_PING_STRIKES, kMaxPingStrikes);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIME_MS, kKeepaliveMs);
  builder->AddChannelArgument(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, kKeepaliveTimeoutMs);
}

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

  CriServiceOptions service = options.service;
  if (options.proxy) service.stats_calls_only = true;
  std::unique_ptr<CriServer> server(new CriServer(*path, std::make_unique<CriStatsService>(source, service)));
  grpc::Service* images = options.image_service;
  if (images == nullptr && !options.proxy) {
    server->unimplemented_images_ = std::make_unique<UnimplementedImageService>();
    images = server->unimplemented_images_.get();
  }
  grpc::ServerBuilder builder;
  Bound(&builder, options.proxy);
  // Proxy mode: the socket is the router's (cri/proxy_router.h), and this server has no
  // socket of its own: the router hands it one end of a socketpair per caller connection
  // for the calls statlet answers. Its services leave the passed methods out, which gRPC
  // answers through a generic service: UNIMPLEMENTED (none is routed here).
  int bound = 0;
  if (!options.proxy) builder.AddListeningPort("unix:" + *path, grpc::InsecureServerCredentials(), &bound);
  builder.RegisterService(server->stats_.get());
  if (options.runtime_extra != nullptr) builder.RegisterService(options.runtime_extra);
  if (images != nullptr) builder.RegisterService(images);
  if (options.proxy) {
    server->unregistered_ = std::make_unique<grpc::CallbackGenericService>();
    builder.RegisterCallbackGenericService(server->unregistered_.get());
  }
  if (options.call_observer) {
    std::vector<std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>> interceptors;
    interceptors.push_back(CallMetricsInterceptorFactory(options.call_observer));
    builder.experimental().SetInterceptorCreators(std::move(interceptors));
  }
  server->server_ = builder.BuildAndStart();
  if (server->server_ == nullptr || (!options.proxy && bound == 0)) {
    return Unavailable("cannot listen on unix socket " + *path);
  }
  if (options.proxy) {
    ProxyRouterOptions ro;
    ro.pass = *options.proxy;
    ro.observer = options.call_observer;
    grpc::Server* own = server->server_.get();
    ro.connect_local = [own]() -> int {
      int sv[2];
      if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) != 0) return -1;
      grpc::AddInsecureChannelFromFd(own, sv[1]);  // the server owns sv[1] now
      return sv[0];
    };
    auto router = ProxyRouter::Start(std::move(ro), *path);
    if (!router.ok()) {
      server->Stop(std::chrono::milliseconds(0));
      return router.status();
    }
    server->router_ = std::move(*router);
  }
  // The socket exists now; narrow its mode before anyone but root relies on it.
  if (chmod(path->c_str(), options.socket_mode) != 0) {
    Status s = ErrnoStatus(errno, "chmod " + *path);
    server->Stop(std::chrono::milliseconds(0));
    return s;
  }
  struct stat st;
  if (stat(path->c_str(), &st) == 0) server->socket_inode_ = st.st_ino;
  if (options.proxy) {
    log::Info("CRI proxy listening on unix://" + *path +
              ": stats calls answered by statlet, every other call passed to " + options.proxy->runtime_endpoint);
  } else {
    log::Info("CRI stats service listening on unix://" + *path);
  }
  return server;
}

void CriServer::Stop(std::chrono::milliseconds grace) {
  if (server_ == nullptr) return;
  // The router first: no call reaches the server after it, and the calls it passed end.
  if (router_) router_->Stop();
  server_->Shutdown(std::chrono::system_clock::now() + grace);
  server_->Wait();
  server_.reset();
  router_.reset();
  // Remove the socket only if it is still ours (not replaced by a newer instance).
  struct stat st;
  if (socket_inode_ != 0 && stat(path_.c_str(), &st) == 0 && st.st_ino == socket_inode_) unlink(path_.c_str());
}

}  // namespace statlet::cri
