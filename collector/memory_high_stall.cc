#include "collector/memory_high_stall.h"

#include <cstdio>

#include "base/log.h"

namespace statlet {
namespace {

std::string Mib(uint64_t bytes) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fMiB", static_cast<double>(bytes) / (1024.0 * 1024.0));
  return buf;
}

std::string Fixed(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.2f", v);
  return buf;
}

}  // namespace

void MemoryHighStallDetector::Update(Snapshot* snap) {
  if (!options_.enabled) return;
  const int64_t now = snap->monotonic_ns;
  const uint64_t update = ++updates_;
  for (CgroupStats& c : snap->cgroups) {
    if (c.id.kind != CgroupKind::kContainer || (c.id.meta && c.id.meta->is_sandbox)) continue;
    const MemoryStats& m = c.memory;
    if (!m.high_bytes || *m.high_bytes == kUnlimited || !m.usage_bytes || !m.events.high) continue;
    c.memory_qos.high_stall_evaluated = true;
    auto [it, fresh] = by_path_.try_emplace(c.id.cgroup_path);
    State& st = it->second;
    const bool first = fresh || st.created_ns != c.id.created_ns;
    if (first) st = State();  // a new cgroup at the same path starts over
    st.created_ns = c.id.created_ns;
    st.seen = update;

    const uint64_t events = *m.events.high;
    if (!first && events > st.high_events) st.last_rise_mono = now;
    const uint64_t prev_events = st.high_events;
    st.high_events = events;

    const double high = static_cast<double>(*m.high_bytes);
    const bool at_high = static_cast<double>(*m.usage_bytes) >= high * (1.0 - options_.usage_margin_ratio);
    const double full10 = m.psi.full ? m.psi.full->avg10 : 0.0;
    const bool pressure = m.psi.full && full10 >= options_.psi_full_avg10_percent;
    const bool rising = st.last_rise_mono != 0 && now - st.last_rise_mono <= options_.rise_grace.count();
    const bool holds = at_high && pressure && rising;

    if (!holds) {
      if (st.stalled) {
        log::Info("memory.high stall: exit cgroup=" + c.id.cgroup_path +
                  " stalled_for=" + Fixed(static_cast<double>(now - st.onset_mono) / 1e9) +
                  "s usage=" + Mib(*m.usage_bytes) + " high=" + Mib(*m.high_bytes) +
                  " psi_full_avg10=" + Fixed(full10) + " high_events_rising=" + (rising ? "true" : "false"));
      }
      st.onset_mono = 0;
      st.onset_wall = 0;
      st.stalled = false;
      continue;
    }
    if (st.onset_mono == 0) {
      st.onset_mono = now;
      st.onset_wall = snap->timestamp_ns;
    }
    if (!st.stalled && now - st.onset_mono >= options_.dwell.count()) {
      st.stalled = true;
      log::Info("memory.high stall: enter cgroup=" + c.id.cgroup_path +
                " since=" + Fixed(static_cast<double>(now - st.onset_mono) / 1e9) + "s usage=" + Mib(*m.usage_bytes) +
                " high=" + Mib(*m.high_bytes) +
                " max=" + (m.max_bytes && *m.max_bytes != kUnlimited ? Mib(*m.max_bytes) : std::string("max")) +
                " psi_full_avg10=" + Fixed(full10) + " high_events=" + std::to_string(events) + " (+" +
                std::to_string(events - prev_events) + ")");
    }
    c.memory_qos.high_stalled = st.stalled;
    c.memory_qos.high_stalled_since_ns = st.stalled ? st.onset_wall : 0;
  }
  for (auto it = by_path_.begin(); it != by_path_.end();) {
    if (it->second.seen != update) {
      if (it->second.stalled) log::Info("memory.high stall: exit cgroup=" + it->first + " (cgroup gone)");
      it = by_path_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace statlet
