#include "cmd/top_model.h"

#include <algorithm>
#include <cctype>
#include <functional>
#include <unordered_map>

namespace statlet::top {
namespace {

constexpr const char* kColumnNames[kColumnCount] = {"name",      "cpu", "user", "system",  "memory",    "limit",
                                                    "throttled", "rx",  "tx",   "cpu-psi", "memory-psi"};

// The increase of a counter per second of the window; absent when either end is unknown or
// the counter went backwards.
std::optional<double> PerSecond(const std::optional<uint64_t>& before, const std::optional<uint64_t>& after,
                                double seconds) {
  if (!before || !after || *after < *before) return std::nullopt;
  return static_cast<double>(*after - *before) / seconds;
}

std::optional<double> Percent(std::optional<double> per_second_ns) {
  if (!per_second_ns) return std::nullopt;
  return *per_second_ns / 1e9 * 100.0;
}

std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

const char* ColumnName(Column c) { return kColumnNames[static_cast<int>(c)]; }

char MemoryZoneMark(std::string_view zone) {
  if (zone == "below_request") return '<';
  if (zone == "throttling") return '^';
  if (zone == "at_limit") return '!';
  return ' ';
}

std::string DescribeMemoryQos(std::string_view rules, std::string_view policy, std::string_view factor,
                              std::string_view kubelet_version) {
  if (rules.empty()) return "";
  std::string s = "memqos ";
  if (rules == "unknown") return s + "rules unknown";
  s += rules;
  if (rules != "off") {
    if (!policy.empty()) s += " " + std::string(policy);
    if (!factor.empty()) s += " factor " + std::string(factor);
  }
  if (!kubelet_version.empty()) s += ", kubelet " + std::string(kubelet_version);
  return s;
}

const char* ShowName(Show s) {
  switch (s) {
    case Show::kPods: return "pods";
    case Show::kHost: return "host";
    default: return "all";
  }
}

std::optional<Show> ShowByName(std::string_view name) {
  for (Show s : {Show::kAll, Show::kPods, Show::kHost}) {
    if (name == ShowName(s)) return s;
  }
  return std::nullopt;
}

std::optional<Column> ColumnByName(std::string_view name) {
  for (int i = 0; i < kColumnCount; ++i) {
    if (name == kColumnNames[i]) return static_cast<Column>(i);
  }
  if (name == "mem") return Column::kMemory;
  if (name == "throttling") return Column::kThrottled;
  return std::nullopt;
}

std::optional<double> Row::Value(Column c) const {
  auto bytes = [](const std::optional<uint64_t>& v) -> std::optional<double> {
    if (!v) return std::nullopt;
    return static_cast<double>(*v);
  };
  switch (c) {
    case Column::kName: return std::nullopt;
    case Column::kCpu: return cpu_percent;
    case Column::kUser: return user_percent;
    case Column::kSystem: return system_percent;
    case Column::kMemory: return bytes(working_set_bytes);
    case Column::kLimit: return bytes(memory_limit_bytes);
    case Column::kThrottled:
      // Throttled periods first; the throttled time tells apart rows throttled as often.
      if (!throttled_percent) return std::nullopt;
      return *throttled_percent * 1e6 + throttled_seconds_per_second.value_or(0);
    case Column::kRx: return rx_bytes_per_second;
    case Column::kTx: return tx_bytes_per_second;
    case Column::kCpuPsi: return cpu_psi_some_avg10;
    case Column::kMemoryPsi: return memory_psi_some_avg10;
  }
  return std::nullopt;
}

std::vector<Row> BuildRows(const Sample* previous, const Sample& current) {
  std::unordered_map<std::string_view, const Entry*> before;
  if (previous != nullptr) {
    for (const Entry& e : previous->entries) before.emplace(e.key, &e);
  }
  std::vector<Row> rows;
  rows.reserve(current.entries.size());
  for (const Entry& e : current.entries) {
    Row& r = rows.emplace_back();
    r.key = e.key;
    r.parent = e.parent;
    r.name = e.name;
    r.kind = e.kind;
    r.working_set_bytes = e.working_set_bytes;
    r.memory_limit_bytes = e.memory_limit_bytes;
    r.cpu_psi_some_avg10 = e.cpu_psi_some_avg10;
    r.memory_psi_some_avg10 = e.memory_psi_some_avg10;
    r.memory_zone = e.memory_zone;
    auto it = before.find(e.key);
    if (it == before.end() || e.timestamp_ns <= it->second->timestamp_ns) continue;
    const Entry& p = *it->second;
    const double seconds = static_cast<double>(e.timestamp_ns - p.timestamp_ns) / 1e9;
    r.cpu_percent = Percent(PerSecond(p.cpu_ns, e.cpu_ns, seconds));
    r.user_percent = Percent(PerSecond(p.user_ns, e.user_ns, seconds));
    r.system_percent = Percent(PerSecond(p.system_ns, e.system_ns, seconds));
    if (auto t = PerSecond(p.throttled_ns, e.throttled_ns, seconds)) r.throttled_seconds_per_second = *t / 1e9;
    if (p.periods && e.periods && p.throttled_periods && e.throttled_periods && *e.periods > *p.periods &&
        *e.throttled_periods >= *p.throttled_periods) {
      r.throttled_percent = 100.0 * static_cast<double>(*e.throttled_periods - *p.throttled_periods) /
                            static_cast<double>(*e.periods - *p.periods);
    } else if (p.periods && e.periods && *e.periods == *p.periods) {
      // No period elapsed (no quota, or an idle cgroup): nothing could be throttled.
      r.throttled_percent = 0;
    }
    r.rx_bytes_per_second = PerSecond(p.rx_bytes, e.rx_bytes, seconds);
    r.tx_bytes_per_second = PerSecond(p.tx_bytes, e.tx_bytes, seconds);
  }
  return rows;
}

std::vector<Row> Arrange(std::vector<Row> rows, const View& view) {
  const size_t n = rows.size();
  std::unordered_map<std::string_view, size_t> index;
  for (size_t i = 0; i < n; ++i) index.emplace(rows[i].key, i);
  std::vector<int64_t> parent(n, -1);
  std::vector<std::vector<size_t>> children(n);
  std::vector<size_t> roots;
  for (size_t i = 0; i < n; ++i) {
    auto it = rows[i].parent.empty() ? index.end() : index.find(rows[i].parent);
    if (it != index.end() && it->second != i) {
      parent[i] = static_cast<int64_t>(it->second);
      children[it->second].push_back(i);
    } else {
      roots.push_back(i);
    }
  }

  // Which rows stay: in the section shown, and matched, under a match, or above one.
  std::vector<bool> keep(n, true);
  const char* shown_section = view.show == Show::kPods   ? kKubernetesSection
                              : view.show == Show::kHost ? kHostSection
                                                         : nullptr;
  if (shown_section != nullptr && index.count(shown_section) != 0) {
    const size_t section = index[shown_section];
    for (size_t i = 0; i < n; ++i) {
      int64_t a = static_cast<int64_t>(i);
      for (size_t steps = 0; parent[static_cast<size_t>(a)] >= 0 && steps <= n; ++steps)
        a = parent[static_cast<size_t>(a)];
      keep[i] = static_cast<size_t>(a) == section;
    }
  }
  if (!view.filter.empty()) {
    const std::string needle = Lower(view.filter);
    std::vector<bool> match(n, false);
    for (size_t i = 0; i < n; ++i) {
      match[i] =
          Lower(rows[i].name).find(needle) != std::string::npos || Lower(rows[i].key).find(needle) != std::string::npos;
    }
    const std::vector<bool> in_view = keep;
    std::fill(keep.begin(), keep.end(), false);
    for (size_t i = 0; i < n; ++i) {
      match[i] = match[i] && in_view[i];
    }
    for (size_t i = 0; i < n; ++i) {
      if (!match[i]) continue;
      // The step limit ends the walk on a malformed sample whose parents form a cycle.
      size_t steps = 0;
      for (int64_t a = static_cast<int64_t>(i); a >= 0 && steps <= n; a = parent[static_cast<size_t>(a)], ++steps) {
        keep[static_cast<size_t>(a)] = true;
      }
    }
    // Everything under a match stays; `below` marks rows already walked, so a malformed
    // sample whose parents form a cycle still ends.
    std::vector<bool> below(n, false);
    std::vector<size_t> stack;
    for (size_t i = 0; i < n; ++i) {
      if (match[i]) stack.push_back(i);
    }
    while (!stack.empty()) {
      size_t i = stack.back();
      stack.pop_back();
      if (below[i]) continue;
      below[i] = true;
      keep[i] = true;
      for (size_t c : children[i]) stack.push_back(c);
    }
  }

  auto less = [&](size_t a, size_t b) {
    const Row& x = rows[a];
    const Row& y = rows[b];
    if (x.kind == EntryKind::kSection || y.kind == EntryKind::kSection) {
      if (x.kind != y.kind) return x.kind == EntryKind::kSection;
      return a < b;  // sections in the order the source gave them
    }
    if (view.sort != Column::kName) {
      std::optional<double> vx = x.Value(view.sort), vy = y.Value(view.sort);
      if (vx.has_value() != vy.has_value()) return vx.has_value();  // unknown last
      if (vx && *vx != *vy) return view.reverse ? *vx < *vy : *vx > *vy;
      if (x.name != y.name) return x.name < y.name;
    } else if (x.name != y.name) {
      return view.reverse ? x.name > y.name : x.name < y.name;
    }
    return x.key < y.key;
  };

  std::vector<Row> out;
  out.reserve(n);
  std::vector<bool> placed(n, false);
  std::function<void(std::vector<size_t>, int)> place = [&](std::vector<size_t> level, int depth) {
    std::sort(level.begin(), level.end(), less);
    for (size_t i : level) {
      if (!keep[i] || placed[i]) continue;
      placed[i] = true;
      out.push_back(rows[i]);
      out.back().depth = depth;
      place(children[i], depth + 1);
    }
  };
  place(roots, 0);
  // Rows only reachable through a cycle of parents (a malformed sample) still show.
  std::vector<size_t> rest;
  for (size_t i = 0; i < n; ++i) {
    if (keep[i] && !placed[i]) rest.push_back(i);
  }
  if (!rest.empty()) place(rest, 0);
  return out;
}

}  // namespace statlet::top
