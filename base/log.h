// Minimal leveled logger: logfmt or JSON lines on stderr, thread-safe, with a
// "once per key" helper so that environment errors are reported a single time.
#pragma once

#include <string>
#include <string_view>

namespace statlet::log {

enum class Level { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class Format { kLogfmt, kJson };

void SetLevel(Level level);
void SetFormat(Format format);
bool ParseLevel(std::string_view s, Level* out);
bool ParseFormat(std::string_view s, Format* out);
bool Enabled(Level level);

void Write(Level level, std::string_view msg);
// Logs `msg` only the first time `key` is seen in this process.
void Once(Level level, std::string_view key, std::string_view msg);

inline void Debug(std::string_view m) {
  if (Enabled(Level::kDebug)) Write(Level::kDebug, m);
}
inline void Info(std::string_view m) { Write(Level::kInfo, m); }
inline void Warn(std::string_view m) { Write(Level::kWarn, m); }
inline void Error(std::string_view m) { Write(Level::kError, m); }

}  // namespace statlet::log
