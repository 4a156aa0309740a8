#include "exporters/http_server.h"

#include <algorithm>
#include <array>

// Boost 1.74's asio uses std::exchange without including <utility> in C++20 mode.
#include <utility>

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <sys/socket.h>
#include <unistd.h>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/ssl.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/ssl.hpp>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <list>
#include <map>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include "base/log.h"
#include "exporters/basic_auth.h"
#include "exporters/listen_socket.h"
#include "exporters/tls_server_context.h"
#include "exporters/worker_pool.h"

namespace statlet {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;
using std::chrono::milliseconds;

// Which of the two listeners a connection came in on. Not in the unnamed namespace: the
// sessions (named, for HttpServer::Impl) hold one.
enum class Listener { kMain, kHealth };

namespace {

constexpr size_t kHealthConnections = 32;  // the probe port: the kubelet, a few at a time
constexpr size_t kDiscardBytes = 4096;     // scratch for request bodies that are dropped
constexpr size_t kLingerBytes = 1 << 20;   // read and dropped after an error answer
constexpr milliseconds kLingerTime{2000};
constexpr milliseconds kStopGrace{1000};
constexpr milliseconds kAcceptRetry{100};

const std::shared_ptr<const std::string>& EmptyBody() {
  static const auto* empty = new std::shared_ptr<const std::string>(std::make_shared<const std::string>());
  return *empty;
}

}  // namespace

HttpResponse HttpResponse::Text(int status, std::string text) {
  HttpResponse r;
  r.status = status;
  r.body = std::make_shared<const std::string>(std::move(text));
  return r;
}

class SessionBase;

class HttpServer::Impl {
 public:
  Impl(HttpTransportOptions options, std::vector<HttpRoute> routes)
      : o(std::move(options)),
        routes(std::move(routes)),
        authorizer(o.authorizer),
        workers("statlet-http", std::max<size_t>(1, o.threads), std::max<size_t>(1, o.max_queued_requests)) {
    if (!o.web.basic_auth_users.empty()) authorizer = std::make_shared<BasicHttpAuthorizer>(o.web);
  }

  void Accept(Listener which);
  void OnAccepted(Listener which, tcp::socket socket);
  void Release(SessionBase* s, Listener which, const asio::ip::address& address);
  // At the connection cap: closes the main-listener connection that has held its slot
  // longest without a request let through to its handler; false when there is none.
  bool ShedOne();
  const HttpRoute* Route(const std::string& path) const {
    for (const HttpRoute& r : routes) {
      if (r.path == path || (r.prefix && path.size() > r.path.size() && path.compare(0, r.path.size(), r.path) == 0)) {
        return &r;
      }
    }
    return nullptr;
  }
  void Count(uint64_t Counters::*field) {
    std::lock_guard<std::mutex> lock(counters_mu);
    ++(counters.*field);
  }

  // Declared first: destroyed last, after everything that holds its executor.
  asio::io_context io{1};
  HttpTransportOptions o;
  std::vector<HttpRoute> routes;
  std::optional<asio::ssl::context> tls;
  std::shared_ptr<HttpAuthorizer> authorizer;  // null: none
  WorkerPool workers;                          // on_worker routes
  tcp::acceptor main_acceptor{io};
  tcp::acceptor health_acceptor{io};
  asio::steady_timer main_retry{io};
  asio::steady_timer health_retry{io};
  int port = 0;
  int health_port = 0;
  std::thread thread;
  bool started = false;
  bool stopped = false;

  // Event loop thread only.
  bool stopping = false;
  size_t open_main = 0;
  size_t open_health = 0;
  std::map<asio::ip::address, size_t> per_address;
  std::map<asio::ip::address, size_t> streams_per_address;  // streamed answers being sent
  size_t streams_per_address_cap = 0;                       // StreamsPerAddress(o)
  std::unordered_map<SessionBase*, std::weak_ptr<SessionBase>> sessions;
  // Main-listener connections no request of which was let through to its handler yet
  // (still reading one, refused, or waiting for authentication), oldest first: the ones
  // shed at the connection cap.
  std::list<SessionBase*> unproven;
  std::atomic<size_t> open_sessions{0};

  mutable std::mutex counters_mu;
  Counters counters;
};

// What every connection does whatever its stream: find the route, check credentials,
// run the handler inline or on a worker, hand the answer back to the event loop.
class SessionBase : public std::enable_shared_from_this<SessionBase> {
 public:
  // kStreaming: sending a ByteStream; not busy (Stop closes it at once, it has no end).
  enum class State { kIdle, kReading, kWorking, kWriting, kStreaming, kClosing };

  SessionBase(HttpServer::Impl* server, Listener which, asio::ip::address address)
      : s_(server), which_(which), address_(std::move(address)) {}
  virtual ~SessionBase() = default;

  virtual void Start() = 0;
  // Closes the socket now; pending operations end with operation_aborted. Idempotent.
  virtual void CloseNow() = 0;
  bool busy() const { return state_ == State::kWorking || state_ == State::kWriting; }
  // Sheddable at the connection cap: no request let through yet, and not writing an
  // answer (a request waiting for authentication may be shed).
  bool sheddable() const { return unproven_ && state_ != State::kWriting; }
  void JoinUnproven(std::list<SessionBase*>* list) {
    unproven_it_ = list->insert(list->end(), this);
    unproven_ = true;
  }
  // Leaves the unproven list: a request was let through, or the connection closed.
  void Prove() {
    if (!unproven_) return;
    s_->unproven.erase(unproven_it_);
    unproven_ = false;
  }

 protected:
  // Answers `r`; keeps the connection when `keep_alive` (and the answer is no error).
  virtual void Respond(HttpResponse r, bool keep_alive) = 0;

  void Fail(int status, std::string text, std::vector<std::pair<std::string, std::string>> headers = {}) {
    s_->Count(&HttpServer::Counters::rejected);
    HttpResponse r = HttpResponse::Text(status, std::move(text) + "\n");
    r.headers = std::move(headers);
    Respond(std::move(r), false);
  }

  void Dispatch(HttpRequest req, const std::string& authorization, bool keep_alive) {
    s_->Count(&HttpServer::Counters::requests);
    const HttpRoute* route = s_->Route(req.path);
    if (route == nullptr || (which_ == Listener::kHealth && !route->on_health_listener)) {
      Fail(404, "not found");
      return;
    }
    if (which_ == Listener::kMain && s_->authorizer) {
      HttpAuthorizer::Request ar{req.method, req.path, authorization};
      if (std::optional<AuthVerdict> v = s_->authorizer->Remembered(ar)) {
        if (!v->allowed()) {
          Refuse(std::move(*v));
          return;
        }
      } else {
        // Waiting for the check: not served yet, so the connection may be shed at the cap.
        state_ = State::kWorking;
        auto self = shared_from_this();
        s_->authorizer->Check(ar, [self, route, req = std::move(req), keep_alive](AuthVerdict v) mutable {
          asio::post(self->s_->io, [self, route, req = std::move(req), keep_alive, v = std::move(v)]() mutable {
            if (self->closed_) return;
            if (!v.allowed()) {
              self->Refuse(std::move(v));
            } else {
              self->Run(*route, std::move(req), keep_alive);
            }
          });
        });
        return;
      }
    }
    Run(*route, std::move(req), keep_alive);
  }

  HttpServer::Impl* s_;
  Listener which_;
  asio::ip::address address_;
  State state_ = State::kIdle;
  bool closed_ = false;
  size_t served_ = 0;

 private:
  bool unproven_ = false;
  std::list<SessionBase*>::iterator unproven_it_;

  void Refuse(AuthVerdict v) { Fail(v.status, std::move(v.text), std::move(v.headers)); }

  void Run(const HttpRoute& route, HttpRequest req, bool keep_alive) {
    if (closed_) return;
    Prove();
    if (!route.on_worker) {
      Respond(route.handler(req), keep_alive);
      return;
    }
    state_ = State::kWorking;
    auto self = shared_from_this();
    bool queued = s_->workers.TrySubmit([self, &route, req = std::move(req), keep_alive] {
      HttpResponse r = route.handler(req);
      asio::post(self->s_->io,
                 [self, r = std::move(r), keep_alive]() mutable { self->Respond(std::move(r), keep_alive); });
    });
    if (!queued) Fail(503, "busy: too many requests waiting", {{"Retry-After", "1"}});
  }
};

template <class Stream>
class Session : public SessionBase {
 public:
  static constexpr bool kTls = !std::is_same_v<Stream, beast::tcp_stream>;

  template <class... Args>
  Session(HttpServer::Impl* server, Listener which, asio::ip::address address, Args&&... stream_args)
      : SessionBase(server, which, std::move(address)),
        stream_(std::forward<Args>(stream_args)...),
        buffer_(server->o.max_header_bytes + kDiscardBytes) {}

  void Start() override {
    if constexpr (kTls) {
      tcp().expires_after(s_->o.read_timeout);
      auto self = Self();
      stream_.async_handshake(asio::ssl::stream_base::server, [self](beast::error_code ec) {
        if (self->closed_) return;
        if (ec) {
          self->CloseNow();  // a failed handshake (no or a bad client certificate, garbage) ends here
          return;
        }
        self->WaitForRequest();
      });
    } else {
      WaitForRequest();
    }
  }

  void CloseNow() override {
    if (closed_) return;
    closed_ = true;
    state_ = State::kClosing;
    beast::error_code ec;
    tcp().socket().shutdown(tcp::socket::shutdown_both, ec);
    tcp().close();
    if (stall_) stall_->cancel();
    if (stream_body_) {
      stream_body_->Close();
      stream_body_.reset();
    }
    if (stream_counted_) {
      auto it = s_->streams_per_address.find(address_);
      if (it != s_->streams_per_address.end() && --it->second == 0) s_->streams_per_address.erase(it);
      stream_counted_ = false;
    }
    Prove();
    s_->Release(this, which_, address_);
  }

 private:
  beast::tcp_stream& tcp() { return beast::get_lowest_layer(stream_); }
  std::shared_ptr<Session> Self() { return std::static_pointer_cast<Session>(shared_from_this()); }

  // Idle: waits for the first byte of a request, for the idle timeout at most.
  void WaitForRequest() {
    state_ = State::kIdle;
    if (s_->stopping) {
      CloseNow();
      return;
    }
    if (buffer_.size() > 0) {  // pipelined: the next request is here already
      ReadRequest();
      return;
    }
    tcp().expires_after(s_->o.keep_alive_timeout);
    auto self = Self();
    stream_.async_read_some(buffer_.prepare(1024), [self](beast::error_code ec, size_t n) {
      if (self->closed_) return;
      if (ec) {
        self->CloseNow();  // idle timeout, or the client left
        return;
      }
      self->buffer_.commit(n);
      self->ReadRequest();
    });
  }

  // A request has begun: its header (and any body) must arrive within the read timeout.
  void ReadRequest() {
    state_ = State::kReading;
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(s_->o.max_header_bytes));
    parser_->body_limit(s_->o.max_request_bytes);
    tcp().expires_after(s_->o.read_timeout);
    auto self = Self();
    http::async_read_header(stream_, buffer_, *parser_, [self](beast::error_code ec, size_t) {
      if (self->closed_) return;
      if (ec) {
        self->OnReadError(ec);
        return;
      }
      self->OnHeader();
    });
  }

  void OnHeader() {
    const auto& req = parser_->get();
    const http::verb method = req.method();
    if (method != http::verb::get && method != http::verb::head) {
      Fail(405, "method not allowed", {{"Allow", "GET, HEAD"}});
      return;
    }
    const bool has_body = parser_->chunked() || parser_->content_length().value_or(0) > 0;
    if (has_body && parser_->content_length().value_or(0) > s_->o.max_request_bytes) {
      Fail(413, "request body too large");
      return;
    }
    if (has_body) {
      DropBody();
      return;
    }
    OnRequest();
  }

  // A GET may carry a body nobody reads: it is read (up to the cap) into a small scratch
  // and dropped, never stored, never decompressed.
  void DropBody() {
    if (!discard_) discard_ = std::make_unique<char[]>(kDiscardBytes);
    parser_->get().body().data = discard_.get();
    parser_->get().body().size = kDiscardBytes;
    auto self = Self();
    http::async_read(stream_, buffer_, *parser_, [self](beast::error_code ec, size_t) {
      if (self->closed_) return;
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        self->OnReadError(ec);
        return;
      }
      if (self->parser_->is_done()) {
        self->OnRequest();
      } else {
        self->DropBody();
      }
    });
  }

  void OnReadError(beast::error_code ec) {
    if (ec == http::error::header_limit || ec == http::error::buffer_overflow) {
      Fail(431, "request header fields too large");
    } else if (ec == http::error::body_limit) {
      Fail(413, "request body too large");
    } else if (ec == beast::error::timeout) {
      Fail(408, "request timeout");
    } else if (ec == http::error::end_of_stream || ec == asio::error::eof || ec == asio::error::connection_reset ||
               ec == asio::error::operation_aborted || ec == http::error::partial_message ||
               ec == asio::ssl::error::stream_truncated) {
      CloseNow();
    } else {
      Fail(400, "bad request: " + ec.message());
    }
  }

  void OnRequest() {
    const auto& req = parser_->get();
    HttpRequest r;
    r.method = std::string(req.method_string());
    head_ = req.method() == http::verb::head;
    std::string_view target(req.target().data(), req.target().size());
    r.path = std::string(target.substr(0, target.find('?')));
    r.accept = std::string(req[http::field::accept]);
    r.accept_encoding = std::string(req[http::field::accept_encoding]);
    const std::string authorization(req[http::field::authorization]);
    const bool keep_alive = req.keep_alive();
    parser_.reset();
    Dispatch(std::move(r), authorization, keep_alive);
  }

  void Respond(HttpResponse r, bool keep_alive) override {
    if (closed_) return;
    if (r.stream && r.status < 400) {
      RespondStream(std::move(r));
      return;
    }
    ++served_;
    const bool keep = keep_alive && r.status < 400 && !s_->stopping && served_ < s_->o.keep_alive_max_requests;
    pieces_ = std::move(r.pieces);
    body_ = r.body ? std::move(r.body) : EmptyBody();
    tail_ = std::move(r.tail);
    const size_t pieces_size = pieces_ ? pieces_->size : 0;
    res_.emplace(static_cast<http::status>(r.status), 11);
    res_->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : s_->o.web.headers) res_->set(k, v);
    for (const auto& [k, v] : r.headers) res_->set(k, v);
    res_->keep_alive(keep);
    // HEAD: the length of the body that GET would send, and no body.
    res_->content_length(pieces_size + body_->size() + tail_.size());
    serializer_.emplace(*res_);
    state_ = State::kWriting;
    tcp().expires_after(s_->o.write_timeout);
    auto self = Self();
    auto done = [self, keep](beast::error_code ec, size_t) {
      if (self->closed_) return;
      self->serializer_.reset();
      self->res_.reset();
      self->pieces_.reset();
      self->buffers_.clear();
      self->body_.reset();
      self->tail_.clear();
      if (ec) {
        self->CloseNow();
      } else if (keep) {
        self->WaitForRequest();
      } else {
        self->Linger();
      }
    };
    // The header, then the body's parts as they are (no copy into the serializer).
    http::async_write_header(stream_, *serializer_, [self, done = std::move(done)](beast::error_code ec, size_t n) {
      if (self->closed_) return;
      std::vector<asio::const_buffer>& parts = self->buffers_;
      parts.clear();
      if (self->pieces_) {
        for (std::string_view p : self->pieces_->pieces) parts.push_back(asio::buffer(p.data(), p.size()));
      }
      if (!self->body_->empty()) parts.push_back(asio::buffer(*self->body_));
      if (!self->tail_.empty()) parts.push_back(asio::buffer(self->tail_));
      if (ec || self->head_ || parts.empty()) {
        done(ec, n);
        return;
      }
      // Gathered writes (writev); a TLS stream flattens small pieces into records itself.
      asio::async_write(self->stream_, parts, std::move(done));
    });
  }

  // A streamed answer: the header (chunked, the connection closes after it), then each
  // chunk the stream has ready, one write at a time, while a read waits for the client to
  // leave. A chunk the client does not take within the write timeout ends the connection.
  void RespondStream(HttpResponse r) {
    size_t& held = s_->streams_per_address[address_];
    if (held >= s_->streams_per_address_cap) {
      r.stream->Close();
      Fail(503, "too many streams open from this address (" + std::to_string(s_->streams_per_address_cap) + ")",
           {{"Retry-After", "1"}});
      return;
    }
    ++held;
    stream_counted_ = true;
    ++served_;
    stream_body_ = std::move(r.stream);
    res_.emplace(static_cast<http::status>(r.status), 11);
    res_->set(http::field::content_type, r.content_type);
    for (const auto& [k, v] : s_->o.web.headers) res_->set(k, v);
    for (const auto& [k, v] : r.headers) res_->set(k, v);
    res_->keep_alive(false);
    res_->chunked(true);
    serializer_.emplace(*res_);
    state_ = State::kStreaming;
    tcp().expires_never();
    WatchPeer();
    stall_.emplace(s_->io);
    ArmStall();
    auto self = Self();
    http::async_write_header(stream_, *serializer_, [self](beast::error_code ec, size_t) {
      if (self->closed_) return;
      self->stall_->cancel();
      self->serializer_.reset();
      self->res_.reset();
      if (ec || self->head_) {
        self->CloseNow();
        return;
      }
      self->WatchClient();
      self->Pump();
    });
  }

  // A stream may stay idle for hours: a peer that vanished without a FIN would hold its
  // place for ever, as nothing is written that could fail. Keepalive probes a third of the
  // peer timeout after the peer's last segment, a third apart; TCP_USER_TIMEOUT ends the
  // connection (ETIMEDOUT, seen by WatchClient's read) once nothing was acknowledged for
  // the whole timeout, probes or data alike (tcp(7)).
  void WatchPeer() {
    const int fd = tcp().socket().native_handle();
    const auto timeout = s_->o.stream_peer_timeout;
    const int probe_after = std::max<int>(1, static_cast<int>(timeout.count() / 3));
    const int on = 1, probes = 3;
    const unsigned user_timeout_ms = static_cast<unsigned>(timeout.count()) * 1000u;
    if (::setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &on, sizeof on) != 0 ||
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &probe_after, sizeof probe_after) != 0 ||
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &probe_after, sizeof probe_after) != 0 ||
        ::setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &probes, sizeof probes) != 0 ||
        ::setsockopt(fd, IPPROTO_TCP, TCP_USER_TIMEOUT, &user_timeout_ms, sizeof user_timeout_ms) != 0) {
      log::Once(log::Level::kWarn, "http-stream-keepalive",
                std::string("cannot set TCP keepalive on a stream's socket: a vanished client keeps its stream: ") +
                    std::strerror(errno));
    }
  }

  void ArmStall() {
    stall_->expires_after(s_->o.write_timeout);
    auto self = Self();
    stall_->async_wait([self](beast::error_code ec) {
      if (!ec && !self->closed_) self->CloseNow();  // the client takes no bytes
    });
  }

  // The client sends nothing on a stream: what it sends is dropped; its leaving ends it.
  void WatchClient() {
    if (!discard_) discard_ = std::make_unique<char[]>(kDiscardBytes);
    auto self = Self();
    stream_.async_read_some(asio::buffer(discard_.get(), kDiscardBytes), [self](beast::error_code ec, size_t) {
      if (self->closed_) return;
      if (ec) {
        self->CloseNow();
        return;
      }
      self->WatchClient();
    });
  }

  void Pump() {
    if (closed_ || chunk_writing_ || !stream_body_) return;
    chunk_.clear();
    std::weak_ptr<SessionBase> weak = weak_from_this();
    asio::io_context* io = &s_->io;
    const bool more = stream_body_->Take(&chunk_, [weak, io] {
      asio::post(*io, [weak] {
        if (auto s = weak.lock()) static_cast<Session*>(s.get())->Pump();
      });
    });
    if (chunk_.empty() && more) return;  // woken when there is more
    char size[32];
    const int n = std::snprintf(size, sizeof size, "%zx\r\n", chunk_.size());
    chunk_head_.assign(size, static_cast<size_t>(n));
    buffers_.clear();
    static constexpr char kCrlf[] = "\r\n";
    static constexpr char kLast[] = "0\r\n\r\n";
    if (!chunk_.empty()) {
      buffers_.push_back(asio::buffer(chunk_head_));
      buffers_.push_back(asio::buffer(chunk_));
      buffers_.push_back(asio::buffer(kCrlf, 2));
    }
    if (!more) buffers_.push_back(asio::buffer(kLast, 5));
    chunk_writing_ = true;
    ArmStall();
    auto self = Self();
    asio::async_write(stream_, buffers_, [self, more](beast::error_code ec, size_t) {
      if (self->closed_) return;
      self->chunk_writing_ = false;
      self->stall_->cancel();
      if (ec || !more) {
        self->CloseNow();
        return;
      }
      self->Pump();
    });
  }

  // After an answer that ends the connection: stop sending, then read and drop what the
  // client still sends (for a while, up to a cap) so that it sees the answer rather than
  // a reset, then close.
  void Linger() {
    state_ = State::kClosing;
    if constexpr (kTls) {
      tcp().expires_after(milliseconds(1000));
      auto self = Self();
      stream_.async_shutdown([self](beast::error_code) { self->CloseNow(); });
    } else {
      beast::error_code ec;
      tcp().socket().shutdown(tcp::socket::shutdown_send, ec);
      if (!discard_) discard_ = std::make_unique<char[]>(kDiscardBytes);
      tcp().expires_after(kLingerTime);
      DrainThenClose(0);
    }
  }

  void DrainThenClose(size_t drained) {
    auto self = Self();
    tcp().async_read_some(asio::buffer(discard_.get(), kDiscardBytes), [self, drained](beast::error_code ec, size_t n) {
      if (self->closed_) return;
      if (ec || drained + n >= kLingerBytes) {
        self->CloseNow();
        return;
      }
      self->DrainThenClose(drained + n);
    });
  }

  Stream stream_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::buffer_body>> parser_;
  std::unique_ptr<char[]> discard_;
  bool head_ = false;
  std::shared_ptr<const TextRope> pieces_;   // being written, then
  std::shared_ptr<const std::string> body_;  // then
  std::string tail_;
  std::vector<asio::const_buffer> buffers_;  // all three as the write's buffer sequence
  std::optional<http::response<http::empty_body>> res_;
  std::optional<http::response_serializer<http::empty_body>> serializer_;
  // A streamed answer (RespondStream): the stream, the chunk being written and its size
  // line, and the timer that drops a client taking no bytes.
  std::shared_ptr<ByteStream> stream_body_;
  std::string chunk_, chunk_head_;
  bool chunk_writing_ = false;
  bool stream_counted_ = false;  // in streams_per_address
  std::optional<asio::steady_timer> stall_;
};

void HttpServer::Impl::Accept(Listener which) {
  tcp::acceptor& acceptor = which == Listener::kMain ? main_acceptor : health_acceptor;
  acceptor.async_accept([this, which](beast::error_code ec, tcp::socket socket) {
    if (stopping) return;
    if (ec) {
      if (ec == asio::error::operation_aborted) return;
      // Out of fds or memory: try again shortly rather than spin on the error.
      log::Once(log::Level::kWarn, "http-accept:" + ec.message(), "accepting a connection failed: " + ec.message());
      asio::steady_timer& retry = which == Listener::kMain ? main_retry : health_retry;
      retry.expires_after(kAcceptRetry);
      retry.async_wait([this, which](beast::error_code wait_ec) {
        if (!wait_ec && !stopping) Accept(which);
      });
      return;
    }
    OnAccepted(which, std::move(socket));
    Accept(which);
  });
}

void HttpServer::Impl::OnAccepted(Listener which, tcp::socket socket) {
  beast::error_code ec;
  const tcp::endpoint remote = socket.remote_endpoint(ec);
  if (ec) return;  // gone already
  const asio::ip::address address = remote.address();
  bool over;
  if (which == Listener::kMain) {
    auto it = per_address.find(address);
    over = it != per_address.end() && it->second >= o.max_connections_per_address;
    // At the cap a newcomer takes the slot of the connection that has held one longest
    // without a whole request; connections that were served keep theirs.
    if (!over && open_main >= o.max_connections) over = !ShedOne();
  } else {
    over = open_health >= kHealthConnections;
  }
  if (over) {
    Count(&Counters::connections_refused);
    if (which == Listener::kHealth || !tls) {
      static constexpr char k503[] =
          "HTTP/1.1 503 Service Unavailable\r\nContent-Length: 0\r\nConnection: close\r\nRetry-After: 1\r\n\r\n";
      ::send(socket.native_handle(), k503, sizeof k503 - 1, MSG_DONTWAIT | MSG_NOSIGNAL);
    }
    socket.close(ec);
    return;
  }
  Count(&Counters::connections_accepted);
  socket.set_option(tcp::no_delay(true), ec);
  if (which == Listener::kMain) {
    ++open_main;
    ++per_address[address];
  } else {
    ++open_health;
  }
  std::shared_ptr<SessionBase> session;
  if (which == Listener::kMain && tls) {
    session =
        std::make_shared<Session<beast::ssl_stream<beast::tcp_stream>>>(this, which, address, std::move(socket), *tls);
  } else {
    session = std::make_shared<Session<beast::tcp_stream>>(this, which, address, std::move(socket));
  }
  sessions.emplace(session.get(), session);
  if (which == Listener::kMain) session->JoinUnproven(&unproven);
  ++open_sessions;
  session->Start();
}

bool HttpServer::Impl::ShedOne() {
  for (SessionBase* candidate : unproven) {
    if (!candidate->sheddable()) continue;
    auto it = sessions.find(candidate);
    std::shared_ptr<SessionBase> session = it == sessions.end() ? nullptr : it->second.lock();
    if (!session) continue;
    Count(&Counters::connections_shed);
    log::Once(log::Level::kWarn, "http-shed",
              "at the connection cap (" + std::to_string(o.max_connections) +
                  "): closing the connections that held a slot longest without a whole request, for newcomers");
    session->CloseNow();  // leaves `unproven`: the loop ends here
    return true;
  }
  return false;
}

void HttpServer::Impl::Release(SessionBase* s, Listener which, const asio::ip::address& address) {
  if (which == Listener::kMain) {
    --open_main;
    auto it = per_address.find(address);
    if (it != per_address.end() && --it->second == 0) per_address.erase(it);
  } else {
    --open_health;
  }
  sessions.erase(s);
  --open_sessions;
}

size_t StreamsPerAddress(const HttpTransportOptions& options) {
  if (options.max_streams_per_address != 0) return options.max_streams_per_address;
  return options.max_connections_per_address * 3 / 4;
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() { Stop(); }

StatusOr<std::unique_ptr<HttpServer>> HttpServer::Create(HttpTransportOptions options, std::vector<HttpRoute> routes) {
  std::string host;
  int port = 0;
  if (Status s = ParseListenAddress(options.listen_address, &host, &port); !s.ok()) return s;
  if (!options.health_listen_address.empty()) {
    if (Status s = ParseListenAddress(options.health_listen_address, &host, &port); !s.ok()) return s;
  }
  if (options.max_connections == 0 || options.max_connections_per_address == 0) {
    return InvalidArgument("connection limits must be at least 1");
  }
  if (options.max_streams_per_address >= options.max_connections_per_address) {
    return InvalidArgument("streams per address (" + std::to_string(options.max_streams_per_address) +
                           ") must be below the connections per address (" +
                           std::to_string(options.max_connections_per_address) +
                           "), so that an address with every stream open can still be answered");
  }
  if (options.stream_peer_timeout < std::chrono::seconds(1)) {
    return InvalidArgument("the stream peer timeout must be at least 1s");
  }
  if (options.max_header_bytes < 1024) return InvalidArgument("the header limit must be at least 1024 bytes");
  if (options.authorizer && !options.web.basic_auth_users.empty()) {
    return InvalidArgument("basic auth users (web config) and another authorization are exclusive: choose one");
  }
  auto impl = std::make_unique<Impl>(std::move(options), std::move(routes));
  impl->streams_per_address_cap = StreamsPerAddress(impl->o);
  if (impl->o.web.tls()) {
    auto ctx = MakeTlsServerContext(impl->o.web);
    if (!ctx.ok()) return ctx.status();
    impl->tls.emplace(ctx->release());  // the asio context owns it from here
  }
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

void HttpServer::AddRoute(HttpRoute route) {
  if (!impl_->started) impl_->routes.push_back(std::move(route));
}

Status HttpServer::Start() {
  Impl& s = *impl_;
  if (s.started) return Status::Ok();
  auto main = OpenListenSocket(s.o.listen_address, s.o.listen_backlog, "--web.listen-address");
  if (!main.ok()) return main.status();
  beast::error_code ec;
  s.main_acceptor.assign(main->family == AF_INET6 ? tcp::v6() : tcp::v4(), main->fd, ec);
  if (ec) {
    ::close(main->fd);
    return Internal("listen on " + s.o.listen_address + ": " + ec.message());
  }
  s.port = main->port;
  if (!s.o.health_listen_address.empty()) {
    auto health = OpenListenSocket(s.o.health_listen_address, 16, "--web.health-listen-address");
    if (!health.ok()) {
      s.main_acceptor.close(ec);
      return health.status();
    }
    s.health_acceptor.assign(health->family == AF_INET6 ? tcp::v6() : tcp::v4(), health->fd, ec);
    if (ec) {
      ::close(health->fd);
      s.main_acceptor.close(ec);
      return Internal("listen on " + s.o.health_listen_address + ": " + ec.message());
    }
    s.health_port = health->port;
  }
  s.started = true;
  s.Accept(Listener::kMain);
  if (s.health_acceptor.is_open()) s.Accept(Listener::kHealth);
  s.thread = std::thread([&s] {
    pthread_setname_np(pthread_self(), "statlet-web");
    s.io.run();
  });
  return Status::Ok();
}

void HttpServer::Stop() {
  Impl& s = *impl_;
  if (!s.started || s.stopped) return;
  s.stopped = true;
  // Stop accepting; close what is idle or still reading; answers in flight may finish.
  asio::post(s.io, [&s] {
    s.stopping = true;
    beast::error_code ec;
    s.main_acceptor.close(ec);
    s.health_acceptor.close(ec);
    s.main_retry.cancel();
    s.health_retry.cancel();
    std::vector<std::shared_ptr<SessionBase>> all;
    for (auto& [p, w] : s.sessions) {
      if (auto sp = w.lock()) all.push_back(std::move(sp));
    }
    for (auto& session : all) {
      if (!session->busy()) session->CloseNow();
    }
  });
  const auto deadline = std::chrono::steady_clock::now() + kStopGrace;
  while (s.open_sessions > 0 && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(10));  // poll: answers in flight finishing
  }
  asio::post(s.io, [&s] {
    std::vector<std::shared_ptr<SessionBase>> all;
    for (auto& [p, w] : s.sessions) {
      if (auto sp = w.lock()) all.push_back(std::move(sp));
    }
    for (auto& session : all) session->CloseNow();
  });
  // A worker finishes the job it runs (one collection at most); queued ones are dropped.
  s.workers.Stop();
  if (s.authorizer) s.authorizer->Stop();
  // Let the loop run the closing handlers, then end it.
  asio::post(s.io, [&s] { s.io.stop(); });
  if (s.thread.joinable()) s.thread.join();
}

int HttpServer::port() const { return impl_->port; }
int HttpServer::health_port() const { return impl_->health_port; }

HttpServer::Counters HttpServer::counters() const {
  std::lock_guard<std::mutex> lock(impl_->counters_mu);
  return impl_->counters;
}

}  // namespace statlet
