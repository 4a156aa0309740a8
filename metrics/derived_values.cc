#include "metrics/derived_values.h"

#include <cstdio>

namespace statlet::metrics {

std::optional<uint64_t> MemoryAvailableBytes(const MemoryStats& mem) {
  if (!mem.max_bytes || *mem.max_bytes == kUnlimited || !mem.working_set_bytes) return std::nullopt;
  const uint64_t ws = *mem.working_set_bytes;
  return *mem.max_bytes > ws ? *mem.max_bytes - ws : 0;
}

std::optional<uint64_t> MemoryLimitBytes(const MemoryStats& mem) {
  if (!mem.max_bytes || *mem.max_bytes == kUnlimited) return std::nullopt;
  return *mem.max_bytes;
}

std::optional<double> CpuLimitCores(const CpuStats& cpu) {
  if (!cpu.quota_us || *cpu.quota_us == kUnlimited || !cpu.period_us || *cpu.period_us == 0) return std::nullopt;
  return static_cast<double>(*cpu.quota_us) / static_cast<double>(*cpu.period_us);
}

std::optional<double> CpuUsageCores(const CpuStats& cpu) {
  if (!cpu.usage_nano_cores) return std::nullopt;
  return static_cast<double>(*cpu.usage_nano_cores) / 1e9;
}

std::optional<int64_t> StartTimeNs(const CgroupStats& c) {
  int64_t start = 0;
  if (c.id.meta && c.id.kind == CgroupKind::kContainer) {
    start = c.id.meta->started_at_ns > 0 ? c.id.meta->started_at_ns : c.id.meta->created_at_ns;
  }
  if (start <= 0) start = c.id.created_ns.value_or(0);
  if (start <= 0) return std::nullopt;
  return start;
}

std::optional<PagingFaults> PagingFaultsOf(const MemoryStats& mem) {
  if (!mem.pgfault || !mem.pgmajfault) return std::nullopt;
  PagingFaults f;
  f.major = *mem.pgmajfault;
  f.minor = *mem.pgfault > f.major ? *mem.pgfault - f.major : 0;
  return f;
}

std::string ThrottlingFactorLabel(const std::optional<double>& factor) {
  if (!factor) return "none";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", *factor);
  return buf;
}

}  // namespace statlet::metrics
