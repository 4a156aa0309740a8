// Whole-process benchmark of one full collection over N real cgroups, each holding a real
// process, against the floor (bench/support/read_floor.h): exactly the files the collector
// reads, under its fd budget, parsing nothing; no process fd scan, as the collector's
// default. statlet runs twice: with its default reading threads ("statlet") and with one
// ("statlet-1"). Each side runs in a fresh process (this binary re-executed) so that RSS and
// fd budgets are its own; the sides alternate over R rounds (the first side rotates each
// round), each round's process timing P collections after a warm-up one; CPU is the
// process's (every reading thread).
//
//   collection_bench [--cgroups N] [--rounds R] [--passes P]
//
// Prints each round's lines, then per side the median of the rounds' medians with their
// [min-max], and the ratios. Exits non-zero when a side failed or printed no figures, or when
// statlet's collection read fewer files or saw fewer cgroups than the floor (not the same work).
#include <sys/wait.h>
#include <time.h>
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
  std::printf("%s cgroups=%zu files=%zu fds=%zu cpu_us=%.1f wall_us=%.1f rss_kib=%ld poll_us=%.2f walk_us=%.1f\n", side,
              r.cgroups, r.files, r.fds, r.cpu_us_median, r.wall_us_median, r.rss_kib, r.poll_us, r.walk_us);
}

int MeasureStatlet(const std::string& root, int passes, size_t read_threads) {
  CollectorOptions o;
  o.subtrees = {root};
  o.read_threads = read_threads;
  auto c = Collector::Create(o);
  if (!c.ok()) {
    std::fprintf(stderr, "%s\n", c.status().ToString().c_str());
    return 1;
  }
  auto warm = (*c)->Collect();  // opens the files
  std::vector<double> cpu, wall;
  Result r;
  for (int i = 0; i < passes; ++i) {
    // The process's CPU: the collector's reading threads included (this side's process runs
    // nothing else).
    int64_t c0 = Now(CLOCK_PROCESS_CPUTIME_ID), w0 = Now(CLOCK_MONOTONIC);
    auto s = (*c)->Collect();
    cpu.push_back((Now(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1e3);
    wall.push_back((Now(CLOCK_MONOTONIC) - w0) / 1e3);
    if (!s.ok()) {
      std::fprintf(stderr, "%s\n", s.status().ToString().c_str());
      return 1;
    }
    r.cgroups = s->cgroups.size();
    r.fds = s->collection.fds_kept;
    r.files = s->collection.files_read;
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
  Print(read_threads == 1 ? "statlet-1" : "statlet", r);
  return 0;
}

int MeasureFloor(const std::string& root, int passes) {
  bench::ReadFloor floor(root);
  const bench::FloorResult f = bench::MeasureFloor(&floor, passes, false, std::chrono::nanoseconds(0));
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
std::string RunSide(const char* self, const char* mode, const std::string& root, int passes, bool* ok) {
  std::string cmd = std::string(self) + " " + mode + " " + root + " " + std::to_string(passes);
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
  if (argc == 4 && std::strcmp(argv[1], "--statlet") == 0) {
    return MeasureStatlet(argv[2], std::atoi(argv[3]), CollectorOptions().read_threads);
  }
  if (argc == 4 && std::strcmp(argv[1], "--statlet-1") == 0) return MeasureStatlet(argv[2], std::atoi(argv[3]), 1);
  if (argc == 4 && std::strcmp(argv[1], "--floor") == 0) return MeasureFloor(argv[2], std::atoi(argv[3]));
  int n = 1000, rounds = 5, passes = 5;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (!std::strcmp(argv[i], "--cgroups")) n = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::atoi(argv[i + 1]);
    else if (!std::strcmp(argv[i], "--passes")) passes = std::atoi(argv[i + 1]);
  }
  if (n <= 0 || rounds <= 0 || passes <= 0) {
    std::fprintf(stderr, "usage: collection_bench [--cgroups N] [--rounds R] [--passes P] (all > 0)\n");
    return 2;
  }
  // Per side: each round's figures.
  struct Side {
    const char* mode;
    const char* name;
    std::vector<double> cpu, wall, rss, files, cgroups, poll, walk;
  };
  Side sides[3] = {{"--floor", "floor", {}, {}, {}, {}, {}, {}, {}},
                   {"--statlet", "statlet", {}, {}, {}, {}, {}, {}, {}},
                   {"--statlet-1", "statlet-1", {}, {}, {}, {}, {}, {}, {}}};
  {
    bench::BenchTree tree("/statlet-bench-" + std::to_string(getpid()), static_cast<size_t>(n),
                          bench::BenchTree::kFlat);
    if (!tree.ok()) {
      std::fprintf(stderr, "cannot create cgroups (root needed): %s\n", tree.error().c_str());
      return 1;
    }
    for (int round = 0; round < rounds; ++round) {
      for (int k = 0; k < 3; ++k) {
        Side& side = sides[(round + k) % 3];
        bool ok = false;
        const std::string out = RunSide(argv[0], side.mode, tree.root(), passes, &ok);
        std::printf("round %d %s", round + 1, out.c_str());
        const double cpu = Field(out, "cpu_us");
        if (!ok || cpu <= 0) {
          std::fprintf(stderr, "no figures from the %s side in round %d\n", side.name, round + 1);
          return 1;
        }
        side.cpu.push_back(cpu);
        side.wall.push_back(Field(out, "wall_us"));
        side.rss.push_back(Field(out, "rss_kib") / 1024.0);
        side.files.push_back(Field(out, "files"));
        side.cgroups.push_back(Field(out, "cgroups"));
        side.poll.push_back(Field(out, "poll_us"));
        side.walk.push_back(Field(out, "walk_us"));
      }
    }
  }
  std::printf(
      "\n%d cgroups, %d rounds (sides alternating), %d collections timed per round: medians [min-max] over rounds\n", n,
      rounds, passes);
  for (const Side& side : sides) {
    std::printf("%-8s cpu_us %s  wall_us %s  rss_mib %s  files %.0f  cgroups %.0f\n", side.name,
                bench::MedianRange(side.cpu, 1).c_str(), bench::MedianRange(side.wall, 1).c_str(),
                bench::MedianRange(side.rss, 1).c_str(), Median(side.files), Median(side.cgroups));
  }
  const Side &floor = sides[0], &stl = sides[1], &one = sides[2];
  const double cg = Median(stl.cgroups);
  std::printf(
      "per_cgroup_cpu_us statlet=%.2f floor=%.2f ratio_cpu=%.3f ratio_wall=%.3f poll_share_of_collection=%.4f "
      "full_walk_us=%.1f\n",
      Median(stl.cpu) / cg, Median(floor.cpu) / cg, Median(stl.cpu) / Median(floor.cpu),
      Median(stl.wall) / Median(floor.wall), Median(stl.poll) / Median(stl.cpu), Median(stl.walk));
  std::printf(
      "one reading thread: ratio_cpu=%.3f ratio_wall=%.3f (statlet's %zu threads against one: cpu %.3f, wall %.3f)\n",
      Median(one.cpu) / Median(floor.cpu), Median(one.wall) / Median(floor.wall), CollectorOptions().read_threads,
      Median(stl.cpu) / Median(one.cpu), Median(stl.wall) / Median(one.wall));
  // The same work: every statlet round read at least the floor's files over its cgroups.
  const double floor_files = *std::max_element(floor.files.begin(), floor.files.end());
  const double stl_files = std::min(*std::min_element(stl.files.begin(), stl.files.end()),
                                    *std::min_element(one.files.begin(), one.files.end()));
  const double floor_cgroups = *std::max_element(floor.cgroups.begin(), floor.cgroups.end());
  const double stl_cgroups = std::min(*std::min_element(stl.cgroups.begin(), stl.cgroups.end()),
                                      *std::min_element(one.cgroups.begin(), one.cgroups.end()));
  std::printf("files per collection: floor %.0f, statlet %.0f (fewest of its rounds, either way)\n", floor_files,
              stl_files);
  if (stl_files < floor_files || stl_cgroups < floor_cgroups) {
    std::fprintf(stderr, "not the same work: statlet read %.0f files over %.0f cgroups, the floor %.0f over %.0f\n",
                 stl_files, stl_cgroups, floor_files, floor_cgroups);
    return 1;
  }
  return 0;
}
