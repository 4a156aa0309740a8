#include "cmd/flag_parser.h"

#include <charconv>
#include <cstdio>

namespace statlet {

bool FlagParser::Next() {
  if (failed_) return false;
  if (++i_ >= argc_) return false;
  std::string_view a = argv_[i_];
  size_t eq = a.find('=');
  has_inline_ = a.substr(0, 2) == "--" && eq != std::string_view::npos;
  name_ = std::string(has_inline_ ? a.substr(0, eq) : a);
  inline_value_ = has_inline_ ? std::string(a.substr(eq + 1)) : std::string();
  return true;
}

std::string FlagParser::Value() {
  if (has_inline_) return inline_value_;
  if (i_ + 1 >= argc_) {
    Fail("flag " + name_ + " needs a value");
    return {};
  }
  return argv_[++i_];
}

int FlagParser::Fail(const std::string& message) {
  if (!failed_) std::fprintf(stderr, "statlet: %s\n", message.c_str());
  failed_ = true;
  return 2;
}

bool ParseDuration(std::string_view s, std::chrono::nanoseconds* out) {
  double v = 0;
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || v < 0) return false;
  std::string_view unit = s.substr(static_cast<size_t>(p - s.data()));
  double scale;
  if (unit.empty() || unit == "s") scale = 1e9;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ns") scale = 1;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return false;
  *out = std::chrono::nanoseconds(static_cast<int64_t>(v * scale));
  return true;
}

}  // namespace statlet
