#include "exporters/exposition_text.h"

#include <algorithm>
#include <charconv>
#include <cmath>

namespace statlet {

void AppendEscapedLabelValue(std::string* out, std::string_view value) {
  size_t start = 0;
  for (size_t i = 0; i < value.size(); ++i) {
    char c = value[i];
    if (c != '\\' && c != '"' && c != '\n') continue;
    out->append(value.data() + start, i - start);
    out->push_back('\\');
    out->push_back(c == '\n' ? 'n' : c);
    start = i + 1;
  }
  out->append(value.data() + start, value.size() - start);
}

void AppendEscapedHelp(std::string* out, std::string_view help, ExpositionFormat format) {
  const bool quote = format == ExpositionFormat::kOpenMetrics100;
  for (char c : help) {
    if (c == '\\') out->append("\\\\");
    else if (c == '\n') out->append("\\n");
    else if (c == '"' && quote) out->append("\\\"");
    else out->push_back(c);
  }
}

char* WriteUint(char* p, uint64_t v) { return std::to_chars(p, p + kMaxNumberChars, v).ptr; }

char* WriteDouble(char* p, double v) {
  std::string_view special;
  if (std::isnan(v)) special = "NaN";
  else if (std::isinf(v)) special = v > 0 ? "+Inf" : "-Inf";
  if (!special.empty()) return std::copy(special.begin(), special.end(), p);
  return std::to_chars(p, p + kMaxNumberChars, v).ptr;  // shortest round trip: <= 24 chars
}

char* WriteScaledUint(char* p, uint64_t units, int decimals) {
  uint64_t scale = 1;
  for (int i = 0; i < decimals; ++i) scale *= 10;
  p = WriteUint(p, units / scale);
  uint64_t frac = units % scale;
  if (frac == 0) return p;
  char digits[20];
  int n = decimals;
  for (int i = n - 1; i >= 0; --i) {
    digits[i] = static_cast<char>('0' + frac % 10);
    frac /= 10;
  }
  while (n > 0 && digits[n - 1] == '0') --n;
  *p++ = '.';
  return std::copy(digits, digits + n, p);
}

namespace {
template <class Write, class... Args>
void AppendWith(std::string* out, Write write, Args... args) {
  char buf[kMaxNumberChars];
  out->append(buf, write(buf, args...) - buf);
}
}  // namespace

void AppendUint(std::string* out, uint64_t v) { AppendWith(out, WriteUint, v); }
void AppendDouble(std::string* out, double v) { AppendWith(out, WriteDouble, v); }
void AppendScaledUint(std::string* out, uint64_t units, int decimals) {
  AppendWith(out, WriteScaledUint, units, decimals);
}

void AppendCanonicalFloat(std::string* out, double v) {
  if (std::isnan(v) || std::isinf(v)) {
    AppendDouble(out, v);
    return;
  }
  char buf[48];
  auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  std::string_view sci(buf, r.ptr - buf);
  // to_chars writes at least two exponent digits with a sign, as Go's %e does.
  const char* exp_at = sci.data() + sci.find('e') + 1;
  if (*exp_at == '+') ++exp_at;
  int exp = 0;
  std::from_chars(exp_at, sci.data() + sci.size(), exp);
  if (exp < -4 || exp >= 6) {
    out->append(sci);
    return;
  }
  r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::fixed);
  std::string_view fixed(buf, r.ptr - buf);
  out->append(fixed);
  if (fixed.find('.') == std::string_view::npos) out->append(".0");
}

}  // namespace statlet
