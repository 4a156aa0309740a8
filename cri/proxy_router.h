// ProxyRouter: proxy mode's CRI socket. The kubelet's HTTP/2 connection ends here, and
// each of its streams is routed by its :path to one of two HTTP/2 connections this
// connection opens on its first call of each kind:
//
//   kubelet ──HTTP/2──▶ statlet CRI socket ──┬─ runtime.v1 calls statlet does not answer ─▶ runtime socket
//            (ProxyRouter, one thread)        └─ stats calls, pulls, anything else ────────▶ statlet's own gRPC
//                                                                                            server (a socketpair)
//
// A routed stream keeps everything of the call: the caller's headers (metadata, deadline
// as grpc-timeout, user agent) go to the runtime as they came, its DATA (the
// length-prefixed messages, byte for byte) follows them, and the runtime's response
// headers, DATA and trailers (status, message, details) come back the same way; a
// RST_STREAM either way is passed on with its code. Nothing of it is parsed beyond the
// :path, grpc-timeout, grpc-status and each message's 5-byte prefix (cri/grpc_wire.h),
// so a method no proto of statlet's names passes like any other.
//
// Why HTTP/2 and not gRPC's own proxying: a passed call then costs statlet what a byte
// copy costs plus the HPACK work of two headers blocks, on one thread that sleeps only in
// epoll_wait; gRPC's call machinery in between (a generic service and a generic stub) cost
// 80–160 µs per call beyond a byte relay on this machine (bench/RESULTS.md).
//
// What a client can cost (the socket is the kubelet's; whoever else reaches it must not
// take the node's runtime with it):
//  - threads: none; every connection and call is served by the router's one thread, which
//    never waits on a call, the runtime or statlet's stats work (those answer on statlet's
//    own server, whose threads are bounded there);
//  - memory: HTTP/2 flow control. statlet grants a caller (and the runtime) credit for
//    kStreamWindow bytes per stream and renews a stream's only as the bytes it holds of it
//    are sent on, so a stream whose reader stalls holds at most that (the connection's
//    credit comes back as bytes arrive, as in gRPC's own transports: one stalled stream
//    must not stall the others); what the calls of one caller connection hold together is
//    bounded by kMaxHeldPerConnection and what all calls hold by max_held_bytes (a call
//    that would pass either is answered RESOURCE_EXHAUSTED); a message over
//    max_message_bytes is refused by its prefix and never passed; streams per connection
//    and connections are capped;
//  - time: a call past its deadline (grpc-timeout) is ended at the runtime and answered
//    DEADLINE_EXCEEDED, one whose request does not arrive within request_timeout is ended,
//    and one whose answer its client does not take within write_stall_timeout is reset.
//  - PING, SETTINGS and RST_STREAM floods: libnghttp2's bounds (queued acknowledgements,
//    a reset rate limit) end the connection.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "base/status.h"
#include "cri/passthrough.h"
#include "metrics/call_observer.h"

namespace statlet::cri {

struct ProxyRouterOptions {
  PassThroughOptions pass;
  // A new connection to statlet's own gRPC server (the stats calls, pulls): a connected,
  // non-blocking socket the router then owns, or -1 with errno set.
  std::function<int()> connect_local;
  // Told every passed call (statlet's own calls are told by its server). May be null.
  metrics::CallObserver* observer = nullptr;
  int max_connections = 1024;
  int max_streams_per_connection = 512;
};

class ProxyRouter {
 public:
  // Listens on `socket_path` (prepared by the caller: cri_server.cc) and starts the thread.
  static StatusOr<std::unique_ptr<ProxyRouter>> Start(ProxyRouterOptions options, const std::string& socket_path);
  // Stops (see Stop).
  ~ProxyRouter();
  // Closes the socket and every connection (calls in flight end UNAVAILABLE at their
  // callers and are cancelled at the runtime) and joins the thread. Idempotent.
  void Stop();

  class Impl;

 private:
  explicit ProxyRouter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace statlet::cri
