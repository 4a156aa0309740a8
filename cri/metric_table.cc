#include "cri/metric_table.h"

#include <string_view>

namespace statlet::cri {
namespace {

struct Tables {
  std::vector<CriMetricFamily> families;
  std::vector<int> by_shared_id;  // FamilyId -> index, -1 when not served
};

const Tables& GetTables() {
  static const Tables t = [] {
    Tables t;
    t.by_shared_id.assign(kFamilyCount, -1);
    for (const MetricFamily& m : AllMetricFamilies()) {
      if (!m.cri || m.scope != MetricScope::kCgroup) continue;
      CriMetricFamily f;
      f.id = m.id;
      f.name = std::string(m.name);
      f.help = std::string(m.help);
      f.counter = m.type == MetricType::kCounter;
      f.seconds = m.unit == "seconds" && f.name.find("_seconds") != std::string::npos;
      f.label_keys.assign(std::begin(kCriSharedLabels), std::end(kCriSharedLabels));
      f.label_keys.insert(f.label_keys.end(), m.labels.begin(), m.labels.end());
      t.by_shared_id[static_cast<size_t>(m.id)] = static_cast<int>(t.families.size());
      t.families.push_back(std::move(f));
    }
    return t;
  }();
  return t;
}

}  // namespace

std::span<const CriMetricFamily> CriMetricFamilies() { return GetTables().families; }

const CriMetricFamily* CriFamily(FamilyId id) {
  const Tables& t = GetTables();
  int i = t.by_shared_id[static_cast<size_t>(id)];
  return i < 0 ? nullptr : &t.families[i];
}

std::string NanosecondsName(const std::string& seconds_name) {
  std::string s = seconds_name;
  auto pos = s.find("_seconds");
  if (pos != std::string::npos) s.replace(pos, 8, "_nanoseconds");
  return s;
}

}  // namespace statlet::cri
