// An HTTP/2 client for the gRPC attacks (nghttp2 does the framing): streams whose
// responses are never granted flow-control credit, and a flood of PINGs whose ACKs are
// never read. Talks to a unix socket; every wait has a deadline.
#pragma once

#include <nghttp2/nghttp2.h>

#include <chrono>
#include <deque>
#include <map>
#include <string>

namespace statlet::testing {

// A call's request body: one framed gRPC message, and how much of it went to nghttp2.
struct H2CallBody {
  std::string bytes;
  size_t sent = 0;
};

class H2Attacker {
 public:
  // Connects and sends the preface. Without `grant_credit`, SETTINGS_INITIAL_WINDOW_SIZE
  // is 0 and no WINDOW_UPDATE is ever sent: no stream may send DATA. With it, the usual
  // window and automatic WINDOW_UPDATEs.
  explicit H2Attacker(const std::string& unix_socket, bool grant_credit = false);
  ~H2Attacker();
  H2Attacker(const H2Attacker&) = delete;
  H2Attacker& operator=(const H2Attacker&) = delete;

  bool ok() const { return fd_ >= 0 && session_ != nullptr; }
  // Opens `count` unary calls of `method` ("/runtime.v1.RuntimeService/ListContainerStats")
  // with an empty request message; as many as the server's stream limit lets through are
  // sent now, the rest as streams close.
  void OpenCalls(const std::string& method, int count);
  // Opens one call of `method` whose request is the one message `message`; with `credit`
  // the call (and the connection) is granted 16 MiB for its answer, else nothing (with the
  // constructor's default, its answer may not send a byte). Its stream id.
  int32_t OpenCall(const std::string& method, const std::string& message, bool credit);
  // The grpc-status a call got in its trailers (or trailers-only answer); "" while none.
  std::string StatusOf(int32_t stream) const;
  // Opens `count` calls of `method` with their headers only: no request message and no
  // half-close, as a client that abandoned them would leave them.
  void OpenIdleCalls(const std::string& method, int count);
  // Sends PINGs for `duration`, and with every 64 PINGs a call of `method` when one is
  // given; reads (and answers) what arrives only when `read`. The number of PINGs sent.
  int FloodPings(std::chrono::milliseconds duration, const std::string& method = "", bool read = false);
  // Reads and processes what has arrived, without waiting or sending; false once closed.
  bool ReadArrived() { return ReadAvailable(); }
  // Exchanges frames (reading what arrives) for `duration`; false once the server closed.
  bool Pump(std::chrono::milliseconds duration);
  // True once a GOAWAY came or the server closed the connection.
  bool closed_by_server() const { return closed_; }
  int streams_closed() const { return streams_closed_; }
  // What the server answered (read by Pump, or FloodPings with `read`): HEADERS frames of
  // calls it took up, and ACKs of PINGs it processed. An attack counts only when they show
  // that the server received it.
  int headers_received() const { return headers_received_; }
  int ping_acks() const { return ping_acks_; }
  void Close();

 private:
  bool Flush(std::chrono::milliseconds timeout);
  int32_t SubmitCall(const std::string& method, const std::string& message = std::string());
  // Reads and processes what has arrived, without waiting; false once closed.
  bool ReadAvailable();
  static int OnStreamClose(nghttp2_session*, int32_t, uint32_t, void* self);
  static int OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* self);
  static int OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                      const uint8_t* value, size_t valuelen, uint8_t flags, void* self);

  int fd_ = -1;
  nghttp2_session* session_ = nullptr;
  std::string pending_;            // framed bytes not written yet
  std::deque<H2CallBody> bodies_;  // per call (a deque: earlier elements never move)
  std::map<int32_t, std::string> statuses_;
  bool closed_ = false;
  int streams_closed_ = 0;
  int headers_received_ = 0;
  int ping_acks_ = 0;
};

}  // namespace statlet::testing
