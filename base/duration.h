// Durations as flags and config files write them: "10s", "250ms", "1.5m", "1h", "0".
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "base/status.h"

namespace statlet {
Status ParseDuration(std::string_view text, std::chrono::nanoseconds* out);
// The shortest text ParseDuration reads back exactly, in the largest of s, ms, us, ns that
// divides `d`: "0s", "60s", "250ms", "1500ms".
std::string FormatDuration(std::chrono::nanoseconds d);
}  // namespace statlet
