#include "base/human_bytes.h"

#include <cstdio>

namespace statlet {

std::string HumanBytes(double bytes, std::string_view separator) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024 && u < 5) {
    bytes /= 1024;
    ++u;
  }
  char buf[48];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f%.*s%s" : "%.1f%.*s%s", bytes, static_cast<int>(separator.size()),
                separator.data(), kUnits[u]);
  return buf;
}

}  // namespace statlet
