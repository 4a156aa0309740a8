// ns per file for each parser, on real recorded contents.
#include <benchmark/benchmark.h>

#include "collector/cgroup_files.h"
#include "collector/parse/cgroup_parsers.h"
#include "tests/collector/fixture_tree.h"

using namespace statlet;

namespace {

const testing::RecordedCgroups& Rec() {
  static auto r = testing::LoadRecordedCgroups(STATLET_SOURCE_DIR "/tests/fixtures/cgroup-v2-debian-6.1.txt");
  return r;
}
const std::string& File(const char* dir, const char* file) {
  return Rec().at(std::string("/sys/fs/cgroup/kubepods.slice/") + dir).at(file);
}

void ApplyNamed(benchmark::State& state, const CgroupHierarchies& h, const char* name, const std::string& content) {
  const CgroupFileReader* reader = nullptr;
  for (const auto* r : BuildReadPlan(h))
    if (std::string_view(r->name) == name) reader = r;
  for (auto _ : state) {
    CgroupStats s;
    benchmark::DoNotOptimize(reader->apply(content, &s));
    benchmark::DoNotOptimize(s);
  }
}

CgroupHierarchies V2() {
  CgroupHierarchies h;
  h.mount[kUnified] = "/sys/fs/cgroup";
  h.v2_cpu = h.v2_memory = h.v2_io = h.v2_pids = true;
  return h;
}

void BM_V2MemoryStat(benchmark::State& s) { ApplyNamed(s, V2(), "memory.stat", File("pod1/ctr_high", "memory.stat")); }
void BM_V2CpuStat(benchmark::State& s) { ApplyNamed(s, V2(), "cpu.stat", File("pod1/ctr_cpu", "cpu.stat")); }
void BM_V2MemoryEvents(benchmark::State& s) {
  ApplyNamed(s, V2(), "memory.events", File("pod2/ctr_oom", "memory.events"));
}
void BM_V2IoStat(benchmark::State& s) { ApplyNamed(s, V2(), "io.stat", File("pod2/ctr_io", "io.stat")); }
void BM_Psi(benchmark::State& s) { ApplyNamed(s, V2(), "memory.pressure", File("pod1/ctr_high", "memory.pressure")); }
void BM_SingleValue(benchmark::State& s) {
  ApplyNamed(s, V2(), "memory.current", File("pod1/ctr_high", "memory.current"));
}

void BM_NetDev(benchmark::State& state) {
  const std::string text =
      "Inter-|   Receive                                                |  Transmit\n"
      " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier "
      "compressed\n"
      "    lo:     100       2    0    0    0     0          0         0      100       2    0    0    0     0       0 "
      "         0\n"
      "  eth0: 1000000     700    1    2    0     0          0         0     5000      60    3    4    0     0       0 "
      "         0\n";
  std::vector<NetInterfaceStats> out;
  for (auto _ : state) {
    out.clear();
    benchmark::DoNotOptimize(parse::ParseNetDev(text, &out));
  }
}

void BM_V1MemoryStat(benchmark::State& state) {
  std::string text;
  const char* keys[] = {
      "cache",         "rss",         "rss_huge",      "shmem",       "mapped_file", "dirty",
      "writeback",     "swap",        "pgpgin",        "pgpgout",     "pgfault",     "pgmajfault",
      "inactive_anon", "active_anon", "inactive_file", "active_file", "unevictable", "hierarchical_memory_limit"};
  for (const char* k : keys) text += std::string(k) + " 123456\n";
  for (const char* k : keys) text += std::string("total_") + k + " 123456\n";
  CgroupHierarchies h;
  h.mount[kV1Memory] = "/sys/fs/cgroup/memory";
  ApplyNamed(state, h, "memory.stat", text);
}

}  // namespace

BENCHMARK(BM_V2MemoryStat);
BENCHMARK(BM_V1MemoryStat);
BENCHMARK(BM_V2CpuStat);
BENCHMARK(BM_V2MemoryEvents);
BENCHMARK(BM_V2IoStat);
BENCHMARK(BM_Psi);
BENCHMARK(BM_SingleValue);
BENCHMARK(BM_NetDev);
BENCHMARK_MAIN();
