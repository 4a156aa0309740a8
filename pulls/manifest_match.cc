#include "pulls/manifest_match.h"

#include <algorithm>
#include <cstdlib>
#include <map>

namespace statlet::pulls {
namespace {

// containerd stamps commits with its own wall clock and statlet reads its own: allow for the
// time between statlet noting the start and the runtime starting to fetch.
constexpr int64_t kClockSlackNs = 2'000'000'000;

size_t CountDownloading(const BlobInfo& m, const std::set<std::string>& downloading) {
  size_t n = 0;
  for (const auto& d : LabelledLayers(m)) n += downloading.count(d);
  return n;
}

bool FromRepository(const BlobInfo& m, const ImageName& image) {
  auto it = m.labels.find(kSourceLabelPrefix + image.Hostname());
  if (it == m.labels.end()) return false;
  const std::string& v = it->second;  // comma-separated repositories
  size_t start = 0;
  while (start <= v.size()) {
    size_t comma = v.find(',', start);
    if (v.compare(start, comma == std::string::npos ? std::string::npos : comma - start, image.path) == 0) return true;
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return false;
}

}  // namespace

std::vector<std::string> LabelledLayers(const BlobInfo& manifest) {
  std::map<unsigned long, std::string> by_index;
  const std::string prefix = kLayerLabelPrefix;
  for (auto it = manifest.labels.lower_bound(prefix); it != manifest.labels.end(); ++it) {
    if (it->first.compare(0, prefix.size(), prefix) != 0) break;
    const char* num = it->first.c_str() + prefix.size();
    char* end = nullptr;
    unsigned long i = std::strtoul(num, &end, 10);
    if (end == num || *end != '\0') continue;
    by_index[i] = it->second;
  }
  std::vector<std::string> out;
  out.reserve(by_index.size());
  for (auto& [i, d] : by_index) out.push_back(std::move(d));
  return out;
}

std::optional<size_t> PickManifest(const std::vector<BlobInfo>& candidates, const ImageName& image,
                                   int64_t pull_started_unix_ns, const std::set<std::string>& downloading) {
  if (!image.digest.empty()) {
    for (size_t i = 0; i < candidates.size(); ++i) {
      if (candidates[i].digest == image.digest) return i;
    }
  }
  std::optional<size_t> best;
  auto better_new = [&](size_t a, size_t b) {
    size_t da = CountDownloading(candidates[a], downloading), db = CountDownloading(candidates[b], downloading);
    if (da != db) return da > db;
    return candidates[a].created_unix_ns > candidates[b].created_unix_ns;
  };
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (candidates[i].created_unix_ns + kClockSlackNs < pull_started_unix_ns) continue;
    if (!best || better_new(i, *best)) best = i;
  }
  if (best) return best;
  size_t most = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    size_t n = CountDownloading(candidates[i], downloading);
    if (n > most) {
      most = n;
      best = i;
    }
  }
  return best;
}

std::optional<size_t> PickByConfig(const std::vector<BlobInfo>& candidates, const ImageName& image) {
  std::optional<size_t> any;
  for (size_t i = 0; i < candidates.size(); ++i) {
    if (FromRepository(candidates[i], image)) return i;
    if (!any) any = i;
  }
  return any;
}

}  // namespace statlet::pulls
