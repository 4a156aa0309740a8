#include "tests/support/http_client.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdlib>

namespace statlet::testing {
namespace {

using Clock = std::chrono::steady_clock;

int RemainingMs(Clock::time_point deadline) {
  auto left = std::chrono::duration_cast<Millis>(deadline - Clock::now()).count();
  return left < 0 ? 0 : static_cast<int>(left);
}

std::string Lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

}  // namespace

std::string RawResponse::header(const std::string& lower_name) const {
  auto it = headers.find(lower_name);
  return it == headers.end() ? std::string() : it->second;
}

TcpConnection::TcpConnection(int port, const std::string& source, Millis timeout) {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  if (source != "127.0.0.1") {
    ::inet_pton(AF_INET, source.c_str(), &a.sin_addr);
    if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
      ::close(fd);
      return;
    }
  }
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    if (errno != EINPROGRESS) {
      ::close(fd);
      return;
    }
    pollfd p{fd, POLLOUT, 0};
    int err = 0;
    socklen_t len = sizeof err;
    if (::poll(&p, 1, static_cast<int>(timeout.count())) != 1 ||
        ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0 || err != 0) {
      ::close(fd);
      return;
    }
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  fd_ = fd;
}

TcpConnection::TcpConnection(TcpConnection&& other) noexcept : fd_(other.fd_), in_(std::move(other.in_)) {
  other.fd_ = -1;
}

TcpConnection::~TcpConnection() { Close(); }

void TcpConnection::Close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool TcpConnection::Send(std::string_view bytes, Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  while (!bytes.empty()) {
    if (fd_ < 0) return false;
    ssize_t n = ::send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL);
    if (n > 0) {
      bytes.remove_prefix(static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    pollfd p{fd_, POLLOUT, 0};
    if (::poll(&p, 1, RemainingMs(deadline)) <= 0) return false;
    if (p.revents & (POLLERR | POLLHUP)) return false;
  }
  return true;
}

bool TcpConnection::Fill(Clock::time_point deadline) {
  if (fd_ < 0) return false;
  char buf[65536];
  while (true) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n > 0) {
      in_.append(buf, static_cast<size_t>(n));
      return true;
    }
    if (n == 0) return false;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return false;
    pollfd p{fd_, POLLIN, 0};
    int left = RemainingMs(deadline);
    if (left == 0 || ::poll(&p, 1, left) <= 0) return false;
  }
}

std::optional<RawResponse> TcpConnection::ReadResponse(Millis timeout, bool head) {
  const auto deadline = Clock::now() + timeout;
  size_t end;
  while ((end = in_.find("\r\n\r\n")) == std::string::npos) {
    if (!Fill(deadline)) return std::nullopt;
  }
  RawResponse r;
  std::string head_block = in_.substr(0, end + 2);
  in_.erase(0, end + 4);
  size_t line_end = head_block.find("\r\n");
  std::string status_line = head_block.substr(0, line_end);
  if (status_line.rfind("HTTP/1.", 0) != 0 || status_line.size() < 12) return std::nullopt;
  r.status = std::atoi(status_line.c_str() + 9);
  for (size_t pos = line_end + 2; pos < head_block.size();) {
    size_t e = head_block.find("\r\n", pos);
    std::string line = head_block.substr(pos, e - pos);
    pos = e + 2;
    size_t colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string value = line.substr(colon + 1);
    value.erase(0, value.find_first_not_of(" \t"));
    r.headers[Lower(line.substr(0, colon))] = value;
  }
  if (head || r.status == 204 || r.status == 304 || r.status / 100 == 1) return r;
  if (Lower(r.header("transfer-encoding")).find("chunked") != std::string::npos) {
    r.chunked = true;
    while (true) {
      size_t le;
      while ((le = in_.find("\r\n")) == std::string::npos) {
        if (!Fill(deadline)) return std::nullopt;
      }
      size_t chunk = std::strtoul(in_.c_str(), nullptr, 16);
      while (in_.size() < le + 2 + chunk + 2) {
        if (!Fill(deadline)) return std::nullopt;
      }
      r.body.append(in_, le + 2, chunk);
      in_.erase(0, le + 2 + chunk + 2);
      if (chunk == 0) return r;
    }
  }
  std::string cl = r.header("content-length");
  if (cl.empty()) {
    // Delimited by the close.
    while (Fill(deadline)) {
    }
    r.body = std::move(in_);
    in_.clear();
    return r;
  }
  unsigned long long length = std::strtoull(cl.c_str(), nullptr, 10);
  // A Content-Length beyond what any body here can be is returned as is, body unread: the
  // caller asserts on it.
  if (length > (1ull << 30)) return r;
  while (in_.size() < length) {
    if (!Fill(deadline)) return std::nullopt;
  }
  r.body = in_.substr(0, length);
  in_.erase(0, length);
  return r;
}

bool TcpConnection::ClosedWithin(Millis timeout) {
  const auto deadline = Clock::now() + timeout;
  if (fd_ < 0) return true;
  char buf[65536];
  while (true) {
    ssize_t n = ::recv(fd_, buf, sizeof buf, 0);
    if (n == 0) return true;
    if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) return true;  // reset
    if (n > 0) continue;
    pollfd p{fd_, POLLIN, 0};
    int left = RemainingMs(deadline);
    if (left == 0) return false;
    if (::poll(&p, 1, left) == 0) return false;
  }
}

std::string GetRequest(const std::string& path, const std::string& extra, bool close) {
  return "GET " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\n" + extra + (close ? "Connection: close\r\n" : "") + "\r\n";
}

TimedResponse TimedGet(int port, const std::string& path, const std::string& extra, Millis timeout,
                       const std::string& source) {
  TimedResponse out;
  const auto start = Clock::now();
  TcpConnection c(port, source, timeout);
  if (c.ok() && c.Send(GetRequest(path, extra, true), timeout)) {
    auto left = std::chrono::duration_cast<Millis>(start + timeout - Clock::now());
    if (left.count() > 0) out.response = c.ReadResponse(left);
  }
  out.ms = std::chrono::duration<double, std::milli>(Clock::now() - start).count();
  return out;
}

}  // namespace statlet::testing
