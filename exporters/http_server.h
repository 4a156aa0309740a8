// HttpServer: an event-driven HTTP/1.1 server (Boost.Beast over one asio event loop
// thread) for a handful of fixed routes, built to face hostile clients:
//
//  - A connection costs a socket and a few KiB, never a thread. Open connections are
//    capped in total and per client address; over the cap a connection is answered 503
//    (plain HTTP) or closed at once. The accept queue is bounded.
//  - At the total cap a newcomer is not refused while some connection holds a slot
//    without having had a request let through (still reading one, or waiting for
//    authentication): the one that has held its slot longest is closed instead. A
//    connection that had a request served keeps its slot: partial requests trickled by
//    many clients cannot lock scrapers out.
//  - Reading is bounded in size and time: the header block (431) and a request body (413)
//    are capped while reading, and a whole request must arrive within the read timeout
//    of its first byte (408). Waiting for the next request on a keep-alive connection has
//    its own, shorter idle timeout. Request bodies are never stored or decompressed.
//  - Every error answer closes its connection. Pipelined requests are answered in order.
//  - Range is not supported: a ranged GET gets the whole body (RFC 9110 allows ignoring
//    it), so no range arithmetic can go wrong.
//  - Cheap routes (/healthz) run on the event loop and are answered even while every
//    worker is busy; expensive ones run on a bounded worker pool (503 when its queue is
//    full). Requests to the main address pass an HttpAuthorizer when one is set (basic
//    auth, or the API server's reviews): a remembered verdict on the loop, else a check
//    off the loop whose queue is bounded by the authorizer.
//  - The listen address is held exclusively (no SO_REUSEPORT): a second instance fails
//    with a clear error. An optional second address serves chosen routes without TLS or
//    auth, for the kubelet's probes.
//  - A handler may answer with a ByteStream (HttpResponse::stream): a chunked answer sent
//    as it is produced, ended when the client closes (a read watches for it) or when its
//    peer stops acknowledging (TCP keepalive and TCP_USER_TIMEOUT on its socket).
//  - Stop() closes idle connections (and streams) at once, lets answers in flight finish for up to a
//    second and closes the rest: the process exits promptly whatever the clients do.
//
// Handlers see a small request (method, path, the headers content negotiation needs) and
// return a body and its content type; they know nothing of sockets or HTTP framing.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/byte_stream.h"
#include "base/status.h"
#include "exporters/http_authorizer.h"
#include "exporters/kept_text.h"
#include "exporters/web_config.h"

namespace statlet {

struct HttpRequest {
  std::string method;  // GET or HEAD (others are answered 405 before any handler)
  std::string path;    // the target without its query
  std::string accept;
  std::string accept_encoding;
};

struct HttpResponse {
  int status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  // Shared, so that one encoded exposition is sent to many clients without copies: a text
  // in pieces (sent as they are, gathered), then a contiguous one.
  std::shared_ptr<const TextRope> pieces;
  std::shared_ptr<const std::string> body;
  // Sent right after `body` (a per-request part of a shared body).
  std::string tail;
  // Set: the answer is this stream instead (chunked, on a connection of its own that closes
  // after it), sent as it is produced until it ends or the client leaves; `body` is unused.
  // A client that takes no bytes for the write timeout is dropped, so the connection holds
  // at most one chunk; what the stream keeps meanwhile is the producer's bound. One client
  // address holds at most max_streams_per_address streams (more: 503, the stream closed).
  std::shared_ptr<ByteStream> stream;
  std::vector<std::pair<std::string, std::string>> headers;

  static HttpResponse Text(int status, std::string text);
};

using HttpHandler = std::function<HttpResponse(const HttpRequest&)>;

struct HttpRoute {
  std::string path;
  HttpHandler handler;
  // On the worker pool (it may block on a collection) or inline on the event loop (it
  // must return in microseconds).
  bool on_worker = false;
  // Also served on the health address, without TLS or auth.
  bool on_health_listener = false;
  // Serves every path under `path` (which then ends with '/'), not just `path` itself.
  bool prefix = false;
};

// Transport settings: what the daemon's --web.* flags set.
struct HttpTransportOptions {
  std::string listen_address = ":10340";
  // A second plain-HTTP address for the routes marked on_health_listener, served without
  // TLS or auth (for probes; bind it to loopback). Empty: none.
  std::string health_listen_address;
  WebConfig web;  // TLS, basic auth, extra headers
  // Checks every request to the main address; basic auth users in `web` make one of their
  // own (both at once is an error). Null: none.
  std::shared_ptr<HttpAuthorizer> authorizer;
  std::chrono::seconds read_timeout{10};       // a whole request, from its first byte
  std::chrono::seconds write_timeout{30};      // a whole answer
  std::chrono::seconds keep_alive_timeout{5};  // waiting for a request (idle)
  // A streamed answer's peer that vanished without a word (no FIN, no RST: a node or pod
  // gone, a link cut) is found by TCP keepalive probes while the stream is idle and by the
  // retransmission bound while bytes are unacknowledged: the connection is dropped once the
  // peer acknowledged nothing for this long (TCP_USER_TIMEOUT), probes starting a third of
  // it after the last sign of the peer. A live client answers probes in its kernel, whatever
  // it reads: the NDJSON it parses is unchanged.
  std::chrono::seconds stream_peer_timeout{30};
  size_t keep_alive_max_requests = 1000;
  size_t max_request_bytes = 64 * 1024;  // a request body (read and dropped)
  size_t max_header_bytes = 16 * 1024;   // request line and headers
  size_t max_connections = 512;
  size_t max_connections_per_address = 64;
  // Streamed answers (HttpResponse::stream) held at once by one client address; more get
  // 503. Below max_connections_per_address (Create checks it), so that an address whose
  // streams are all open still has places for its other requests (/healthz, /metrics).
  // 0: three quarters of max_connections_per_address (48 of 64), rounded down.
  size_t max_streams_per_address = 0;
  int listen_backlog = 128;
  size_t threads = 2;               // workers for on_worker routes
  size_t max_queued_requests = 64;  // waiting for a worker
};

// The streams one address may hold with these options (max_streams_per_address, or its
// default from the connections per address).
size_t StreamsPerAddress(const HttpTransportOptions& options);

class HttpServer {
 public:
  // Validates the options, loads TLS files (errors say why) and prepares the routes.
  static StatusOr<std::unique_ptr<HttpServer>> Create(HttpTransportOptions options, std::vector<HttpRoute> routes);
  ~HttpServer();
  HttpServer(const HttpServer&) = delete;
  HttpServer& operator=(const HttpServer&) = delete;

  // Before Start: one more route.
  void AddRoute(HttpRoute route);
  // Binds the address(es) and serves from a background thread.
  Status Start();
  // Stops accepting and closes every connection (answers in flight get up to a second).
  // Idempotent.
  void Stop();
  int port() const;
  int health_port() const;  // 0 without a health address

  struct Counters {
    uint64_t connections_accepted = 0;
    uint64_t connections_refused = 0;  // over a connection cap
    uint64_t connections_shed = 0;     // closed at the cap for a newcomer
    uint64_t requests = 0;
    uint64_t rejected = 0;  // answered 4xx/5xx by the server itself (limits, parse errors, auth)
  };
  Counters counters() const;

  class Impl;

 private:
  explicit HttpServer(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace statlet
