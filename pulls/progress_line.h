// One line of a KEP-5334 progress stream: the KEP's Progress object (kubernetes/enhancements
// PR #5335 at a25a22ce, "Design Details") as JSON, one object per line:
//   {"image":"…","layer":"sha256:…","progress":N,"total":N,"error":"…"}
// `image`, `layer` and `error` are left out when empty (the KEP's omitempty); `progress`
// and `total` are always there. Keys in the KEP's order.
#pragma once

#include <cstdint>
#include <string>

namespace statlet::pulls {

struct ProgressEntry {
  std::string image;
  std::string layer;  // a layer's digest; empty for the image as a whole
  int64_t progress = 0;
  int64_t total = 0;
  std::string error;
  bool operator==(const ProgressEntry&) const = default;
};

// Appends the line (newline included) to *out. Text that is not UTF-8 is replaced, never
// passed through.
void AppendProgressLine(const ProgressEntry& e, std::string* out);

}  // namespace statlet::pulls
