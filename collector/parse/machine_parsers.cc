#include "collector/parse/machine_parsers.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <set>
#include <tuple>

#include "collector/parse/cgroup_parsers.h"

namespace statlet::parse {
namespace {

std::string_view TrimSpace(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t' || s.front() == '\n' || s.front() == '\r')) {
    s.remove_prefix(1);
  }
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t' || s.back() == '\n' || s.back() == '\r')) {
    s.remove_suffix(1);
  }
  return s;
}

bool ParseU32(std::string_view s, uint32_t* out) {
  uint64_t v = 0;
  if (!ParseU64(s, &v) || v > UINT32_MAX) return false;
  *out = static_cast<uint32_t>(v);
  return true;
}

// One processor block's ids; -1 where the block does not name one.
struct BlockIds {
  int64_t physical = -1, core = -1, book = -1, drawer = -1;
};

}  // namespace

CpuinfoCounts ParseCpuinfo(std::string_view cpuinfo) {
  CpuinfoCounts out;
  std::set<std::tuple<int64_t, int64_t, int64_t, int64_t>> cores;
  std::set<std::tuple<int64_t, int64_t, int64_t>> sockets;
  std::set<std::pair<int64_t, int64_t>> books;
  std::set<int64_t> drawers;
  bool saw_core = false, saw_physical = false, saw_book = false, saw_drawer = false;
  BlockIds b;
  auto close_block = [&] {
    if (b.core >= 0) cores.emplace(b.drawer, b.book, b.physical, b.core);
    if (b.physical >= 0) sockets.emplace(b.drawer, b.book, b.physical);
    if (b.book >= 0) books.emplace(b.drawer, b.book);
    if (b.drawer >= 0) drawers.insert(b.drawer);
    b = BlockIds();
  };
  while (!cpuinfo.empty()) {
    std::string_view line = NextLine(&cpuinfo);
    if (TrimSpace(line).empty()) {
      close_block();
      continue;
    }
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    const std::string_view key = TrimSpace(line.substr(0, colon));
    const std::string_view value = line.substr(colon + 1);
    uint64_t v = 0;
    if (key == "processor") {
      close_block();  // a block starts here even without a blank line before it
      ++out.processors;
      continue;
    }
    int64_t* slot = nullptr;
    bool* saw = nullptr;
    if (key == "physical id") {
      slot = &b.physical;
      saw = &saw_physical;
    } else if (key == "core id") {
      slot = &b.core;
      saw = &saw_core;
    } else if (key == "book id") {
      slot = &b.book;
      saw = &saw_book;
    } else if (key == "drawer id") {
      slot = &b.drawer;
      saw = &saw_drawer;
    }
    if (slot == nullptr || !ParseU64(value, &v) || v > INT64_MAX) continue;
    *slot = static_cast<int64_t>(v);
    *saw = true;
  }
  close_block();
  if (saw_core) out.physical_cores = cores.size();
  if (saw_physical) out.sockets = sockets.size();
  if (saw_book) out.books = books.size();
  if (saw_drawer) out.drawers = drawers.size();
  return out;
}

std::optional<uint64_t> ParseMeminfoBytes(std::string_view meminfo, std::string_view key) {
  while (!meminfo.empty()) {
    std::string_view line = NextLine(&meminfo);
    const size_t colon = line.find(':');
    if (colon == std::string_view::npos) continue;
    std::string_view name = TrimSpace(line.substr(0, colon));
    // A node's meminfo prefixes every key with "Node <n> ".
    if (const size_t space = name.rfind(' '); space != std::string_view::npos) name = name.substr(space + 1);
    if (name != key) continue;
    std::string_view value = TrimSpace(line.substr(colon + 1));
    if (value.size() < 3 || value.substr(value.size() - 3) != " kB") return std::nullopt;
    uint64_t kb = 0;
    if (!ParseU64(value.substr(0, value.size() - 3), &kb) || kb > UINT64_MAX / 1024) return std::nullopt;
    return kb * 1024;
  }
  return std::nullopt;
}

std::optional<std::vector<uint32_t>> ParseCpuList(std::string_view s) {
  std::vector<uint32_t> out;
  s = TrimSpace(s);
  while (!s.empty()) {
    const size_t comma = s.find(',');
    std::string_view item = s.substr(0, comma);
    s = comma == std::string_view::npos ? std::string_view() : s.substr(comma + 1);
    const size_t dash = item.find('-');
    uint32_t lo = 0, hi = 0;
    if (dash == std::string_view::npos) {
      if (!ParseU32(item, &lo)) return std::nullopt;
      hi = lo;
    } else if (!ParseU32(item.substr(0, dash), &lo) || !ParseU32(item.substr(dash + 1), &hi) || hi < lo) {
      return std::nullopt;
    }
    // A list names each CPU once; a range wider than any kernel's CPU count is malformed.
    if (hi - lo >= 65536 || out.size() + (hi - lo) >= 65536) return std::nullopt;
    for (uint32_t c = lo;; ++c) {
      out.push_back(c);
      if (c == hi) break;
    }
  }
  return out;
}

std::optional<uint32_t> CountCpuMask(std::string_view s) {
  s = TrimSpace(s);
  if (s.empty()) return std::nullopt;
  uint32_t count = 0;
  for (char c : s) {
    if (c == ',') continue;
    uint32_t nibble = 0;
    if (c >= '0' && c <= '9') {
      nibble = static_cast<uint32_t>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      nibble = static_cast<uint32_t>(c - 'a' + 10);
    } else if (c >= 'A' && c <= 'F') {
      nibble = static_cast<uint32_t>(c - 'A' + 10);
    } else {
      return std::nullopt;
    }
    count += static_cast<uint32_t>(std::popcount(nibble));
  }
  return count;
}

std::optional<uint64_t> ParseCacheSizeBytes(std::string_view s) {
  s = TrimSpace(s);
  if (s.empty()) return std::nullopt;
  uint64_t scale = 1;
  switch (s.back()) {
    case 'K': scale = uint64_t{1} << 10; break;
    case 'M': scale = uint64_t{1} << 20; break;
    case 'G': scale = uint64_t{1} << 30; break;
    default: break;
  }
  if (scale != 1) s.remove_suffix(1);
  uint64_t v = 0;
  if (!ParseU64(s, &v) || v > UINT64_MAX / scale) return std::nullopt;
  return v * scale;
}

std::optional<std::vector<uint64_t>> ParseDistances(std::string_view s) {
  std::vector<uint64_t> out;
  s = TrimSpace(s);
  if (s.empty()) return std::nullopt;
  while (!s.empty()) {
    const size_t space = s.find(' ');
    uint64_t v = 0;
    if (!ParseU64(s.substr(0, space), &v)) return std::nullopt;
    out.push_back(v);
    if (space == std::string_view::npos) break;
    s = TrimSpace(s.substr(space + 1));
  }
  return out;
}

std::optional<uint64_t> ParseHugepagesDirKb(std::string_view name) {
  constexpr std::string_view kPrefix = "hugepages-", kSuffix = "kB";
  if (name.size() <= kPrefix.size() + kSuffix.size() || name.substr(0, kPrefix.size()) != kPrefix ||
      name.substr(name.size() - kSuffix.size()) != kSuffix) {
    return std::nullopt;
  }
  uint64_t kb = 0;
  if (!ParseU64(name.substr(kPrefix.size(), name.size() - kPrefix.size() - kSuffix.size()), &kb)) return std::nullopt;
  return kb;
}

std::optional<uint32_t> NumberedName(std::string_view name, std::string_view prefix) {
  if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix) return std::nullopt;
  const std::string_view digits = name.substr(prefix.size());
  if (!std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; })) return std::nullopt;
  uint32_t v = 0;
  if (!ParseU32(digits, &v)) return std::nullopt;
  return v;
}

}  // namespace statlet::parse
