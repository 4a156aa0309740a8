// The tests' HTTP/1.1 client: TimedGet, one GET with a deadline (what every test that asks
// statlet, a registry or a pod over HTTP uses), over a raw connection that the tests of
// hostile clients drive themselves: they send what a polite client never would (no request
// at all, a byte at a time, 16 MB of headers, pipelined requests) and see exactly what
// comes back, when, and whether the server closed. Every wait has a deadline.
#pragma once

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace statlet::testing {

using Millis = std::chrono::milliseconds;

struct RawResponse {
  int status = 0;
  std::map<std::string, std::string> headers;  // names in lower case
  std::string body;
  bool chunked = false;
  std::string header(const std::string& lower_name) const;
};

class TcpConnection {
 public:
  // Connects to 127.0.0.1:port from `source` (any 127.0.0.0/8 address: tests stand for
  // distinct clients that way). ok() is false when the connection was refused or timed out.
  TcpConnection(int port, const std::string& source = "127.0.0.1", Millis timeout = Millis(2000));
  ~TcpConnection();
  TcpConnection(TcpConnection&& other) noexcept;
  TcpConnection& operator=(TcpConnection&&) = delete;
  TcpConnection(const TcpConnection&) = delete;

  bool ok() const { return fd_ >= 0; }
  int fd() const { return fd_; }
  // Sends everything (never raises SIGPIPE); false when the peer is gone or `timeout` passed.
  bool Send(std::string_view bytes, Millis timeout = Millis(2000));
  // One response: status line, headers, then a Content-Length or chunked body (no body
  // for HEAD when `head`). None when the connection closed or `timeout` passed first.
  std::optional<RawResponse> ReadResponse(Millis timeout, bool head = false);
  // True when the peer closes (EOF or reset) within `timeout`; bytes sent meanwhile are
  // read and dropped.
  bool ClosedWithin(Millis timeout);
  // Bytes received and not consumed by ReadResponse yet.
  const std::string& pending() const { return in_; }
  void Close();

 private:
  // Reads more into in_; false on EOF, error or deadline.
  bool Fill(std::chrono::steady_clock::time_point deadline);

  int fd_ = -1;
  std::string in_;
};

// "GET <path> HTTP/1.1" with Host and `extra` header lines (each ending in \r\n).
std::string GetRequest(const std::string& path, const std::string& extra = "", bool close = false);

struct TimedResponse {
  std::optional<RawResponse> response;
  double ms = 0;
};
// One GET on a fresh connection (Connection: close) to 127.0.0.1:port from `source`, with a
// deadline for the whole exchange; a chunked body arrives joined. No response when the
// connection was refused, closed early or the deadline passed.
TimedResponse TimedGet(int port, const std::string& path, const std::string& extra = "", Millis timeout = Millis(5000),
                       const std::string& source = "127.0.0.1");

}  // namespace statlet::testing
