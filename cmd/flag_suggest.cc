#include "cmd/flag_suggest.h"

#include <algorithm>
#include <cctype>

namespace statlet {
namespace {

std::string Squeeze(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '-' && c != '.' && c != '_') out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  }
  return out;
}

// Optimal string alignment distance: Levenshtein plus the swap of two neighbours.
size_t Distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

std::string NearestName(std::string_view name, const std::vector<std::string>& candidates) {
  const std::string want = Squeeze(name);
  for (const std::string& c : candidates) {
    if (Squeeze(c) == want) return c;
  }
  const size_t limit = std::clamp<size_t>(name.size() / 3, 1, 3);
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& c : candidates) {
    const size_t d = Distance(name, c);
    if (d < best_distance) {
      best = c;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace statlet
