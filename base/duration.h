// Durations as flags and config files write them: "10s", "250ms", "1.5m", "1h", "0".
#pragma once

#include <chrono>
#include <string_view>

#include "base/status.h"

namespace statlet {
Status ParseDuration(std::string_view text, std::chrono::nanoseconds* out);
}  // namespace statlet
