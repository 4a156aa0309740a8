// Byte counts as people read them, the one rule every view prints with: binary units (B,
// KiB, MiB, GiB, TiB, PiB), whole bytes below 1 KiB and one decimal above ("1.5KiB").
#pragma once

#include <string>
#include <string_view>

namespace statlet {

// `separator` goes between the number and the unit ("" for tables, " " for prose).
std::string HumanBytes(double bytes, std::string_view separator = "");

}  // namespace statlet
