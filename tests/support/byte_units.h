// Byte sizes as the tests write them (a limit of 64 * kMi), declared once.
#pragma once

#include <cstdint>

namespace statlet::testing {

inline constexpr uint64_t kKi = 1024;
inline constexpr uint64_t kMi = 1024 * kKi;
inline constexpr uint64_t kGi = 1024 * kMi;

}  // namespace statlet::testing
