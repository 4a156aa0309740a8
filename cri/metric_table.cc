#include "cri/metric_table.h"

#include <algorithm>
#include <string_view>

namespace statlet::cri {
namespace {

bool IsPodNetwork(FamilyId id) {
  switch (id) {
    case FamilyId::kContainerNetworkReceiveBytesTotal:
    case FamilyId::kContainerNetworkReceivePacketsTotal:
    case FamilyId::kContainerNetworkReceiveErrorsTotal:
    case FamilyId::kContainerNetworkReceivePacketsDroppedTotal:
    case FamilyId::kContainerNetworkTransmitBytesTotal:
    case FamilyId::kContainerNetworkTransmitPacketsTotal:
    case FamilyId::kContainerNetworkTransmitErrorsTotal:
    case FamilyId::kContainerNetworkTransmitPacketsDroppedTotal: return true;
    default: return false;
  }
}

void SetLabels(const std::vector<std::string>& own, CriMetricFamily* f) {
  std::vector<std::string> source(std::begin(kCgroupLabels), std::end(kCgroupLabels));
  source.insert(source.end(), own.begin(), own.end());
  f->label_keys = source;
  std::sort(f->label_keys.begin(), f->label_keys.end());
  for (const auto& key : f->label_keys) {
    f->label_source.push_back(static_cast<int>(std::find(source.begin(), source.end(), key) - source.begin()));
  }
}

struct Tables {
  std::vector<CriMetricFamily> families;
  std::vector<int> by_shared_id;  // FamilyId -> index, -1 when not served
};

const Tables& GetTables() {
  static const Tables t = [] {
    static_assert(std::size(kCgroupLabels) == kSharedLabelCount);
    Tables t;
    t.by_shared_id.assign(kFamilyCount, -1);
    for (const MetricFamily& m : AllMetricFamilies()) {
      if (!m.cadvisor || m.scope != MetricScope::kCgroup) continue;
      CriMetricFamily f;
      f.name = std::string(m.name);
      f.help = std::string(m.help);
      f.counter = m.type == MetricType::kCounter;
      f.seconds = m.unit == "seconds" && f.name.find("_seconds") != std::string::npos;
      f.pod_level = IsPodNetwork(m.id);
      SetLabels(std::vector<std::string>(m.labels.begin(), m.labels.end()), &f);
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
