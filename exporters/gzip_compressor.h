// GzipCompressor: gzip (RFC 1952) with zlib at a fast level into a reused output buffer.
// statlet compresses its exposition itself rather than letting the HTTP library do it, so
// the level stays fast (compression costs several times the encoding) and the compressed
// body can be shared by every scrape of the same snapshot.
#pragma once

#include <zlib.h>

#include <span>
#include <string>
#include <string_view>

#include "base/status.h"

namespace statlet {

class GzipCompressor {
 public:
  explicit GzipCompressor(int level = 1);
  ~GzipCompressor();
  GzipCompressor(const GzipCompressor&) = delete;
  GzipCompressor& operator=(const GzipCompressor&) = delete;

  // Replaces *out (keeping its capacity) with the gzip stream of `in`.
  Status Compress(std::string_view in, std::string* out);

  // One gzip stream in two parts, for a body whose large head is shared by many responses
  // and whose small tail differs: CompressHead replaces *out with the stream's first bytes
  // (ending on a full flush) and keeps the compressor's state; each FinishTail then writes
  // the rest of a complete stream for `tail` (from a copy of that state, so any number of
  // tails can follow one head). head bytes + tail bytes form one valid gzip stream.
  Status CompressHead(std::string_view head, std::string* out);
  // The same for a head in pieces (a TextRope's), fed to zlib one after the other: the same
  // bytes as for the pieces joined (deflate's output does not depend on how its input is cut).
  Status CompressHead(std::span<const std::string_view> head, std::string* out);
  Status FinishTail(std::string_view tail, std::string* out);

 private:
  bool Ready();

  int level_;
  z_stream stream_{};
  bool ready_ = false;
  bool head_ready_ = false;
};

// Inflates a gzip stream (for tests and benches).
StatusOr<std::string> GunzipForTest(std::string_view in);

}  // namespace statlet
