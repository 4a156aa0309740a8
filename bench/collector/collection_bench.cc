// Whole-process benchmark of one full collection over N real cgroups, each holding a real
// process, against the floor (bench/support/read_floor.h): exactly the files the collector
// reads, under its fd budget, parsing nothing; no process fd scan, as the collector's
// default. Each side runs in a fresh process (this binary re-executed) so that RSS and fd
// budgets are its own.
//
//   collection_bench [--cgroups N] [--rounds R]
//
// Prints one line per side and the ratios. Exits 0 when both sides measured (the figures are
// for the reader, not a test), non-zero when a side failed or printed no figures.
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench/support/bench_tree.h"
#include "bench/support/read_floor.h"
#include "collector/cgroup_discovery.h"
#include "collector/collector.h"
#include "tests/support/live_cgroup.h"

using namespace statlet;

namespace {

int64_t Now(clockid_t c) {
  struct timespec ts;
  clock_gettime(c, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

long RssKiB(const char* field) {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind(field, 0) == 0) return std::atol(line.c_str() + std::strlen(field));
  }
  return -1;
}

double Median(std::vector<double> v) { return bench::Percentile(std::move(v), 0.5); }

// ---------------------------------------------------------------- the measured sides
struct Result {
  double cpu_us_median = 0, wall_us_median = 0;
  long rss_kib = 0;
  size_t fds = 0, files = 0, cgroups = 0;
  double poll_us = 0, walk_us = 0;
};

void Print(const char* side, const Result& r) {
  std::printf("%s cgroups=%zu files=%zu fds=%zu cpu_us=%.1f wall_us=%.1f rss_kib=%ld poll_us=%.2f walk_us=%.1f\n",
              side, r.cgroups, r.files, r.fds, r.cpu_us_median, r.wall_us_median, r.rss_kib, r.poll_us, r.walk_us);
}

int MeasureStatlet(const std::string& root, int rounds) {
  CollectorOptions o;
  o.subtrees = {root};
  auto c = Collector::Create(o);
  if (!c.ok()) { std::fprintf(stderr, "%s\n", c.status().ToString().c_str()); return 1; }
  auto warm = (*c)->Collect();  // opens the files
  std::vector<double> cpu, wall;
  Result r;
  for (int i = 0; i < rounds; ++i) {
    int64_t c0 = Now(CLOCK_THREAD_CPUTIME_ID), w0 = Now(CLOCK_MONOTONIC);
    auto s = (*c)->Collect();
    cpu.push_back((Now(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e3);
    wall.push_back((Now(CLOCK_MONOTONIC) - w0) / 1e3);
    r.cgroups = s->cgroups.size();
    r.fds = s->collection.fds_kept;
  }
  r.cpu_us_median = Median(cpu);
  r.wall_us_median = Median(wall);
  r.rss_kib = RssKiB("VmHWM:");
  // Re-discovery of the unchanged tree (what every collection pays) vs a full walk.
  CgroupDiscovery d(testing::HostHierarchies(), {root});
  (void)d.Init();
  int64_t p0 = Now(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < 1000; ++i) (void)d.Poll();
  r.poll_us = (Now(CLOCK_THREAD_CPUTIME_ID) - p0) / 1e3 / 1000;
  int64_t w0 = Now(CLOCK_THREAD_CPUTIME_ID);
  CgroupDiscovery full(testing::HostHierarchies(), {root});
  (void)full.Init();
  r.walk_us = (Now(CLOCK_THREAD_CPUTIME_ID) - w0) / 1e3;
  Print("statlet", r);
  return 0;
}

int MeasureFloor(const std::string& root, int rounds) {
  bench::ReadFloor floor(root);
  const bench::FloorResult f = bench::MeasureFloor(&floor, rounds, false, std::chrono::nanoseconds(0));
  Result r;
  r.cgroups = floor.cgroups();
  r.files = floor.files();
  r.fds = floor.kept_fds();
  r.cpu_us_median = f.cpu_p50_ms * 1e3;
  r.wall_us_median = f.p50_ms * 1e3;
  r.rss_kib = RssKiB("VmHWM:");
  Print("floor", r);
  return f.failed_reads == 0 ? 0 : 1;
}

// ---------------------------------------------------------------- setup
// Runs one side in a fresh process; its output, and whether it exited 0.
std::string RunSide(const char* self, const char* mode, const std::string& root, int rounds, bool* ok) {
  std::string cmd = std::string(self) + " " + mode + " " + root + " " + std::to_string(rounds);
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char line[512];
  while (p && std::fgets(line, sizeof line, p)) out += line;
  const int status = p ? ::pclose(p) : -1;
  *ok = status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
  if (!*ok) std::fprintf(stderr, "%s side failed (wait status %d)\n", mode, status);
  return out;
}

double Field(const std::string& line, const char* key) {
  size_t p = line.find(std::string(" ") + key + "=");
  return p == std::string::npos ? -1 : std::atof(line.c_str() + p + std::strlen(key) + 2);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 4 && std::strcmp(argv[1], "--statlet") == 0) return MeasureStatlet(argv[2], std::atoi(argv[3]));
  if (argc == 4 && std::strcmp(argv[1], "--floor") == 0) return MeasureFloor(argv[2], std::atoi(argv[3]));
  int n = 1000, rounds = 15;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--cgroups")) n = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
  }
  std::string floor, stl;
  bool floor_ok = false, statlet_ok = false;
  {
    bench::BenchTree tree("/statlet-bench-" + std::to_string(getpid()), static_cast<size_t>(n), bench::BenchTree::kFlat);
    if (!tree.ok()) {
      std::fprintf(stderr, "cannot create cgroups (root needed): %s\n", tree.error().c_str());
      return 1;
    }
    floor = RunSide(argv[0], "--floor", tree.root(), rounds, &floor_ok);
    stl = RunSide(argv[0], "--statlet", tree.root(), rounds, &statlet_ok);
  }
  std::fputs(floor.c_str(), stdout);
  std::fputs(stl.c_str(), stdout);
  double fc = Field(floor, "cpu_us"), sc = Field(stl, "cpu_us");
  double fw = Field(floor, "wall_us"), sw = Field(stl, "wall_us");
  double cg = Field(stl, "cgroups");
  if (!floor_ok || !statlet_ok || fc <= 0 || sc <= 0 || cg <= 0) {
    std::fprintf(stderr, "no figures: floor %s, statlet %s\n", floor_ok ? "ok" : "failed", statlet_ok ? "ok" : "failed");
    return 1;
  }
  std::printf("per_cgroup_cpu_us statlet=%.2f floor=%.2f ratio_cpu=%.3f ratio_wall=%.3f rss_mib=%.1f "
              "poll_share_of_collection=%.4f\n",
              sc / cg, fc / cg, sc / fc, sw / fw, Field(stl, "rss_kib") / 1024.0, Field(stl, "poll_us") / sc);
  return 0;
}
