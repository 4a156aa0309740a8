// libFuzzer target for what proxy mode reads of a passed call itself (cri/grpc_wire.h): the
// grpc-timeout header and the length prefixes of the messages, both from any client of the
// socket. The first byte picks the parser; for the message frames it also cuts the input
// into chunks. Nothing may crash or read out of bounds, and the frames must agree with a
// one-pass reading of the same bytes whatever the chunks.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "cri/grpc_wire.h"

using namespace statlet::cri;

namespace {

// The messages whose prefix `data` holds whole, read in one pass, and whether one of them
// declares more than `max`.
uint64_t OnePass(const uint8_t* data, size_t size, size_t max, bool* over) {
  uint64_t messages = 0;
  size_t at = 0;
  *over = false;
  while (size - at >= 5) {
    const uint64_t length = (uint64_t{data[at + 1]} << 24) | (uint64_t{data[at + 2]} << 16) |
                            (uint64_t{data[at + 3]} << 8) | uint64_t{data[at + 4]};
    ++messages;
    if (length > max) {
      *over = true;
      return messages;
    }
    if (size - at - 5 < length) return messages;
    at += 5 + length;
  }
  return messages;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;
  const uint8_t pick = data[0], chunk = data[1];
  data += 2;
  size -= 2;
  if (pick % 3 == 0) {
    auto t = ParseGrpcTimeout(std::string_view(reinterpret_cast<const char*>(data), size));
    if (t && (size < 2 || size > 9 || t->count() < 0)) std::abort();
  } else if (pick % 3 == 1) {
    const std::string out = PercentEncode(std::string_view(reinterpret_cast<const char*>(data), size));
    for (char c : out) {
      if (c < 0x20 || c > 0x7e) std::abort();
    }
  } else {
    const size_t max = 1 + (pick >> 2) * 97;  // limits from 1 byte up
    GrpcMessageFrames frames;
    uint64_t declared = 0;
    bool ok = true;
    for (size_t at = 0; ok && at < size;) {
      const size_t n = std::min<size_t>(1 + chunk % 64, size - at);
      ok = frames.Feed(data + at, n, max, &declared);
      at += n;
    }
    bool over = false;
    const uint64_t messages = OnePass(data, size, max, &over);
    if (ok == over || frames.messages() != messages || (!ok && declared <= max)) std::abort();
  }
  return 0;
}
