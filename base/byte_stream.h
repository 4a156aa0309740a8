// ByteStream: an answer produced while it is sent, for an edge that streams what another
// part of statlet produces without either knowing the other (the HTTP server sends the
// KEP-5334 progress lines of pulls/, exporters/http_server.h). The producer keeps what is
// ready, bounded as it sees fit; the sender takes it when it can write.
#pragma once

#include <functional>
#include <string>

namespace statlet {

class ByteStream {
 public:
  virtual ~ByteStream() = default;
  // Appends what is ready to *out. When nothing was ready, `wake` is kept and called once
  // (from any thread, never under a lock the caller holds) when something is; a later Take
  // replaces it. False once the stream has ended (*out holds its last bytes).
  virtual bool Take(std::string* out, std::function<void()> wake) = 0;
  // The reader is gone (or the server stops): no Take follows, the wake is dropped.
  virtual void Close() = 0;
};

}  // namespace statlet
