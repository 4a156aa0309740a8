#include "exporters/content_negotiation.h"

#include <algorithm>
#include <cstdlib>
#include <string>

namespace statlet {
namespace {

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

bool IEquals(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    char x = a[i], y = b[i];
    if (x >= 'A' && x <= 'Z') x = static_cast<char>(x - 'A' + 'a');
    if (y >= 'A' && y <= 'Z') y = static_cast<char>(y - 'A' + 'a');
    if (x != y) return false;
  }
  return true;
}

// Calls fn(media_range, q, params) for each comma-separated element of a header.
template <typename Fn>
void ForEachElement(std::string_view header, Fn fn) {
  while (!header.empty()) {
    size_t comma = header.find(',');
    std::string_view element = header.substr(0, comma);
    header = comma == std::string_view::npos ? std::string_view() : header.substr(comma + 1);
    size_t semi = element.find(';');
    std::string_view value = Trim(element.substr(0, semi));
    std::string_view params = semi == std::string_view::npos ? std::string_view() : element.substr(semi + 1);
    double q = 1.0;
    std::string_view version;
    while (!params.empty()) {
      size_t next = params.find(';');
      std::string_view p = Trim(params.substr(0, next));
      params = next == std::string_view::npos ? std::string_view() : params.substr(next + 1);
      size_t eq = p.find('=');
      if (eq == std::string_view::npos) continue;
      std::string_view key = Trim(p.substr(0, eq));
      std::string_view val = Trim(p.substr(eq + 1));
      if (IEquals(key, "q")) q = std::strtod(std::string(val).c_str(), nullptr);
      if (IEquals(key, "version")) version = val;
    }
    if (!value.empty()) fn(value, q, version);
  }
}

}  // namespace

ExpositionFormat NegotiateFormat(std::string_view accept) {
  double om = -1, text = -1;
  ForEachElement(accept, [&](std::string_view type, double q, std::string_view version) {
    if (IEquals(type, "application/openmetrics-text")) {
      if (version.empty() || version == "1.0.0") om = std::max(om, q);
    } else if (IEquals(type, "text/plain") || type == "*/*") {
      text = std::max(text, q);
    }
  });
  return om > 0 && om >= text ? ExpositionFormat::kOpenMetrics100 : ExpositionFormat::kText004;
}

bool AcceptsGzip(std::string_view accept_encoding) {
  double gzip = -1, any = -1;
  ForEachElement(accept_encoding, [&](std::string_view coding, double q, std::string_view) {
    if (IEquals(coding, "gzip")) gzip = q;
    else if (coding == "*") any = q;
  });
  return gzip >= 0 ? gzip > 0 : any > 0;
}

std::string_view ContentType(ExpositionFormat format) {
  return format == ExpositionFormat::kOpenMetrics100 ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
                                                     : "text/plain; version=0.0.4; charset=utf-8";
}

}  // namespace statlet
