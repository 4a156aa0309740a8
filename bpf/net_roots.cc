#include "bpf/net_roots.h"

#include <algorithm>
#include <string_view>

namespace statlet::bpf {
namespace {

std::string Normalized(std::string_view path) {
  std::string out;
  size_t i = 0;
  while (i < path.size()) {
    while (i < path.size() && path[i] == '/') ++i;
    const size_t end = std::min(path.find('/', i), path.size());
    if (end > i) {
      if (!out.empty()) out += '/';
      out.append(path.substr(i, end - i));
    }
    i = end;
  }
  return out;
}

// Whether `inner` is `outer` or one of its descendants (both normalized).
bool Under(const std::string& inner, const std::string& outer) {
  if (outer.empty()) return true;
  return inner.size() >= outer.size() && inner.compare(0, outer.size(), outer) == 0 &&
         (inner.size() == outer.size() || inner[outer.size()] == '/');
}

}  // namespace

std::vector<std::string> OutermostCgroupRoots(const std::vector<std::string>& roots) {
  std::vector<std::string> normalized;
  normalized.reserve(roots.size());
  for (const std::string& r : roots) normalized.push_back(Normalized(r));
  if (normalized.empty()) return {""};
  std::vector<std::string> out;
  for (size_t i = 0; i < normalized.size(); ++i) {
    bool covered = false;
    for (size_t j = 0; j < normalized.size() && !covered; ++j) {
      if (i == j || !Under(normalized[i], normalized[j])) continue;
      // Of two equal roots the first stays.
      covered = normalized[i] != normalized[j] || j < i;
    }
    if (!covered) out.push_back(normalized[i]);
  }
  return out;
}

}  // namespace statlet::bpf
