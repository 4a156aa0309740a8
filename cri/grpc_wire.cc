#include "cri/grpc_wire.h"

#include <algorithm>
#include <cstdio>

namespace statlet::cri {

std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(std::string_view value) {
  if (value.size() < 2 || value.size() > 9) return std::nullopt;
  int64_t n = 0;
  for (char c : value.substr(0, value.size() - 1)) {
    if (c < '0' || c > '9') return std::nullopt;
    n = n * 10 + (c - '0');
  }
  using namespace std::chrono;
  // Eight digits of hours are 11,000 years, past what nanoseconds hold: a timeout is kept
  // within 100 years, which no call outlives.
  constexpr int64_t kMaxSeconds = int64_t{100} * 365 * 24 * 3600;
  int64_t seconds_per = 0;
  switch (value.back()) {
    case 'H': seconds_per = 3600; break;
    case 'M': seconds_per = 60; break;
    case 'S': seconds_per = 1; break;
    case 'm': return duration_cast<nanoseconds>(milliseconds(n));
    case 'u': return duration_cast<nanoseconds>(microseconds(n));
    case 'n': return nanoseconds(n);
    default: return std::nullopt;
  }
  return duration_cast<nanoseconds>(seconds(std::min(n * seconds_per, kMaxSeconds)));
}

std::string PercentEncode(std::string_view message) {
  std::string out;
  out.reserve(message.size());
  for (unsigned char c : message) {
    if (c >= 0x20 && c <= 0x7e && c != '%') {
      out += static_cast<char>(c);
    } else {
      char hex[4];
      std::snprintf(hex, sizeof hex, "%%%02X", c);
      out += hex;
    }
  }
  return out;
}

bool GrpcMessageFrames::Feed(const uint8_t* data, size_t n, size_t max_message_bytes, uint64_t* declared) {
  while (n > 0) {
    if (body_left_ > 0) {
      const size_t take = body_left_ < n ? static_cast<size_t>(body_left_) : n;
      body_left_ -= take;
      data += take;
      n -= take;
      continue;
    }
    prefix_[prefix_have_++] = *data++;
    --n;
    if (prefix_have_ < 5) continue;
    prefix_have_ = 0;
    ++messages_;
    const uint64_t length = (uint64_t{prefix_[1]} << 24) | (uint64_t{prefix_[2]} << 16) | (uint64_t{prefix_[3]} << 8) |
                            uint64_t{prefix_[4]};
    if (length > max_message_bytes) {
      *declared = length;
      return false;
    }
    body_left_ = length;
  }
  return true;
}

}  // namespace statlet::cri
