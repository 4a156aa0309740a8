// The pieces of a series line of the Prometheus text and OpenMetrics formats as the
// encoder writes them through a raw cursor: padded chunk copies, integers and exact
// decimals written inline, doubles from a memo, label values compared without a call.
// Shared by the encoder's full and kept paths (prometheus_encoder.cc,
// prometheus_kept.cc); not an interface of its own.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/attributes.h"
#include "exporters/exposition_text.h"
#include "metrics/sample.h"

namespace statlet::series_line {

// Pieces of a series line are copied in whole chunks of this size from padded sources into
// room reserved with this much slack: fixed-size copies the compiler inlines, instead of a
// call to memcpy (and its size dispatch) for each of a line's pieces.
constexpr size_t kCopyChunk = 32;

// Copies n bytes; reads up to kCopyChunk - 1 bytes past src + n and writes as far past
// p + n, both of which the callers own (padding, reserved slack).
STATLET_ALWAYS_INLINE inline char* CopyPadded(char* p, const char* src, size_t n) {
  for (size_t k = 0; k < n; k += kCopyChunk) std::memcpy(p + k, src + k, kCopyChunk);
  return p + n;
}

constexpr char kDigitPairs[] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

constexpr uint64_t kPow10[20] = {1ull,
                                 10ull,
                                 100ull,
                                 1000ull,
                                 10000ull,
                                 100000ull,
                                 1000000ull,
                                 10000000ull,
                                 100000000ull,
                                 1000000000ull,
                                 10000000000ull,
                                 100000000000ull,
                                 1000000000000ull,
                                 10000000000000ull,
                                 100000000000000ull,
                                 1000000000000000ull,
                                 10000000000000000ull,
                                 100000000000000000ull,
                                 1000000000000000000ull,
                                 10000000000000000000ull};

STATLET_ALWAYS_INLINE inline int DecimalDigits(uint64_t v) {
  // log10 from the bit length (1233 / 4096 ~ log10(2)), then one comparison to correct it.
  const int bits = 64 - __builtin_clzll(v | 1);
  const int guess = (bits * 1233) >> 12;
  return guess + (v >= kPow10[guess]) + (v == 0);
}

// Four digits of v < 10000 at p.
STATLET_ALWAYS_INLINE inline void Put4Digits(char* p, uint32_t v) {
  std::memcpy(p, kDigitPairs + 2 * (v / 100), 2);
  std::memcpy(p + 2, kDigitPairs + 2 * (v % 100), 2);
}

// Writes the `digits` low decimal digits of v (zero-padded) ending at `end`: eight at a time,
// whose halves and pairs do not wait on each other, then pairs.
STATLET_ALWAYS_INLINE inline void PutDigitsBackward(char* end, uint64_t v, int digits) {
  while (digits >= 8) {
    end -= 8;
    const auto low = static_cast<uint32_t>(v % 100000000);
    v /= 100000000;
    Put4Digits(end, low / 10000);
    Put4Digits(end + 4, low % 10000);
    digits -= 8;
  }
  while (digits >= 2) {
    end -= 2;
    std::memcpy(end, kDigitPairs + 2 * (v % 100), 2);
    v /= 100;
    digits -= 2;
  }
  if (digits) *--end = static_cast<char>('0' + v % 10);
}

// The same text as WriteUint (std::to_chars), inline: most series carry an integer.
STATLET_ALWAYS_INLINE inline char* PutUint(char* p, uint64_t v) {
  const int n = DecimalDigits(v);
  PutDigitsBackward(p + n, v, n);
  return p + n;
}

// units / 10^kDecimals as an exact decimal with trailing zeros trimmed: the same text as
// WriteScaledUint.
template <int kDecimals, uint64_t kScale>
STATLET_ALWAYS_INLINE inline char* PutScaledUint(char* p, uint64_t units) {
  p = PutUint(p, units / kScale);
  uint64_t frac = units % kScale;
  if (frac == 0) return p;
  int digits = kDecimals;
  while (frac % 10 == 0) {
    frac /= 10;
    --digits;
  }
  *p++ = '.';
  PutDigitsBackward(p + digits, frac, digits);
  return p + digits;
}

// Shortest round-trip text of the doubles seen, direct-mapped by their bits: the real
// numbers on /metrics (pressure ratios with two decimals, mostly 0; +Inf limits) repeat from
// cgroup to cgroup and scrape to scrape, and std::to_chars costs several times a series.
class DoubleMemo {
 public:
  // Writes WriteDouble's text; p has room for kMaxNumberChars.
  STATLET_ALWAYS_INLINE char* Put(char* p, double d) {
    uint64_t bits;
    std::memcpy(&bits, &d, sizeof bits);
    Entry& e = entries_[(bits * 0x9E3779B97F4A7C15ull) >> (64 - kLog2Entries)];
    if (e.bits != bits || e.size == 0) [[unlikely]] {  // no text is empty: size 0 is free
      e.bits = bits;
      e.size = static_cast<uint8_t>(WriteDouble(e.text, d) - e.text);
    }
    std::memcpy(p, e.text, sizeof e.text);
    return p + e.size;
  }

 private:
  static constexpr int kLog2Entries = 8;
  struct Entry {
    uint64_t bits = 0;
    uint8_t size = 0;
    char text[kMaxNumberChars] = {};
  };
  std::array<Entry, size_t{1} << kLog2Entries> entries_{};
};

template <class Memo>
STATLET_ALWAYS_INLINE inline char* PutValue(char* p, const metrics::Value& v, Memo& memo) {
  using K = metrics::Value::Kind;
  switch (v.kind) {
    case K::kCount: return PutUint(p, v.u);
    case K::kNanoseconds: return PutScaledUint<9, 1000000000>(p, v.u);
    case K::kMicroseconds: return PutScaledUint<6, 1000000>(p, v.u);
    case K::kDouble: return memo.Put(p, v.d);
  }
  return p;
}

template <class T>
STATLET_ALWAYS_INLINE inline T Load(const char* p) {
  T v;
  std::memcpy(&v, p, sizeof v);
  return v;
}

// Whether n bytes at a and b are equal. Label values are short ("total", "eth0",
// "/dev/sda"): up to 16 bytes are compared as two overlapping words inside [0, n), without a
// call to memcmp.
STATLET_ALWAYS_INLINE inline bool EqualBytes(const char* a, const char* b, size_t n) {
  if (n >= 8) {
    if (n > 16) return std::memcmp(a, b, n) == 0;
    return ((Load<uint64_t>(a) ^ Load<uint64_t>(b)) | (Load<uint64_t>(a + n - 8) ^ Load<uint64_t>(b + n - 8))) == 0;
  }
  if (n >= 4) {
    return ((Load<uint32_t>(a) ^ Load<uint32_t>(b)) | (Load<uint32_t>(a + n - 4) ^ Load<uint32_t>(b + n - 4))) == 0;
  }
  if (n == 0) return true;
  return a[0] == b[0] && a[n / 2] == b[n / 2] && a[n - 1] == b[n - 1];
}

template <class ExtraT>
STATLET_ALWAYS_INLINE inline bool SameValues(const ExtraT& e, const metrics::LabelValues& l) {
  if (e.n != l.n) return false;
  for (size_t k = 0; k < l.n; ++k) {
    const std::string& a = e.values[k];
    const std::string_view b = l.v[k];
    if (a.size() != b.size() || !EqualBytes(a.data(), b.data(), b.size())) return false;
  }
  return true;
}

// `name` + the cgroup's label block + extra + "} " + value + "\n", appended to `text` (a
// StagedText or KeptText) with padded chunk copies: the line of every plain series, on the
// hot path of both the full and the kept encode. The name, block and extra are padded
// sources (kCopyChunk bytes readable past their ends).
template <class Text, class Memo>
STATLET_ALWAYS_INLINE inline void AppendPaddedLine(Text& text, const char* name, size_t name_size, const char* block,
                                                   size_t block_size, const char* extra, size_t extra_size,
                                                   const metrics::Value& v, Memo& memo) {
  char* p = text.Reserve(name_size + block_size + extra_size + 2 + kMaxNumberChars + 1 + kCopyChunk);
  p = CopyPadded(p, name, name_size);
  p = CopyPadded(p, block, block_size);
  p = CopyPadded(p, extra, extra_size);
  *p++ = '}';
  *p++ = ' ';
  p = PutValue(p, v, memo);
  *p++ = '\n';
  text.Commit(p);
}

// `name` + suffix + the cgroup's label block + extra + "} " + value + "\n", appended to
// `text` (a StagedText or KeptText: Reserve, then Commit of the new end): the lines with a
// suffix or labels of their own (histogram buckets, sums and counts). A block is never
// empty (id is always set), so extras start with ','.
template <class Text, class Memo>
inline void AppendSuffixedLine(Text& text, std::string_view name, std::string_view suffix, std::string_view block,
                               std::string_view extra, const metrics::Value& v, Memo& memo) {
  const size_t head = name.size() + suffix.size() + block.size() + extra.size() + 2;
  char* p = text.Reserve(head + kMaxNumberChars + 1);
  for (std::string_view piece : {name, suffix, block, extra}) {
    if (piece.empty()) continue;  // may have no data pointer at all
    std::memcpy(p, piece.data(), piece.size());
    p += piece.size();
  }
  *p++ = '}';
  *p++ = ' ';
  p = PutValue(p, v, memo);
  *p++ = '\n';
  text.Commit(p);
}

}  // namespace statlet::series_line
