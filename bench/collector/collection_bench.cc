// Whole-process benchmark of one full collection over N real cgroups, each holding a real
// process, against the floor: a minimal reader that preads exactly the same files on
// kept fds and parses nothing. Each side runs in a fresh process (this binary re-executed)
// so that RSS and fd budgets are its own.
//
//   collection_bench [--cgroups N] [--rounds R]
//
// Prints one line per side and the ratios; exits 0 (figures are for the reader, not a test).
#include <fcntl.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "collector/cgroup_discovery.h"
#include "collector/cgroup_files.h"
#include "collector/cgroup_hierarchies.h"
#include "collector/collector.h"
#include "collector/kept_file.h"

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

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

const CgroupHierarchies& Hier() {
  static CgroupHierarchies h = *DetectHierarchies("/sys/fs/cgroup", "/proc");
  return h;
}

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
  CgroupDiscovery d(Hier(), {root});
  (void)d.Init();
  int64_t p0 = Now(CLOCK_THREAD_CPUTIME_ID);
  for (int i = 0; i < 1000; ++i) (void)d.Poll();
  r.poll_us = (Now(CLOCK_THREAD_CPUTIME_ID) - p0) / 1e3 / 1000;
  int64_t w0 = Now(CLOCK_THREAD_CPUTIME_ID);
  CgroupDiscovery full(Hier(), {root});
  (void)full.Init();
  r.walk_us = (Now(CLOCK_THREAD_CPUTIME_ID) - w0) / 1e3;
  Print("statlet", r);
  return 0;
}

int MeasureFloor(const std::string& root, int rounds) {
  // Exactly the files statlet reads: its read plan plus the process lists, for every
  // cgroup directory under root, in every hierarchy that has the directory.
  std::vector<std::pair<Hierarchy, std::string>> files;
  for (const auto* r : BuildReadPlan(Hier())) files.push_back({r->hierarchy, r->name});
  Hierarchy ph = Hier().has(kUnified) ? kUnified : Hier().cpu();
  files.push_back({ph, "cgroup.procs"});
  files.push_back({ph, ph == kUnified ? "cgroup.threads" : "tasks"});
  CgroupDiscovery d(Hier(), {root});
  (void)d.Init();
  FdBudget budget(FdBudget::FromRlimit(512));
  struct F { int fd; std::string path; };
  std::vector<F> open_files;
  for (const auto& [path, mask] : d.paths()) {
    for (const auto& [h, name] : files) {
      if (!(mask & (1u << h))) continue;
      std::string p = Hier().mount[h] + path + "/" + name;
      int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0) continue;
      if (budget.TryAcquire()) open_files.push_back({fd, ""});
      else { ::close(fd); open_files.push_back({-1, p}); }  // the same policy as statlet
    }
  }
  std::vector<char> buf(65536);
  std::vector<double> cpu, wall;
  for (int i = 0; i < rounds + 1; ++i) {
    int64_t c0 = Now(CLOCK_THREAD_CPUTIME_ID), w0 = Now(CLOCK_MONOTONIC);
    for (auto& f : open_files) {
      if (f.fd >= 0) {
        if (::pread(f.fd, buf.data(), buf.size(), 0) < 0) std::abort();
      } else {
        int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) { (void)!::pread(fd, buf.data(), buf.size(), 0); ::close(fd); }
      }
    }
    if (i == 0) continue;  // warm-up
    cpu.push_back((Now(CLOCK_THREAD_CPUTIME_ID) - c0) / 1e3);
    wall.push_back((Now(CLOCK_MONOTONIC) - w0) / 1e3);
  }
  Result r;
  r.cgroups = d.paths().size();
  r.files = open_files.size();
  r.fds = budget.used();
  r.cpu_us_median = Median(cpu);
  r.wall_us_median = Median(wall);
  r.rss_kib = RssKiB("VmHWM:");
  Print("floor", r);
  return 0;
}

// ---------------------------------------------------------------- setup
struct Setup {
  std::string root;
  std::vector<pid_t> pids;
  std::vector<std::string> dirs;  // to remove, deepest first at the end
};

void WriteStr(const std::string& path, const std::string& v) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd >= 0) { (void)!::write(fd, v.data(), v.size()); ::close(fd); }
}

void Teardown(Setup& s) {
  for (pid_t p : s.pids) ::kill(p, SIGKILL);
  for (pid_t p : s.pids) ::waitpid(p, nullptr, 0);
  for (auto it = s.dirs.rbegin(); it != s.dirs.rend(); ++it) {
    for (int i = 0; i < 500 && ::rmdir(it->c_str()) != 0 && errno == EBUSY; ++i) ::usleep(2000);
  }
}

std::string RunSide(const char* self, const char* mode, const std::string& root, int rounds) {
  std::string cmd = std::string(self) + " " + mode + " " + root + " " + std::to_string(rounds);
  FILE* p = ::popen(cmd.c_str(), "r");
  std::string out;
  char line[512];
  while (p && std::fgets(line, sizeof line, p)) out += line;
  if (p) ::pclose(p);
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
  Setup s;
  s.root = "/statlet-bench-" + std::to_string(getpid());
  for (int h = 0; h < kNumHierarchies; ++h) {
    if (!Hier().has(Hierarchy(h))) continue;
    std::string d = Hier().mount[h] + s.root;
    if (::mkdir(d.c_str(), 0755) == 0) s.dirs.push_back(d);
  }
  for (int i = 0; i < n; ++i) {
    std::string rel = s.root + "/c" + std::to_string(i);
    pid_t pid = ::fork();
    if (pid == 0) { while (true) ::pause(); }
    s.pids.push_back(pid);
    for (int h = 0; h < kNumHierarchies; ++h) {
      if (!Hier().has(Hierarchy(h))) continue;
      std::string d = Hier().mount[h] + rel;
      if (::mkdir(d.c_str(), 0755) == 0) s.dirs.push_back(d);
      WriteStr(d + "/cgroup.procs", std::to_string(pid));
    }
  }
  std::string floor = RunSide(argv[0], "--floor", s.root, rounds);
  std::string stl = RunSide(argv[0], "--statlet", s.root, rounds);
  Teardown(s);
  std::fputs(floor.c_str(), stdout);
  std::fputs(stl.c_str(), stdout);
  double fc = Field(floor, "cpu_us"), sc = Field(stl, "cpu_us");
  double fw = Field(floor, "wall_us"), sw = Field(stl, "wall_us");
  double cg = Field(stl, "cgroups");
  if (fc > 0 && sc > 0 && cg > 0) {
    std::printf("per_cgroup_cpu_us statlet=%.2f floor=%.2f ratio_cpu=%.3f ratio_wall=%.3f rss_mib=%.1f "
                "poll_share_of_collection=%.4f\n",
                sc / cg, fc / cg, sc / fc, sw / fw, Field(stl, "rss_kib") / 1024.0, Field(stl, "poll_us") / sc);
  }
  return 0;
}
