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

// The request body of every call: one uncompressed gRPC message of length 0.
constexpr unsigned char kEmptyMessage[5] = {0, 0, 0, 0, 0};

ssize_t ReadEmptyMessage(nghttp2_session*, int32_t, uint8_t* buf, size_t length, uint32_t* flags,
                         nghttp2_data_source* source, void*) {
  size_t* sent = static_cast<size_t*>(source->ptr);
  size_t n = std::min(length, sizeof kEmptyMessage - *sent);
  std::memcpy(buf, kEmptyMessage + *sent, n);
  *sent += n;
  if (*sent == sizeof kEmptyMessage) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
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

void H2Attacker::SubmitCall(const std::string& method) {
  nghttp2_nv hdrs[] = {Header(":method", "POST"),
                       Header(":scheme", "http"),
                       Header(":path", method),
                       Header(":authority", "localhost"),
                       Header("content-type", "application/grpc"),
                       Header("te", "trailers")};
  nghttp2_data_provider body;
  body_offsets_.push_back(0);  // a deque: earlier elements never move
  body.source.ptr = &body_offsets_.back();
  body.read_callback = ReadEmptyMessage;
  nghttp2_submit_request(session_, nullptr, hdrs, sizeof hdrs / sizeof hdrs[0], &body, nullptr);
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
