#include "tests/reliability/h2_attacker.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string_view>

namespace statlet::testing {
namespace {

using Clock = std::chrono::steady_clock;

ssize_t ReadBody(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags, nghttp2_data_source* source,
                 void*) {
  auto* body = static_cast<H2CallBody*>(source->ptr);
  const size_t n = std::min(length, body->bytes.size() - body->sent);
  std::memcpy(buf, body->bytes.data() + body->sent, n);
  body->sent += n;
  if (body->sent == body->bytes.size()) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

// One uncompressed gRPC message.
std::string Framed(const std::string& message) {
  std::string out(5, '\0');
  const uint32_t n = static_cast<uint32_t>(message.size());
  out[1] = static_cast<char>(n >> 24);
  out[2] = static_cast<char>(n >> 16);
  out[3] = static_cast<char>(n >> 8);
  out[4] = static_cast<char>(n);
  return out + message;
}

// `value` must outlive the submit call (nghttp2 copies the pairs there).
nghttp2_nv Header(const char* name, std::string_view value) {
  return nghttp2_nv{reinterpret_cast<uint8_t*>(const_cast<char*>(name)),
                    reinterpret_cast<uint8_t*>(const_cast<char*>(value.data())), std::strlen(name), value.size(),
                    NGHTTP2_NV_FLAG_NONE};
}

}  // namespace

H2Attacker::H2Attacker(const std::string& unix_socket, bool grant_credit) {
  fd_ = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", unix_socket.c_str());
  if (fd_ < 0 || ::connect(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    Close();
    return;
  }
  nghttp2_session_callbacks* cb;
  nghttp2_session_callbacks_new(&cb);
  nghttp2_session_callbacks_set_on_stream_close_callback(cb, &H2Attacker::OnStreamClose);
  nghttp2_session_callbacks_set_on_frame_recv_callback(cb, &H2Attacker::OnFrameRecv);
  nghttp2_session_callbacks_set_on_header_callback(cb, &H2Attacker::OnHeader);
  nghttp2_option* opt;
  nghttp2_option_new(&opt);
  nghttp2_option_set_no_auto_window_update(opt, grant_credit ? 0 : 1);
  nghttp2_option_set_no_auto_ping_ack(opt, 1);
  nghttp2_session_client_new2(&session_, cb, this, opt);
  nghttp2_option_del(opt);
  nghttp2_session_callbacks_del(cb);
  nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0}, {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 0}};
  nghttp2_submit_settings(session_, NGHTTP2_FLAG_NONE, settings, grant_credit ? 1 : 2);
  if (!Flush(std::chrono::seconds(2))) Close();
}

H2Attacker::~H2Attacker() { Close(); }

void H2Attacker::Close() {
  if (session_ != nullptr) nghttp2_session_del(session_);
  session_ = nullptr;
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

int H2Attacker::OnStreamClose(nghttp2_session*, int32_t, uint32_t, void* self) {
  ++static_cast<H2Attacker*>(self)->streams_closed_;
  return 0;
}

int H2Attacker::OnFrameRecv(nghttp2_session*, const nghttp2_frame* frame, void* self) {
  auto* a = static_cast<H2Attacker*>(self);
  if (frame->hd.type == NGHTTP2_GOAWAY) a->closed_ = true;
  if (frame->hd.type == NGHTTP2_HEADERS) ++a->headers_received_;
  if (frame->hd.type == NGHTTP2_PING && (frame->hd.flags & NGHTTP2_FLAG_ACK) != 0) ++a->ping_acks_;
  return 0;
}

int H2Attacker::OnHeader(nghttp2_session*, const nghttp2_frame* frame, const uint8_t* name, size_t namelen,
                         const uint8_t* value, size_t valuelen, uint8_t, void* self) {
  if (std::string_view(reinterpret_cast<const char*>(name), namelen) == "grpc-status") {
    static_cast<H2Attacker*>(self)->statuses_[frame->hd.stream_id] =
        std::string(reinterpret_cast<const char*>(value), valuelen);
  }
  return 0;
}

std::string H2Attacker::StatusOf(int32_t stream) const {
  auto it = statuses_.find(stream);
  return it == statuses_.end() ? std::string() : it->second;
}

int32_t H2Attacker::OpenCall(const std::string& method, const std::string& message, bool credit) {
  if (!ok()) return -1;
  const int32_t id = SubmitCall(method, message);
  // Credit for a stream goes once it is open: nghttp2 opens it as its HEADERS go out.
  Flush(std::chrono::seconds(2));
  if (credit && id > 0) {
    nghttp2_submit_window_update(session_, NGHTTP2_FLAG_NONE, id, 16 << 20);
    nghttp2_submit_window_update(session_, NGHTTP2_FLAG_NONE, 0, 16 << 20);
  }
  Flush(std::chrono::seconds(2));
  return id;
}

bool H2Attacker::Flush(std::chrono::milliseconds timeout) {
  const auto deadline = Clock::now() + timeout;
  while (fd_ >= 0) {
    if (pending_.empty()) {
      const uint8_t* data;
      ssize_t n = nghttp2_session_mem_send(session_, &data);
      if (n < 0) return false;
      if (n == 0) return true;
      pending_.assign(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    }
    ssize_t w = ::send(fd_, pending_.data(), pending_.size(), MSG_NOSIGNAL);
    if (w > 0) {
      pending_.erase(0, static_cast<size_t>(w));
      continue;
    }
    if (w < 0 && errno != EAGAIN && errno != EINTR) {
      closed_ = true;
      return false;
    }
    pollfd p{fd_, POLLOUT, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || ::poll(&p, 1, static_cast<int>(left)) <= 0) return false;  // unsent bytes stay pending
  }
  return false;
}

int32_t H2Attacker::SubmitCall(const std::string& method, const std::string& message) {
  nghttp2_nv hdrs[] = {Header(":method", "POST"),
                       Header(":scheme", "http"),
                       Header(":path", method),
                       Header(":authority", "localhost"),
                       Header("content-type", "application/grpc"),
                       Header("te", "trailers")};
  nghttp2_data_provider body;
  bodies_.push_back(H2CallBody{Framed(message), 0});
  body.source.ptr = &bodies_.back();
  body.read_callback = ReadBody;
  return nghttp2_submit_request(session_, nullptr, hdrs, sizeof hdrs / sizeof hdrs[0], &body, nullptr);
}

void H2Attacker::OpenIdleCalls(const std::string& method, int count) {
  if (!ok()) return;
  for (int i = 0; i < count; ++i) {
    nghttp2_nv hdrs[] = {Header(":method", "POST"),
                         Header(":scheme", "http"),
                         Header(":path", method),
                         Header(":authority", "localhost"),
                         Header("content-type", "application/grpc"),
                         Header("te", "trailers")};
    nghttp2_submit_headers(session_, NGHTTP2_FLAG_NONE, -1, nullptr, hdrs, sizeof hdrs / sizeof hdrs[0], nullptr);
  }
  Flush(std::chrono::seconds(2));
}

void H2Attacker::OpenCalls(const std::string& method, int count) {
  if (!ok()) return;
  for (int i = 0; i < count; ++i) SubmitCall(method);
  Flush(std::chrono::seconds(2));
}

bool H2Attacker::ReadAvailable() {
  uint8_t buf[65536];
  while (ok()) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
    if (n <= 0 || nghttp2_session_mem_recv(session_, buf, static_cast<size_t>(n)) < 0) {
      closed_ = true;
      return false;
    }
  }
  return false;
}

bool H2Attacker::Pump(std::chrono::milliseconds duration) {
  const auto deadline = Clock::now() + duration;
  while (ok() && !closed_ && Clock::now() < deadline) {
    Flush(std::chrono::milliseconds(200));
    pollfd p{fd_, POLLIN, 0};
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    if (::poll(&p, 1, static_cast<int>(std::min<long>(left, 100))) <= 0) continue;
    if (!ReadAvailable()) return false;
  }
  return !closed_;
}

int H2Attacker::FloodPings(std::chrono::milliseconds duration, const std::string& method, bool read) {
  const auto deadline = Clock::now() + duration;
  int sent = 0;
  uint8_t opaque[8] = {0};
  while (ok() && !closed_ && Clock::now() < deadline) {
    // More PINGs only once the previous ones are on the wire: the server, not this
    // client, is the one that must buffer.
    if (!Flush(std::chrono::milliseconds(100))) continue;
    for (int i = 0; i < 64; ++i, ++sent) {
      std::memcpy(opaque, &sent, sizeof sent);
      nghttp2_submit_ping(session_, NGHTTP2_FLAG_NONE, opaque);
    }
    if (!method.empty()) SubmitCall(method);
    if (read) ReadAvailable();
  }
  return sent;
}

}  // namespace statlet::testing
