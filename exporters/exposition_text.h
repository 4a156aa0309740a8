// Low-level writers for the Prometheus text (0.0.4) and OpenMetrics (1.0) formats: numbers
// via std::to_chars, label-value and HELP escaping. They append to a caller-owned buffer whose
// capacity is reused across scrapes, so steady-state writes do not allocate.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace statlet {

enum class ExpositionFormat : uint8_t { kText004, kOpenMetrics100 };

// Label value escaping, identical in both formats: backslash, double quote, line feed.
void AppendEscapedLabelValue(std::string* out, std::string_view value);
// HELP escaping: text 0.0.4 escapes backslash and line feed; OpenMetrics also double quote.
void AppendEscapedHelp(std::string* out, std::string_view help, ExpositionFormat format);

// Cursor forms of the number writers, for hot loops that write through a raw cursor: each
// writes at most kMaxNumberChars at `p` and returns the new end. The Append forms below are
// these applied to a string.
inline constexpr size_t kMaxNumberChars = 32;
char* WriteUint(char* p, uint64_t v);
char* WriteDouble(char* p, double v);
char* WriteScaledUint(char* p, uint64_t units, int decimals);

void AppendUint(std::string* out, uint64_t v);
// Shortest round-trip form; "+Inf", "-Inf", "NaN" for the special values.
void AppendDouble(std::string* out, double v);
// The canonical rendering OpenMetrics asks for in `le` and `quantile` label values: Go's
// shortest %g (exponent form below 1e-4 and from 1e+06 up) with ".0" added when there is
// neither a point nor an exponent ("2e-06", "0.000128", "1.0", "100000.0", "1e+06", "+Inf").
void AppendCanonicalFloat(std::string* out, double v);
// An exact decimal of `units` / 10^`decimals` with trailing zeros trimmed: nanoseconds or
// microseconds as seconds without going through floating point.
void AppendScaledUint(std::string* out, uint64_t units, int decimals);
inline void AppendNanosAsSeconds(std::string* out, uint64_t ns) { AppendScaledUint(out, ns, 9); }
inline void AppendMicrosAsSeconds(std::string* out, uint64_t us) { AppendScaledUint(out, us, 6); }

}  // namespace statlet
