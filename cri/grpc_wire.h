// The few facts of gRPC's HTTP/2 mapping that proxy mode reads or writes itself
// (grpc/grpc's doc/PROTOCOL-HTTP2.md): the grpc-timeout header, the 5-byte prefix of every
// length-prefixed message, and grpc-message's percent-encoding. Everything else of a
// passed call goes through as the caller or the runtime wrote it.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace statlet::cri {

// "Timeout → TimeoutValue TimeoutUnit": 1 to 8 digits and one of H M S m u n. nullopt for
// anything else (the header is then ignored, as gRPC's own servers ignore it).
std::optional<std::chrono::nanoseconds> ParseGrpcTimeout(std::string_view value);

// grpc-message: bytes outside 0x20–0x7E and '%' as %XX.
std::string PercentEncode(std::string_view message);

// Follows the message boundaries of one direction of a call, chunk by chunk: each message
// is a compressed-flag byte, a 4-byte big-endian length and that many bytes.
class GrpcMessageFrames {
 public:
  // Takes the next `n` bytes of the direction. False when a message it completes the
  // prefix of declares more than `max_message_bytes` (its length in *declared); the
  // direction is then not to be followed further.
  bool Feed(const uint8_t* data, size_t n, size_t max_message_bytes, uint64_t* declared);
  // Messages whose prefix has been seen.
  uint64_t messages() const { return messages_; }

 private:
  uint8_t prefix_[5] = {};
  int prefix_have_ = 0;
  uint64_t body_left_ = 0;
  uint64_t messages_ = 0;
};

}  // namespace statlet::cri
