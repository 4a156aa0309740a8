#include "base/duration.h"

#include <charconv>
#include <string>

namespace statlet {

Status ParseDuration(std::string_view text, std::chrono::nanoseconds* out) {
  if (text == "0") {
    *out = std::chrono::nanoseconds(0);
    return Status::Ok();
  }
  double v = 0;
  auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || p == text.data() || v < 0) {
    return InvalidArgument("bad duration \"" + std::string(text) + "\"");
  }
  std::string_view unit = text.substr(static_cast<size_t>(p - text.data()));
  double scale;
  if (unit == "ns") scale = 1;
  else if (unit == "us") scale = 1e3;
  else if (unit == "ms") scale = 1e6;
  else if (unit == "s") scale = 1e9;
  else if (unit == "m") scale = 60e9;
  else if (unit == "h") scale = 3600e9;
  else return InvalidArgument("bad duration unit in \"" + std::string(text) + "\" (use ns, us, ms, s, m, h)");
  *out = std::chrono::nanoseconds(static_cast<int64_t>(v * scale));
  return Status::Ok();
}

std::string FormatDuration(std::chrono::nanoseconds d) {
  int64_t ns = d.count();
  if (ns % 1000000000 == 0) return std::to_string(ns / 1000000000) + "s";
  if (ns % 1000000 == 0) return std::to_string(ns / 1000000) + "ms";
  if (ns % 1000 == 0) return std::to_string(ns / 1000) + "us";
  return std::to_string(ns) + "ns";
}

}  // namespace statlet
