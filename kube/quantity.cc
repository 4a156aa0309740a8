#include "kube/quantity.h"

namespace statlet::kube {
namespace {

using U128 = unsigned __int128;
constexpr U128 kMax = UINT64_MAX;

// 10^e for e <= 38 (fits 128 bits); nullopt beyond.
std::optional<U128> Pow10(int e) {
  if (e < 0 || e > 38) return std::nullopt;
  U128 v = 1;
  for (int i = 0; i < e; ++i) v *= 10;
  return v;
}

}  // namespace

// The grammar of quantity.go:
//   <quantity> ::= <signedNumber><suffix>
//   <number>   ::= <digits> | <digits>.<digits> | <digits>. | .<digits>
//   <suffix>   ::= Ki | Mi | Gi | Ti | Pi | Ei | m | "" | k | M | G | T | P | E | e<signedNumber> | E<signedNumber>
std::optional<uint64_t> ParseQuantity(std::string_view s) {
  size_t i = 0;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) {
    if (s[i] == '-') {
      // Only a negative zero is a non-negative quantity; memory never is one.
      return std::nullopt;
    }
    ++i;
  }
  U128 mantissa = 0;
  int frac_digits = 0, digits = 0;
  bool dot = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (c == '.' && !dot) {
      dot = true;
      continue;
    }
    if (c < '0' || c > '9') break;
    if (mantissa > kMax * 1000) return std::nullopt;  // far beyond any byte count
    mantissa = mantissa * 10 + static_cast<unsigned>(c - '0');
    ++digits;
    if (dot) ++frac_digits;
  }
  if (digits == 0) return std::nullopt;
  const std::string_view suffix = s.substr(i);
  U128 mul = 1;
  int exp10 = 0;  // a power of ten beyond mul (negative for "m")
  if (suffix.empty()) {
  } else if (suffix.size() == 2 && suffix[1] == 'i') {
    static constexpr std::string_view kBinary = "KMGTPE";
    const size_t k = kBinary.find(suffix[0]);
    if (k == std::string_view::npos) return std::nullopt;
    mul = U128{1} << (10 * (k + 1));
  } else if (suffix == "m") {
    exp10 = -3;
  } else if (suffix.size() == 1 && std::string_view("kMGTPE").find(suffix[0]) != std::string_view::npos) {
    exp10 = 3 * static_cast<int>(std::string_view("kMGTPE").find(suffix[0]) + 1);
  } else if (suffix[0] == 'e' || suffix[0] == 'E') {
    std::string_view e = suffix.substr(1);
    bool neg = false;
    if (!e.empty() && (e[0] == '+' || e[0] == '-')) {
      neg = e[0] == '-';
      e.remove_prefix(1);
    }
    if (e.empty() || e.size() > 3) return std::nullopt;
    int v = 0;
    for (char c : e) {
      if (c < '0' || c > '9') return std::nullopt;
      v = v * 10 + (c - '0');
    }
    exp10 = neg ? -v : v;
  } else {
    return std::nullopt;
  }
  // value = mantissa × mul × 10^(exp10 − frac_digits), rounded up.
  const int e = exp10 - frac_digits;
  U128 num = mantissa * mul;
  if (mantissa != 0 && num / mantissa != mul) return std::nullopt;
  if (e >= 0) {
    auto p = Pow10(e);
    if (!p) return mantissa == 0 ? std::optional<uint64_t>(0) : std::nullopt;
    if (num != 0 && *p > kMax) return std::nullopt;
    const U128 v = num * *p;
    if (num != 0 && (v / *p != num || v > kMax)) return std::nullopt;
    return static_cast<uint64_t>(v);
  }
  auto p = Pow10(-e);
  if (!p) return num == 0 ? std::optional<uint64_t>(0) : std::optional<uint64_t>(1);  // a tiny positive value rounds up
  const U128 v = num / *p + (num % *p != 0 ? 1 : 0);
  if (v > kMax) return std::nullopt;
  return static_cast<uint64_t>(v);
}

}  // namespace statlet::kube
