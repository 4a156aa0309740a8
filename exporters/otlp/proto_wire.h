// Protocol buffers wire format written by hand (https://protobuf.dev/programming-guides/encoding/):
// tags, varints, fixed64 and length-delimited fields, into a growable buffer through a raw
// cursor. A nested message's length is written before its content: the writer reserves the
// number of length bytes it expects, writes the content, then writes the length, moving the
// content when the length needed another number of bytes (the guess is kept per call site,
// so the move is rare). Lengths are always minimal varints: the bytes are those a protobuf
// library serializes for the same fields in field-number order.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/attributes.h"

namespace statlet::otlp::wire {

enum WireType : uint8_t { kVarint = 0, kFixed64 = 1, kLen = 2 };

// A field's tag for field numbers below 16 (one byte): every field statlet writes.
constexpr uint8_t Tag(int field, WireType type) { return static_cast<uint8_t>((field << 3) | type); }

constexpr size_t VarintSize(uint64_t v) {
  size_t n = 1;
  while (v >= 0x80) {
    v >>= 7;
    ++n;
  }
  return n;
}

STATLET_ALWAYS_INLINE inline char* PutVarint(char* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<char>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<char>(v);
  return p;
}

STATLET_ALWAYS_INLINE inline char* PutFixed64(char* p, uint64_t v) {
  static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "fixed64 is little-endian on the wire");
  std::memcpy(p, &v, 8);
  return p + 8;
}

STATLET_ALWAYS_INLINE inline char* PutDouble(char* p, double d) {
  uint64_t v;
  std::memcpy(&v, &d, 8);
  return PutFixed64(p, v);
}

STATLET_ALWAYS_INLINE inline char* PutBytes(char* p, std::string_view s) {
  if (!s.empty()) std::memcpy(p, s.data(), s.size());
  return p + s.size();
}

// tag, length, bytes.
STATLET_ALWAYS_INLINE inline char* PutLenField(char* p, uint8_t tag, std::string_view s) {
  *p++ = static_cast<char>(tag);
  p = PutVarint(p, s.size());
  return PutBytes(p, s);
}

// Size of a length-delimited field whose content is n bytes (one-byte tag).
constexpr size_t LenFieldSize(size_t n) { return 1 + VarintSize(n) + n; }

// A string field as proto3 writes it: left out when empty.
inline void AppendStringField(std::string* out, uint8_t tag, std::string_view s) {
  if (s.empty()) return;
  out->push_back(static_cast<char>(tag));
  char len[10];
  out->append(len, PutVarint(len, s.size()) - len);
  out->append(s);
}

// A fixed64 field (also a double's bits), written even when zero.
inline void AppendFixed64Field(std::string* out, uint8_t tag, uint64_t v) {
  out->push_back(static_cast<char>(tag));
  char bytes[8];
  out->append(bytes, PutFixed64(bytes, v) - bytes);
}

// A varint field, written even when zero.
inline void AppendVarintField(std::string* out, uint8_t tag, uint64_t v) {
  out->push_back(static_cast<char>(tag));
  char bytes[10];
  out->append(bytes, PutVarint(bytes, v) - bytes);
}

// An already encoded message as a length-delimited field.
inline void AppendMessageField(std::string* out, uint8_t tag, std::string_view content) {
  out->push_back(static_cast<char>(tag));
  char len[10];
  out->append(len, PutVarint(len, content.size()) - len);
  out->append(content);
}

// The output: a string written through a cursor. Room is reserved before each write; the
// string grows a block at a time and is cut to what was written by Finish(). Positions
// are offsets (the string may move when it grows).
class Buffer {
 public:
  static constexpr size_t kBlock = 64 * 1024;

  // Writes into *out from its start, reusing what it holds and its capacity.
  explicit Buffer(std::string* out) : out_(out), p_(out->data()), end_(out->data() + out->size()) {}
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  // Room for n bytes at the returned cursor; Commit() the new end.
  STATLET_ALWAYS_INLINE char* Reserve(size_t n) {
    if (n > static_cast<size_t>(end_ - p_)) [[unlikely]]
      Grow(n);
    return p_;
  }
  STATLET_ALWAYS_INLINE void Commit(char* p) { p_ = p; }
  void Append(std::string_view s) { Commit(PutBytes(Reserve(s.size()), s)); }

  size_t size() const { return static_cast<size_t>(p_ - out_->data()); }
  char* at(size_t offset) { return out_->data() + offset; }
  // Back to an earlier position (drops what was written after it).
  void Truncate(size_t offset) { p_ = out_->data() + offset; }
  // Cuts the string to what was written.
  void Finish() { out_->resize(size()); }

  // A nested message: OpenLen writes the tag and reserves `guess` bytes for the length;
  // CloseLen writes the length of what followed and returns the number of bytes it took.
  STATLET_ALWAYS_INLINE size_t OpenLen(uint8_t tag, size_t guess) {
    char* p = Reserve(1 + guess);
    *p = static_cast<char>(tag);
    Commit(p + 1 + guess);
    return size() - guess;
  }
  STATLET_ALWAYS_INLINE size_t CloseLen(size_t len_at, size_t guess) {
    const size_t content = size() - len_at - guess;
    const size_t n = VarintSize(content);
    if (n != guess) [[unlikely]]
      Move(len_at + guess, content, n, guess);
    PutVarint(at(len_at), content);
    return n;
  }

 private:
  void Grow(size_t n) {
    const size_t used = size();
    out_->resize(used + (n > kBlock ? n : kBlock));
    p_ = out_->data() + used;
    end_ = out_->data() + out_->size();
  }
  // The content at `from` (n bytes) to where a length of `need` bytes instead of `had` puts it.
  void Move(size_t from, size_t n, size_t need, size_t had) {
    if (need > had) Reserve(need - had);
    char* base = out_->data();
    std::memmove(base + from - had + need, base + from, n);
    p_ = base + from - had + need + n;
  }

  std::string* out_;
  char* p_;
  char* end_;
};

}  // namespace statlet::otlp::wire
