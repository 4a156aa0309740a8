#include "cri/proxy_router.h"

#include <errno.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nghttp2/nghttp2.h>

#include "base/log.h"
#include "base/unix_socket.h"
#include "cri/call_metrics.h"
#include "cri/grpc_wire.h"
#include "cri/stats_service.h"

namespace statlet::cri {
namespace {

using Clock = std::chrono::steady_clock;

// Flow-control credit statlet grants each peer: what one stream may have sent that statlet
// holds and has not passed on, and what one connection may have in flight (its credit
// comes back as bytes arrive).
constexpr int32_t kStreamWindow = 256 * 1024;
constexpr int32_t kConnectionWindow = 4 * 1024 * 1024;
// A connection's session is asked for more frames only while less than this waits to be
// written to its socket (a peer that does not read stops its session's output there).
// One read of kReadChunk per connection and turn, and frames taken this much at a time: one
// connection streaming megabytes takes the thread for one chunk at a time, and the kubelet's
// small calls are served between its chunks (ProxyHostile: the kubelet's p50 during the attack 0.9–1.2
// ms with these, 1.9–2.2 ms with four reads and 256 KiB a turn).
constexpr size_t kOutHigh = 64 * 1024;
constexpr size_t kReadChunk = 64 * 1024;
// Message bytes the calls of one caller connection may hold together (both ways). Credit
// for a connection is given back as bytes arrive (as gRPC's own transports do: a stream
// its reader stalls must not stall the connection's other streams), so what bounds a
// connection is its streams' credit, and this.
constexpr int64_t kMaxHeldPerConnection = 16 << 20;
constexpr size_t kMaxRequestHeaderBytes = 16 * 1024;
constexpr size_t kMaxResponseHeaderBytes = 64 * 1024;
// While calls are in flight the thread looks at their times this often.
constexpr std::chrono::milliseconds kSweepPeriod{100};
// A call still open this long after its caller's deadline is ended by statlet (the runtime
// and the caller end it at the deadline itself).
constexpr std::chrono::milliseconds kDeadlineGrace{100};
// RST_STREAMs a caller may send: a burst, then this many a second (a "rapid reset" flood
// ends the connection; libnghttp2's default of 33 a second is below what a kubelet
// cancelling probes on a busy node may send).
constexpr uint64_t kResetBurst = 10000;
constexpr uint64_t kResetRate = 1000;

// gRPC status codes statlet answers with.
constexpr int kCancelled = 1;
constexpr int kInternal = 13;
constexpr int kDeadlineExceeded = 4;
constexpr int kResourceExhausted = 8;
constexpr int kUnavailable = 14;

}  // namespace

// The router's own types: named, as ProxyRouter::Impl (external linkage) holds them.
namespace router_internal {

struct Header {
  std::string name, value;
};

std::vector<nghttp2_nv> Nv(const std::vector<Header>& headers) {
  std::vector<nghttp2_nv> nv;
  nv.reserve(headers.size());
  for (const Header& h : headers) {
    nv.push_back({reinterpret_cast<uint8_t*>(const_cast<char*>(h.name.data())),
                  reinterpret_cast<uint8_t*>(const_cast<char*>(h.value.data())), h.name.size(), h.value.size(),
                  NGHTTP2_NV_FLAG_NONE});
  }
  return nv;
}

// Bytes received from one side of a call and not yet taken by the other.
class Held {
 public:
  void Append(const uint8_t* p, size_t n) {
    if (off_ > 0 && off_ >= data_.size() / 2) {
      data_.erase(0, off_);
      off_ = 0;
    }
    data_.append(reinterpret_cast<const char*>(p), n);
  }
  size_t Take(uint8_t* out, size_t max) {
    const size_t n = std::min(max, size());
    std::memcpy(out, data_.data() + off_, n);
    off_ += n;
    if (off_ == data_.size()) {
      data_.clear();
      off_ = 0;
    }
    return n;
  }
  size_t size() const { return data_.size() - off_; }
  bool empty() const { return size() == 0; }
  void Clear() {
    std::string().swap(data_);
    off_ = 0;
  }

 private:
  std::string data_;
  size_t off_ = 0;
};

struct Conn;
struct Stream;

// One HTTP/2 connection: a caller's, or one of a caller's to the runtime or to statlet's
// own server.
struct Endpoint {
  enum Kind { kCaller, kRuntime, kLocal };
  explicit Endpoint(Kind k) : kind(k) {}
  virtual ~Endpoint() = default;
  const Kind kind;
  uint64_t key = 0;  // its epoll key
  int fd = -1;
  nghttp2_session* session = nullptr;
  std::string out;  // frames waiting for the socket
  size_t out_off = 0;
  uint32_t watched = 0;
  bool dirty = false;   // its session may have frames to send
  bool broken = false;  // to be closed at the end of this turn
  bool dying = false;   // being deleted: its callbacks do nothing
  std::string why;      // why it broke
  Conn* conn = nullptr;
  ProxyRouter::Impl* router = nullptr;
};

struct Upstream : Endpoint {
  using Endpoint::Endpoint;
  bool draining = false;  // the peer sent GOAWAY: no new streams
  int streams = 0;
};

struct Conn : Endpoint {
  Conn() : Endpoint(kCaller) {}
  std::unordered_map<int32_t, std::unique_ptr<Stream>> streams;
  std::unique_ptr<Upstream> runtime, local;
  std::vector<std::unique_ptr<Upstream>> draining;
  std::vector<int32_t> finished;  // streams over on both sides, erased at the end of the turn
  int64_t held = 0;               // message bytes its calls hold (both ways)
};

// One call: a caller's stream and the stream it was routed to.
struct Stream {
  Conn* conn = nullptr;
  int32_t id = 0;
  std::vector<Header> request;
  size_t request_header_bytes = 0;
  std::string path;
  bool passed = false;   // to the runtime (else statlet's own server)
  bool counted = false;  // in in_flight
  bool headers_done = false, routed = false, observed = false;
  Clock::time_point opened, down_progress;
  std::optional<Clock::time_point> deadline;
  bool down_open = true;  // the caller's stream
  Upstream* up = nullptr;
  int32_t up_id = 0;
  bool up_open = false;
  // Caller → runtime.
  Held req;
  bool req_seen = false, req_end = false, req_dropping = false;
  GrpcMessageFrames req_frames;
  // Runtime → caller.
  std::vector<Header> response, trailers;
  size_t response_header_bytes = 0;
  int grpc_status = -1;
  bool resp_started = false;  // the caller's response HEADERS submitted
  bool resp_done = false;     // its end (END_STREAM or trailers) submitted
  bool trailers_ready = false, resp_end = false, resp_dropping = false;
  Held resp;
  GrpcMessageFrames resp_frames;
};

}  // namespace router_internal

class ProxyRouter::Impl {
  using Header = router_internal::Header;
  using Endpoint = router_internal::Endpoint;
  using Upstream = router_internal::Upstream;
  using Conn = router_internal::Conn;
  using Stream = router_internal::Stream;

 public:
  Impl(ProxyRouterOptions o, std::string runtime_path) : o_(std::move(o)), runtime_path_(std::move(runtime_path)) {
    nghttp2_session_callbacks_new(&caller_cb_);
    nghttp2_session_callbacks_set_on_begin_headers_callback(caller_cb_, &Impl::OnCallerBeginHeaders);
    nghttp2_session_callbacks_set_on_header_callback(caller_cb_, &Impl::OnCallerHeader);
    nghttp2_session_callbacks_set_on_frame_recv_callback(caller_cb_, &Impl::OnCallerFrame);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(caller_cb_, &Impl::OnCallerData);
    nghttp2_session_callbacks_set_on_stream_close_callback(caller_cb_, &Impl::OnCallerClose);
    nghttp2_session_callbacks_new(&up_cb_);
    nghttp2_session_callbacks_set_on_header_callback(up_cb_, &Impl::OnUpHeader);
    nghttp2_session_callbacks_set_on_frame_recv_callback(up_cb_, &Impl::OnUpFrame);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(up_cb_, &Impl::OnUpData);
    nghttp2_session_callbacks_set_on_stream_close_callback(up_cb_, &Impl::OnUpClose);
    nghttp2_option_new(&caller_opt_);
    nghttp2_option_set_no_auto_window_update(caller_opt_, 1);
    nghttp2_option_set_stream_reset_rate_limit(caller_opt_, kResetBurst, kResetRate);
    nghttp2_option_new(&up_opt_);
    nghttp2_option_set_no_auto_window_update(up_opt_, 1);
  }

  ~Impl() {
    Stop();
    nghttp2_session_callbacks_del(caller_cb_);
    nghttp2_session_callbacks_del(up_cb_);
    nghttp2_option_del(caller_opt_);
    nghttp2_option_del(up_opt_);
    if (listener_ >= 0) close(listener_);
    if (wake_ >= 0) close(wake_);
    if (epoll_ >= 0) close(epoll_);
  }

  Status Listen(const std::string& path) {
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof addr.sun_path) return InvalidArgument("socket path too long: " + path);
    std::memcpy(addr.sun_path, path.data(), path.size());
    listener_ = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (listener_ < 0) return ErrnoStatus(errno, "socket");
    if (bind(listener_, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
      return ErrnoStatus(errno, "bind " + path);
    }
    if (listen(listener_, SOMAXCONN) != 0) return ErrnoStatus(errno, "listen " + path);
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    wake_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (epoll_ < 0 || wake_ < 0) return ErrnoStatus(errno, "epoll/eventfd");
    AddFd(listener_, kListenerKey);
    AddFd(wake_, kWakeKey);
    return Status::Ok();
  }

  void StartThread() {
    thread_ = std::thread([this] { Run(); });
  }

  void Stop() {
    if (!thread_.joinable()) return;
    stopping_.store(true);
    const uint64_t one = 1;
    (void)!write(wake_, &one, sizeof one);
    thread_.join();
  }

 private:
  static constexpr uint64_t kListenerKey = 1, kWakeKey = 2;

  void AddFd(int fd, uint64_t key) {
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = key;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  }

  // ---- the loop -------------------------------------------------------------------------

  void Run() {
    pthread_setname_np(pthread_self(), "statlet-cri");
    epoll_event events[64];
    Clock::time_point next_sweep = Clock::now() + kSweepPeriod;
    while (!stopping_.load()) {
      int timeout = -1;
      if (!dirty_.empty() || !broken_.empty()) {
        timeout = 0;  // Settle left work for the next turn
      } else if (streams_ > 0) {
        timeout = static_cast<int>(std::max<int64_t>(
            0, std::chrono::duration_cast<std::chrono::milliseconds>(next_sweep - Clock::now()).count() + 1));
      }
      const int n = epoll_wait(epoll_, events, 64, timeout);
      if (n < 0 && errno != EINTR) {
        log::Error(std::string("CRI proxy: epoll_wait: ") + std::strerror(errno));
        break;
      }
      bool accept = false;
      for (int i = 0; i < n; ++i) {
        const uint64_t key = events[i].data.u64;
        if (key == kListenerKey) {
          accept = true;
          continue;
        }
        if (key == kWakeKey) continue;
        auto it = live_.find(key);
        if (it == live_.end()) continue;  // closed earlier in this batch
        Endpoint* e = it->second;
        if (e->broken) continue;
        if (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR)) Read(e);
        if (events[i].events & EPOLLOUT) MarkDirty(e);
      }
      if (accept) Accept();
      const Clock::time_point now = Clock::now();
      if (streams_ > 0 && now >= next_sweep) {
        Sweep(now);
        next_sweep = now + kSweepPeriod;
      } else if (streams_ == 0) {
        next_sweep = now + kSweepPeriod;
      }
      Settle();
    }
    // Stopping: every connection closes; calls in flight end at both sides.
    std::vector<Conn*> conns;
    for (auto& [key, c] : conns_) conns.push_back(c.get());
    for (Conn* c : conns) CloseConn(c);
    close(listener_);
    listener_ = -1;
  }

  // Flushes every session with frames to send, and closes what broke, until neither is
  // left (closing a connection may answer calls of another).
  void Settle() {
    for (int round = 0; round < 64 && (!dirty_.empty() || !broken_.empty()); ++round) {
      while (!dirty_.empty()) {
        std::vector<Endpoint*> batch;
        batch.swap(dirty_);
        for (Endpoint* e : batch) {
          e->dirty = false;
          if (!e->broken) Flush(e);
        }
      }
      // One at a time: closing one deletes others (a caller's upstreams) from the list.
      while (!broken_.empty()) {
        Endpoint* e = broken_.back();
        broken_.pop_back();
        if (e->kind == Endpoint::kCaller) {
          CloseConn(static_cast<Conn*>(e));
        } else {
          UpstreamGone(static_cast<Upstream*>(e));
        }
      }
      // Streams over on both sides.
      std::vector<Conn*> finishing;
      finishing.swap(finishing_);
      for (Conn* c : finishing) {
        for (int32_t id : c->finished) {
          auto it = c->streams.find(id);
          if (it == c->streams.end()) continue;
          Stream* s = it->second.get();
          if (s->down_open || s->up_open) continue;
          ReleaseHeld(s);
          c->streams.erase(it);
          --streams_;
        }
        c->finished.clear();
      }
    }
  }

  // `s` may be over on both sides: erased at the end of the turn if so.
  void Finished(Stream* s) {
    Conn* c = s->conn;
    if (c->finished.empty()) finishing_.push_back(c);
    c->finished.push_back(s->id);
  }

  void MarkDirty(Endpoint* e) {
    if (e == nullptr || e->dirty || e->broken) return;
    e->dirty = true;
    dirty_.push_back(e);
  }
  void Break(Endpoint* e, std::string why) {
    if (e->broken) return;
    e->broken = true;
    e->why = std::move(why);
    broken_.push_back(e);
  }

  // One chunk per event (kOutHigh says why); what is left is read at the next turn (the
  // epoll set is level-triggered).
  void Read(Endpoint* e) {
    static thread_local uint8_t buf[kReadChunk];
    ssize_t r;
    do {
      r = recv(e->fd, buf, sizeof buf, 0);
    } while (r < 0 && errno == EINTR);
    if (r == 0) return Break(e, "connection closed");
    if (r < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK) return;
      return Break(e, std::string("recv: ") + std::strerror(errno));
    }
    const ssize_t done = nghttp2_session_mem_recv(e->session, buf, static_cast<size_t>(r));
    MarkDirty(e);
    if (done < 0) return Break(e, std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(done)));
  }

  void Flush(Endpoint* e) {
    for (;;) {
      while (e->out.size() - e->out_off < kOutHigh) {
        const uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(e->session, &data);
        if (n < 0) return Break(e, std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(n)));
        if (n == 0) break;
        e->out.append(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
      }
      if (e->out_off == e->out.size()) break;
      const ssize_t w = send(e->fd, e->out.data() + e->out_off, e->out.size() - e->out_off, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        return Break(e, std::string("send: ") + std::strerror(errno));
      }
      e->out_off += static_cast<size_t>(w);
      if (e->out_off == e->out.size()) {
        e->out.clear();
        e->out_off = 0;
      }
    }
    if (e->out_off == e->out.size()) {
      if (e->out.capacity() > 2 * kReadChunk) std::string().swap(e->out);
      e->out.clear();
      e->out_off = 0;
    }
    const uint32_t want = EPOLLIN | (e->out.empty() ? 0u : static_cast<uint32_t>(EPOLLOUT));
    if (want != e->watched) {
      epoll_event ev{};
      ev.events = want;
      ev.data.u64 = e->key;
      epoll_ctl(epoll_, EPOLL_CTL_MOD, e->fd, &ev);
      e->watched = want;
    }
    if (!nghttp2_session_want_read(e->session) && !nghttp2_session_want_write(e->session) && e->out.empty()) {
      Break(e, "connection closed");
    }
  }

  // ---- connections ------------------------------------------------------------------------

  void Register(Endpoint* e) {
    e->key = next_key_++;
    live_[e->key] = e;
    epoll_event ev{};
    ev.events = EPOLLIN;
    ev.data.u64 = e->key;
    epoll_ctl(epoll_, EPOLL_CTL_ADD, e->fd, &ev);
    e->watched = EPOLLIN;
    MarkDirty(e);
  }

  void Accept() {
    for (;;) {
      const int fd = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      if (static_cast<int>(conns_.size()) >= o_.max_connections) {
        close(fd);
        continue;
      }
      auto c = std::make_unique<Conn>();
      c->conn = c.get();
      c->router = this;
      c->fd = fd;
      nghttp2_session_server_new2(&c->session, caller_cb_, static_cast<Endpoint*>(c.get()), caller_opt_);
      const nghttp2_settings_entry settings[] = {
          {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, static_cast<uint32_t>(o_.max_streams_per_connection)},
          {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
          {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, kMaxRequestHeaderBytes},
      };
      nghttp2_submit_settings(c->session, NGHTTP2_FLAG_NONE, settings, 3);
      nghttp2_session_set_local_window_size(c->session, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
      Conn* raw = c.get();
      conns_[fd] = std::move(c);
      Register(raw);
    }
  }

  std::string RuntimeName() const { return "runtime " + o_.pass.runtime_endpoint; }

  // The connection `c` passes its calls of one kind on, opened on the first call.
  Upstream* UpstreamFor(Conn* c, bool passed, std::string* error) {
    std::unique_ptr<Upstream>& slot = passed ? c->runtime : c->local;
    // One that said GOAWAY or broke keeps (or ends) its calls; new ones take a new one.
    if (slot && (slot->draining || slot->broken)) {
      if (slot->streams == 0) Break(slot.get(), "drained");
      c->draining.push_back(std::move(slot));
    }
    if (slot) return slot.get();
    int fd = -1;
    if (passed) {
      sockaddr_un addr{};
      addr.sun_family = AF_UNIX;
      std::memcpy(addr.sun_path, runtime_path_.data(), std::min(runtime_path_.size(), sizeof addr.sun_path - 1));
      fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
      if (fd >= 0 && connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
        const int err = errno;
        close(fd);
        fd = -1;
        errno = err;
      }
      if (fd < 0) {
        *error = RuntimeName() + " is unavailable: connect " + runtime_path_ + ": " + std::strerror(errno);
        return nullptr;
      }
    } else {
      fd = o_.connect_local ? o_.connect_local() : -1;
      if (fd < 0) {
        *error = std::string("statlet's own CRI server is unavailable: ") + std::strerror(errno);
        return nullptr;
      }
    }
    auto u = std::make_unique<Upstream>(passed ? Endpoint::kRuntime : Endpoint::kLocal);
    u->conn = c;
    u->router = this;
    u->fd = fd;
    nghttp2_session_client_new2(&u->session, up_cb_, static_cast<Endpoint*>(u.get()), up_opt_);
    const nghttp2_settings_entry settings[] = {
        {NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kStreamWindow},
    };
    nghttp2_submit_settings(u->session, NGHTTP2_FLAG_NONE, settings, 2);
    nghttp2_session_set_local_window_size(u->session, NGHTTP2_FLAG_NONE, 0, kConnectionWindow);
    slot = std::move(u);
    Register(slot.get());
    return slot.get();
  }

  void DeleteEndpoint(Endpoint* e) {
    e->dying = true;
    live_.erase(e->key);
    epoll_ctl(epoll_, EPOLL_CTL_DEL, e->fd, nullptr);
    close(e->fd);
    e->fd = -1;
    nghttp2_session_del(e->session);
    e->session = nullptr;
    // Pending in the lists of this turn: they skip it (broken), and it is gone before the
    // next turn.
    dirty_.erase(std::remove(dirty_.begin(), dirty_.end(), e), dirty_.end());
    broken_.erase(std::remove(broken_.begin(), broken_.end(), e), broken_.end());
  }

  void CloseConn(Conn* c) {
    for (auto& [id, s] : c->streams) {
      if (s->down_open) {
        s->down_open = false;
        if (s->counted) --in_flight_;
        Observe(s.get(), kCancelled);
      }
      ReleaseHeld(s.get());
      --streams_;
    }
    // The runtime sees its connection close and cancels the calls on it.
    if (c->runtime) DeleteEndpoint(c->runtime.get());
    if (c->local) DeleteEndpoint(c->local.get());
    for (auto& u : c->draining) DeleteEndpoint(u.get());
    const int fd = c->fd;
    finishing_.erase(std::remove(finishing_.begin(), finishing_.end(), c), finishing_.end());
    DeleteEndpoint(c);
    conns_.erase(fd);  // the connection, its streams and its upstreams
  }

  // The connection `u` is gone (closed, failed, or spoke bad HTTP/2): its calls end
  // UNAVAILABLE at their callers.
  void UpstreamGone(Upstream* u) {
    Conn* c = u->conn;
    const std::string reason =
        (u->kind == Endpoint::kRuntime ? RuntimeName() : std::string("statlet's own CRI server")) + ": " + u->why;
    for (auto& [id, s] : c->streams) {
      if (s->up != u) continue;
      s->up = nullptr;
      s->up_open = false;
      DropRequest(s.get());
      if (!s->trailers_ready && !s->resp_end && !s->resp_done) Answer(s.get(), kUnavailable, reason);
      if (!s->down_open) Finished(s.get());
    }
    DeleteEndpoint(u);
    if (c->runtime.get() == u) {
      c->runtime.reset();
    } else if (c->local.get() == u) {
      c->local.reset();
    } else {
      for (auto it = c->draining.begin(); it != c->draining.end(); ++it) {
        if (it->get() == u) {
          c->draining.erase(it);
          break;
        }
      }
    }
  }

  // ---- calls ---------------------------------------------------------------------------

  bool AnsweredHere(const std::string& path) const {
    static constexpr std::string_view kRuntimeService = "/runtime.v1.RuntimeService/";
    if (path.compare(0, kRuntimeService.size(), kRuntimeService) == 0 &&
        IsStatsCall(std::string_view(path).substr(kRuntimeService.size()))) {
      return true;
    }
    const std::vector<std::string>& local = o_.pass.local_methods;
    return std::find(local.begin(), local.end(), path) != local.end();
  }

  // Whether the calls of `c` may hold `n` bytes more (else: the call is refused).
  bool CanHold(Conn* c, size_t n) const {
    const auto more = static_cast<int64_t>(n);
    return c->held + more <= kMaxHeldPerConnection && held_ + more <= static_cast<int64_t>(o_.pass.max_held_bytes);
  }
  void Hold(Conn* c, size_t n) {
    c->held += static_cast<int64_t>(n);
    held_ += static_cast<int64_t>(n);
  }
  void Unhold(Conn* c, size_t n) {
    c->held -= static_cast<int64_t>(n);
    held_ -= static_cast<int64_t>(n);
  }

  void ReleaseHeld(Stream* s) {
    const size_t n = s->req.size() + s->resp.size();
    if (n > 0) Unhold(s->conn, n);
    s->req.Clear();
    s->resp.Clear();
  }

  // Request bytes not passed on: the caller's connection gets their credit back.
  void DropRequest(Stream* s) {
    const size_t n = s->req.size();
    if (n == 0) return;
    Conn* c = s->conn;
    Unhold(c, n);
    s->req.Clear();
    if (!c->dying) {
      nghttp2_session_consume_stream(c->session, s->id, n);
      MarkDirty(c);
    }
  }
  void DropResponse(Stream* s) {
    const size_t n = s->resp.size();
    if (n == 0) return;
    Unhold(s->conn, n);
    s->resp.Clear();
    if (s->up != nullptr) {
      nghttp2_session_consume_stream(s->up->session, s->up_id, n);
      MarkDirty(s->up);
    }
  }

  void Observe(Stream* s, int code) {
    if (s->observed || !s->headers_done) return;
    s->observed = true;
    if (!s->passed) return;
    if (o_.observer != nullptr) {
      o_.observer->ObserveCall(CallMethodLabel(s->path), GrpcCodeName(code),
                               std::chrono::duration<double>(Clock::now() - s->opened).count());
    }
    if (code == 0 && o_.pass.on_change && ChangesWorkloads(s->path)) o_.pass.on_change(s->path);
  }

  // The call ends at its caller with gRPC status `code` (trailers-only when nothing of the
  // answer went yet, else trailers after what did).
  void Answer(Stream* s, int code, const std::string& message) {
    Observe(s, code);
    if (!s->down_open || s->resp_done) return;
    const std::string status = std::to_string(code), encoded = PercentEncode(message);
    Conn* c = s->conn;
    if (!s->resp_started) {
      const std::vector<Header> headers = {
          {":status", "200"}, {"content-type", "application/grpc"}, {"grpc-status", status}, {"grpc-message", encoded}};
      const std::vector<nghttp2_nv> nv = Nv(headers);
      nghttp2_submit_response(c->session, s->id, nv.data(), nv.size(), nullptr);
      s->resp_started = s->resp_done = true;
    } else if (!s->trailers_ready && !s->resp_end) {
      DropResponse(s);
      s->resp_dropping = true;
      s->trailers = {{"grpc-status", status}, {"grpc-message", encoded}};
      s->trailers_ready = true;
      nghttp2_session_resume_data(c->session, s->id);
    }
    MarkDirty(c);
  }

  void ResetUp(Stream* s) {
    if (s->up == nullptr || !s->up_open) return;
    nghttp2_submit_rst_stream(s->up->session, NGHTTP2_FLAG_NONE, s->up_id, NGHTTP2_CANCEL);
    MarkDirty(s->up);
  }
  void ResetDown(Stream* s, uint32_t error_code, int observed_as) {
    Observe(s, observed_as);
    if (!s->down_open) return;
    nghttp2_submit_rst_stream(s->conn->session, NGHTTP2_FLAG_NONE, s->id, error_code);
    MarkDirty(s->conn);
  }

  // The caller's headers are in: count the call, refuse it past max_calls.
  void TakeCall(Stream* s) {
    s->headers_done = true;
    s->passed = IsPassableMethod(s->path) && !AnsweredHere(s->path);
    if (in_flight_ >= o_.pass.max_calls) {
      s->req_dropping = true;
      Answer(s, kResourceExhausted,
             "statlet's CRI proxy has " + std::to_string(o_.pass.max_calls) + " calls in flight");
      return;
    }
    s->counted = true;
    ++in_flight_;
  }

  // More of the request (or its end) is in: the call is opened upstream on its first bytes
  // (a call abandoned before its request never reaches the runtime), then fed.
  void RequestProgress(Stream* s) {
    if (s->req_dropping || !s->down_open || s->resp_done) return;
    if (!s->routed) {
      if (s->req_seen || s->req_end) Route(s);
      return;
    }
    if (s->up != nullptr && s->up_open) {
      nghttp2_session_resume_data(s->up->session, s->up_id);
      MarkDirty(s->up);
    }
  }

  void Route(Stream* s) {
    s->routed = true;
    std::string error;
    Upstream* u = UpstreamFor(s->conn, s->passed, &error);
    if (u == nullptr) {
      s->req_dropping = true;
      DropRequest(s);
      Answer(s, kUnavailable, error.empty() ? RuntimeName() + " is unavailable" : error);
      return;
    }
    const std::vector<nghttp2_nv> nv = Nv(s->request);
    nghttp2_data_provider body;
    body.source.ptr = s;
    body.read_callback = &Impl::ReadRequest;
    int32_t id = nghttp2_submit_request(u->session, nullptr, nv.data(), nv.size(), &body, s);
    if (id == NGHTTP2_ERR_STREAM_ID_NOT_AVAILABLE) {
      // A connection that lived through 2^30 calls: its calls finish on it, new ones take a
      // new one (the kubelet's connection to statlet lives as long as the node).
      u->draining = true;
      u = UpstreamFor(s->conn, s->passed, &error);
      id = u != nullptr ? nghttp2_submit_request(u->session, nullptr, nv.data(), nv.size(), &body, s) : -1;
    }
    if (u == nullptr || id < 0) {
      s->req_dropping = true;
      DropRequest(s);
      Answer(s, kUnavailable, !error.empty() ? error : RuntimeName() + ": " + nghttp2_strerror(id));
      return;
    }
    s->up = u;
    s->up_id = id;
    s->up_open = true;
    ++u->streams;
    std::vector<Header>().swap(s->request);
    MarkDirty(u);
  }

  void Sweep(Clock::time_point now) {
    for (auto& [key, c] : conns_) {
      for (auto& [id, sp] : c->streams) {
        Stream* s = sp.get();
        if (!s->down_open || s->resp_done) continue;
        if (s->deadline && now > *s->deadline + kDeadlineGrace) {
          ResetUp(s);
          s->req_dropping = true;
          DropRequest(s);
          Answer(s, kDeadlineExceeded, "Deadline Exceeded");
        } else if (!s->routed && now - s->opened > o_.pass.request_timeout) {
          ResetDown(s, NGHTTP2_CANCEL, kCancelled);
        } else if (!s->resp.empty() && now - s->down_progress > o_.pass.write_stall_timeout) {
          ResetUp(s);
          ResetDown(s, NGHTTP2_CANCEL, kCancelled);
        }
      }
    }
  }

  // ---- nghttp2 callbacks: the caller's side ------------------------------------------------

  static Stream* StreamOf(nghttp2_session* session, int32_t id) {
    return static_cast<Stream*>(nghttp2_session_get_stream_user_data(session, id));
  }

  static int OnCallerBeginHeaders(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    auto* c = static_cast<Conn*>(static_cast<Endpoint*>(user_data));
    if (c->dying || frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    Impl* r = c->router;
    auto s = std::make_unique<Stream>();
    s->conn = c;
    s->id = frame->hd.stream_id;
    s->opened = s->down_progress = Clock::now();
    nghttp2_session_set_stream_user_data(session, s->id, s.get());
    c->streams[s->id] = std::move(s);
    ++r->streams_;
    return 0;
  }

  static int OnCallerHeader(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                            const uint8_t* value, size_t valuelen, uint8_t, void* user_data) {
    auto* c = static_cast<Conn*>(static_cast<Endpoint*>(user_data));
    if (c->dying || frame->headers.cat != NGHTTP2_HCAT_REQUEST) return 0;
    Stream* s = StreamOf(session, frame->hd.stream_id);
    if (s == nullptr) return 0;
    s->request_header_bytes += namelen + valuelen + 32;
    if (s->request_header_bytes > kMaxRequestHeaderBytes) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    std::string_view n(reinterpret_cast<const char*>(name), namelen), v(reinterpret_cast<const char*>(value), valuelen);
    if (n == ":path") s->path = std::string(v);
    if (n == "grpc-timeout") {
      if (auto t = ParseGrpcTimeout(v)) s->deadline = s->opened + std::chrono::duration_cast<Clock::duration>(*t);
    }
    s->request.push_back({std::string(n), std::string(v)});
    return 0;
  }

  static int OnCallerFrame(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    auto* c = static_cast<Conn*>(static_cast<Endpoint*>(user_data));
    if (c->dying) return 0;
    Impl* r = c->router;
    const bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_REQUEST) {
      Stream* s = StreamOf(session, frame->hd.stream_id);
      if (s == nullptr) return 0;
      r->TakeCall(s);
      if (end) s->req_end = true;
      r->RequestProgress(s);
    } else if ((frame->hd.type == NGHTTP2_DATA || frame->hd.type == NGHTTP2_HEADERS) && end) {
      Stream* s = StreamOf(session, frame->hd.stream_id);
      if (s == nullptr || !s->headers_done) return 0;
      s->req_end = true;
      r->RequestProgress(s);
    }
    return 0;
  }

  static int OnCallerData(nghttp2_session* session, uint8_t, int32_t id, const uint8_t* data, size_t len,
                          void* user_data) {
    auto* c = static_cast<Conn*>(static_cast<Endpoint*>(user_data));
    if (c->dying) return 0;
    nghttp2_session_consume_connection(session, len);
    Impl* r = c->router;
    Stream* s = StreamOf(session, id);
    if (s == nullptr || !s->headers_done || s->req_dropping || s->resp_done) {
      nghttp2_session_consume_stream(session, id, len);
      return 0;
    }
    uint64_t declared = 0;
    if (!s->req_frames.Feed(data, len, r->o_.pass.max_message_bytes, &declared)) {
      nghttp2_session_consume_stream(session, id, len);
      s->req_dropping = true;
      r->DropRequest(s);
      r->ResetUp(s);
      r->Answer(s, kResourceExhausted,
                "grpc: received message larger than max (" + std::to_string(declared) + " vs. " +
                    std::to_string(r->o_.pass.max_message_bytes) + ")");
      return 0;
    }
    if (!r->CanHold(c, len)) {
      nghttp2_session_consume_stream(session, id, len);
      s->req_dropping = true;
      r->DropRequest(s);
      r->ResetUp(s);
      r->Answer(s, kResourceExhausted, "statlet's CRI proxy holds its limit of message bytes");
      return 0;
    }
    s->req.Append(data, len);
    r->Hold(c, len);
    s->req_seen = true;
    r->RequestProgress(s);
    return 0;
  }

  static int OnCallerClose(nghttp2_session* session, int32_t id, uint32_t error_code, void* user_data) {
    auto* c = static_cast<Conn*>(static_cast<Endpoint*>(user_data));
    if (c->dying) return 0;
    Impl* r = c->router;
    Stream* s = StreamOf(session, id);
    if (s == nullptr) return 0;
    s->down_open = false;
    if (s->counted) --r->in_flight_;
    r->Observe(s, error_code == NGHTTP2_NO_ERROR && s->grpc_status >= 0 ? s->grpc_status : kCancelled);
    r->DropRequest(s);
    r->DropResponse(s);
    r->ResetUp(s);
    r->Finished(s);
    return 0;
  }

  // Request DATA for the upstream stream: what the caller sent, as it sent it.
  static ssize_t ReadRequest(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                             nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    Impl* r = s->conn->router;
    const size_t n = s->req.Take(buf, length);
    if (n > 0) {
      r->Unhold(s->conn, n);
      nghttp2_session_consume_stream(s->conn->session, s->id, n);
      r->MarkDirty(s->conn);
    }
    if (s->req.empty()) {
      if (s->req_end) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
      } else if (n == 0) {
        return NGHTTP2_ERR_DEFERRED;
      }
    }
    return static_cast<ssize_t>(n);
  }

  // ---- nghttp2 callbacks: the runtime's (or statlet's own server's) side -------------------

  static int OnUpHeader(nghttp2_session* session, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                        const uint8_t* value, size_t valuelen, uint8_t, void* user_data) {
    auto* u = static_cast<Endpoint*>(user_data);
    if (u->dying || frame->hd.type != NGHTTP2_HEADERS) return 0;
    Stream* s = StreamOf(session, frame->hd.stream_id);
    if (s == nullptr) return 0;
    s->response_header_bytes += namelen + valuelen + 32;
    if (s->response_header_bytes > kMaxResponseHeaderBytes) return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    std::string_view n(reinterpret_cast<const char*>(name), namelen), v(reinterpret_cast<const char*>(value), valuelen);
    if (n == "grpc-status") {
      int code = 0;
      for (char ch : v) code = ch >= '0' && ch <= '9' && code < 1000 ? code * 10 + (ch - '0') : code;
      s->grpc_status = code;
    }
    (frame->headers.cat == NGHTTP2_HCAT_RESPONSE ? s->response : s->trailers)
        .push_back({std::string(n), std::string(v)});
    return 0;
  }

  static int OnUpFrame(nghttp2_session* session, const nghttp2_frame* frame, void* user_data) {
    auto* u = static_cast<Upstream*>(static_cast<Endpoint*>(user_data));
    if (u->dying) return 0;
    Impl* r = u->conn->router;
    if (frame->hd.type == NGHTTP2_GOAWAY) {
      u->draining = true;
      if (u->streams == 0) r->Break(u, "drained");
      return 0;
    }
    const bool end = (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0;
    if (frame->hd.type != NGHTTP2_HEADERS && frame->hd.type != NGHTTP2_DATA) return 0;
    Stream* s = StreamOf(session, frame->hd.stream_id);
    if (s == nullptr) return 0;
    Conn* c = s->conn;
    if (frame->hd.type == NGHTTP2_HEADERS && frame->headers.cat == NGHTTP2_HCAT_RESPONSE) {
      if (!s->down_open || s->resp_started) {
        s->response.clear();
        return 0;
      }
      const std::vector<nghttp2_nv> nv = Nv(s->response);
      if (end) {
        nghttp2_submit_response(c->session, s->id, nv.data(), nv.size(), nullptr);
        s->resp_started = s->resp_done = true;
        r->Observe(s, s->grpc_status >= 0 ? s->grpc_status : kInternal);
      } else {
        nghttp2_data_provider body;
        body.source.ptr = s;
        body.read_callback = &Impl::ReadResponse;
        nghttp2_submit_response(c->session, s->id, nv.data(), nv.size(), &body);
        s->resp_started = true;
      }
      std::vector<Header>().swap(s->response);
      r->MarkDirty(c);
    } else if (end) {
      if (s->resp_dropping || s->trailers_ready || s->resp_end) return 0;
      if (frame->hd.type == NGHTTP2_HEADERS) {
        s->trailers_ready = true;
      } else {
        s->resp_end = true;
      }
      if (s->down_open && s->resp_started && !s->resp_done) {
        nghttp2_session_resume_data(c->session, s->id);
        r->MarkDirty(c);
      }
    }
    return 0;
  }

  static int OnUpData(nghttp2_session* session, uint8_t, int32_t id, const uint8_t* data, size_t len, void* user_data) {
    auto* u = static_cast<Endpoint*>(user_data);
    if (u->dying) return 0;
    nghttp2_session_consume_connection(session, len);
    Stream* s = StreamOf(session, id);
    if (s == nullptr || !s->down_open || s->resp_dropping || s->resp_done) {
      nghttp2_session_consume_stream(session, id, len);
      return 0;
    }
    Impl* r = s->conn->router;
    uint64_t declared = 0;
    if (!s->resp_frames.Feed(data, len, r->o_.pass.max_message_bytes, &declared)) {
      nghttp2_session_consume_stream(session, id, len);
      r->ResetUp(s);
      r->Answer(s, kResourceExhausted,
                "grpc: received message larger than max (" + std::to_string(declared) + " vs. " +
                    std::to_string(r->o_.pass.max_message_bytes) + ")");
      return 0;
    }
    if (!r->CanHold(s->conn, len)) {
      nghttp2_session_consume_stream(session, id, len);
      r->ResetUp(s);
      r->Answer(s, kResourceExhausted, "statlet's CRI proxy holds its limit of message bytes");
      return 0;
    }
    s->resp.Append(data, len);
    r->Hold(s->conn, len);
    if (s->resp_started) {
      nghttp2_session_resume_data(s->conn->session, s->id);
      r->MarkDirty(s->conn);
    }
    return 0;
  }

  static int OnUpClose(nghttp2_session* session, int32_t id, uint32_t error_code, void* user_data) {
    auto* u = static_cast<Upstream*>(static_cast<Endpoint*>(user_data));
    if (u->dying) return 0;
    --u->streams;
    if (u->draining && u->streams == 0) u->router->Break(u, "drained");
    Stream* s = StreamOf(session, id);
    if (s == nullptr || s->up != u) return 0;
    Impl* r = s->conn->router;
    s->up_open = false;
    s->up = nullptr;  // its connection's credit came back as the bytes arrived
    s->req_dropping = true;
    r->DropRequest(s);
    if (error_code != NGHTTP2_NO_ERROR && s->down_open && !s->trailers_ready && !s->resp_end && !s->resp_done) {
      // The runtime reset the call: so is the caller's stream, with the runtime's code.
      r->ResetDown(s, error_code,
                   error_code == NGHTTP2_REFUSED_STREAM ? kUnavailable
                   : error_code == NGHTTP2_CANCEL       ? kCancelled
                                                        : kInternal);
    }
    if (!s->down_open) r->Finished(s);
    return 0;
  }

  // Response DATA for the caller's stream, then the runtime's trailers.
  static ssize_t ReadResponse(nghttp2_session* session, int32_t id, uint8_t* buf, size_t length, uint32_t* flags,
                              nghttp2_data_source* source, void*) {
    auto* s = static_cast<Stream*>(source->ptr);
    Impl* r = s->conn->router;
    const size_t n = s->resp.Take(buf, length);
    if (n > 0) {
      r->Unhold(s->conn, n);
      s->down_progress = Clock::now();
      if (s->up != nullptr) {
        nghttp2_session_consume_stream(s->up->session, s->up_id, n);
        r->MarkDirty(s->up);
      }
    }
    if (s->resp.empty()) {
      if (s->trailers_ready) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        const std::vector<nghttp2_nv> nv = Nv(s->trailers);
        nghttp2_submit_trailer(session, id, nv.data(), nv.size());
        s->resp_done = true;
        r->Observe(s, s->grpc_status >= 0 ? s->grpc_status : kInternal);
      } else if (s->resp_end) {
        *flags |= NGHTTP2_DATA_FLAG_EOF;
        s->resp_done = true;
        r->Observe(s, s->grpc_status >= 0 ? s->grpc_status : kInternal);
      } else if (n == 0) {
        return NGHTTP2_ERR_DEFERRED;
      }
    }
    return static_cast<ssize_t>(n);
  }

  ProxyRouterOptions o_;
  const std::string runtime_path_;
  nghttp2_session_callbacks* caller_cb_ = nullptr;
  nghttp2_session_callbacks* up_cb_ = nullptr;
  nghttp2_option* caller_opt_ = nullptr;
  nghttp2_option* up_opt_ = nullptr;
  int listener_ = -1, epoll_ = -1, wake_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};

  // The thread's own.
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;  // by the caller's fd
  std::unordered_map<uint64_t, Endpoint*> live_;
  uint64_t next_key_ = 16;
  std::vector<Endpoint*> dirty_, broken_;
  std::vector<Conn*> finishing_;  // connections with streams in their `finished`
  int64_t streams_ = 0;

  int64_t in_flight_ = 0;  // calls taken and not over (max_calls)
  int64_t held_ = 0;       // message bytes held by all calls (max_held_bytes)
};

ProxyRouter::ProxyRouter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ProxyRouter::~ProxyRouter() { Stop(); }
void ProxyRouter::Stop() { impl_->Stop(); }

StatusOr<std::unique_ptr<ProxyRouter>> ProxyRouter::Start(ProxyRouterOptions options, const std::string& socket_path) {
  if (options.pass.runtime_endpoint.empty() || options.pass.runtime_endpoint == "none") {
    return InvalidArgument("the CRI proxy needs the runtime's endpoint (--runtime.endpoint unix:///…)");
  }
  auto runtime = ParseUnixEndpoint(options.pass.runtime_endpoint);
  if (!runtime.ok()) return runtime.status();
  if (options.pass.max_calls < 1) return InvalidArgument("the CRI proxy needs max_calls >= 1");
  auto impl = std::make_unique<Impl>(std::move(options), *runtime);
  if (Status s = impl->Listen(socket_path); !s.ok()) return s;
  impl->StartThread();
  return std::unique_ptr<ProxyRouter>(new ProxyRouter(std::move(impl)));
}

}  // namespace statlet::cri
