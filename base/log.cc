#include "base/log.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <mutex>
#include <string>
#include <unordered_set>

namespace statlet::log {
namespace {
std::atomic<int> g_level{static_cast<int>(Level::kInfo)};
std::atomic<int> g_format{static_cast<int>(Format::kLogfmt)};
std::mutex g_mu;
std::unordered_set<std::string>* g_once = new std::unordered_set<std::string>();

const char* Name(Level l) {
  switch (l) {
    case Level::kDebug: return "debug";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "info";
}

void AppendQuoted(std::string& out, std::string_view s, bool json) {
  out.push_back('"');
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') out += "\\n";
    else if (static_cast<unsigned char>(c) < 0x20) {
      if (json) out += "\\u0020";
      else out.push_back(' ');
    } else out.push_back(c);
  }
  out.push_back('"');
}
}  // namespace

void SetLevel(Level level) { g_level = static_cast<int>(level); }
void SetFormat(Format format) { g_format = static_cast<int>(format); }
bool Enabled(Level level) { return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed); }

bool ParseLevel(std::string_view s, Level* out) {
  if (s == "debug") *out = Level::kDebug;
  else if (s == "info") *out = Level::kInfo;
  else if (s == "warn") *out = Level::kWarn;
  else if (s == "error") *out = Level::kError;
  else return false;
  return true;
}

bool ParseFormat(std::string_view s, Format* out) {
  if (s == "logfmt") *out = Format::kLogfmt;
  else if (s == "json") *out = Format::kJson;
  else return false;
  return true;
}

void Write(Level level, std::string_view msg) {
  if (!Enabled(level)) return;
  auto now = std::chrono::system_clock::now();
  std::time_t t = std::chrono::system_clock::to_time_t(now);
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::tm tm{};
  gmtime_r(&t, &tm);
  char ts[64];
  std::snprintf(ts, sizeof ts, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                tm.tm_hour, tm.tm_min, tm.tm_sec, static_cast<int>(ms));
  std::string line;
  line.reserve(msg.size() + 64);
  if (g_format.load() == static_cast<int>(Format::kJson)) {
    line += "{\"ts\":\"";
    line += ts;
    line += "\",\"level\":\"";
    line += Name(level);
    line += "\",\"msg\":";
    AppendQuoted(line, msg, true);
    line += "}\n";
  } else {
    line += "ts=";
    line += ts;
    line += " level=";
    line += Name(level);
    line += " msg=";
    AppendQuoted(line, msg, false);
    line += "\n";
  }
  std::lock_guard<std::mutex> lock(g_mu);
  std::fwrite(line.data(), 1, line.size(), stderr);
}

void Once(Level level, std::string_view key, std::string_view msg) {
  {
    std::lock_guard<std::mutex> lock(g_mu);
    if (!g_once->emplace(key).second) return;
  }
  Write(level, msg);
}

}  // namespace statlet::log
