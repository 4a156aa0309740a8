// What the files the eBPF cgroup iterator stands in for cost per collection, at N cgroups,
// against the floor of reading them, in one run:
//   iterator         one walk (CgroupFileSource::Refresh) and the rendering of every one
//                    of those files for every cgroup (Render), what the collector asks of it
//   floor            pread() of the same files through kept fds, parsing nothing
//   collector_files  a whole collection (every file of the read plan, parsed) from cgroupfs
//   collector_iter   the same collection with the iterator as its file source
// Each round measures the four in rotating order; figures are medians over rounds of this
// thread's CPU time (the kernel's walk and reads run in it) and of wall time, and ratios
// are medians of per-round ratios. The cgroups are empty directories under one parent,
// with every controller the hierarchy offers enabled, so each has every file.
// Meant for the cgroup-v2 guest of tests/vm (Debian 6.1: every file rendered), and runs on
// any host whose kernel loads the iterator. With --v1 the cgroups are made in the cpu,
// cpuacct and memory v1 hierarchies instead, and the files are those the v1 walks render.
//
//   statlet_cgroup_stats_bench [--cgroups N] [--rounds R] [--cgroup-root DIR] [--v1]   (root)
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "bpf/bpf_probes.h"
#include "collector/cgroup_file_source.h"
#include "collector/collector.h"
#include "collector/kept_file.h"

namespace {

using statlet::CgroupFileSource;

std::vector<const char*> FilesOf(statlet::Hierarchy h) {
  switch (h) {
    case statlet::kUnified:
      return {"cpu.stat",      "memory.current",      "memory.peak",  "memory.swap.current", "memory.stat",
              "memory.events", "memory.events.local", "pids.current", "pids.events"};
    case statlet::kV1Cpu: return {"cpu.stat"};
    case statlet::kV1Cpuacct: return {"cpuacct.usage_percpu"};
    case statlet::kV1Memory:
      return {"memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.failcnt", "memory.kmem.usage_in_bytes",
              "memory.oom_control"};
    default: return {};
  }
}

int64_t Now(clockid_t c) {
  timespec ts;
  clock_gettime(c, &ts);
  return int64_t(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

bool WriteFile(const std::string& path, const std::string& value) {
  std::ofstream f(path);
  f << value;
  f.flush();
  return static_cast<bool>(f);
}

std::string ReadFile(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// N empty cgroups under root/<name>, removed again at the end.
class Tree {
 public:
  Tree(const std::string& root, size_t n)
      : root_(root), dir_(root + "/statlet-iter-bench-" + std::to_string(getpid())) {
    if (mkdir(dir_.c_str(), 0755) != 0) return;
    std::string enable;
    std::istringstream controllers(ReadFile(dir_ + "/cgroup.controllers"));
    for (std::string c; controllers >> c;) enable += "+" + c + " ";
    if (!enable.empty()) WriteFile(dir_ + "/cgroup.subtree_control", enable);
    for (size_t i = 0; i < n; i++) {
      const std::string p = dir_ + "/c" + std::to_string(i);
      if (mkdir(p.c_str(), 0755) != 0) return;
      struct stat st;
      stat(p.c_str(), &st);
      cgroups_.push_back({p, st.st_ino});
    }
    ok_ = true;
  }
  ~Tree() {
    for (auto it = cgroups_.rbegin(); it != cgroups_.rend(); ++it) rmdir(it->path.c_str());
    rmdir(dir_.c_str());
  }
  bool ok() const { return ok_; }
  const std::string& root() const { return root_; }
  const std::string& dir() const { return dir_; }
  struct Cgroup {
    std::string path;
    uint64_t id;
  };
  const std::vector<Cgroup>& cgroups() const { return cgroups_; }

 private:
  std::string root_, dir_;
  std::vector<Cgroup> cgroups_;
  bool ok_ = false;
};

struct Side {
  const char* name;
  std::vector<double> cpu_us, wall_us;
};

void Print(const Side& s) {
  std::printf("side=%s cpu_us_p50=%.0f cpu_us_min=%.0f cpu_us_max=%.0f wall_us_p50=%.0f\n", s.name, Median(s.cpu_us),
              *std::min_element(s.cpu_us.begin(), s.cpu_us.end()), *std::max_element(s.cpu_us.begin(), s.cpu_us.end()),
              Median(s.wall_us));
}

void PrintRatio(const char* what, const Side& a, const Side& b) {
  std::vector<double> cpu, wall;
  for (size_t i = 0; i < a.cpu_us.size(); i++) {
    cpu.push_back(a.cpu_us[i] / b.cpu_us[i]);
    wall.push_back(a.wall_us[i] / b.wall_us[i]);
  }
  std::printf("ratio=%s cpu_p50=%.3f cpu_min=%.3f cpu_max=%.3f wall_p50=%.3f\n", what, Median(cpu),
              *std::min_element(cpu.begin(), cpu.end()), *std::max_element(cpu.begin(), cpu.end()), Median(wall));
}

}  // namespace

int main(int argc, char** argv) {
  size_t n = 1000;
  int rounds = 11;
  std::string root;
  bool v1 = false;
  for (int i = 1; i < argc; i++) {
    if (!std::strcmp(argv[i], "--v1")) {
      v1 = true;
      continue;
    }
    if (i + 1 >= argc) break;
    if (!std::strcmp(argv[i], "--cgroups")) n = std::strtoul(argv[++i], nullptr, 10);
    else if (!std::strcmp(argv[i], "--rounds")) rounds = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--cgroup-root")) root = argv[++i];
  }
  if (geteuid() != 0) {
    std::fprintf(stderr, "needs root\n");
    return 1;
  }
  // Every file kept open on the floor side (n * 9 fds).
  rlimit rl{1 << 16, 1 << 16};
  setrlimit(RLIMIT_NOFILE, &rl);

  statlet::BpfOptions options = statlet::BpfOptions::WithMode(statlet::BpfMode::kOn);
  options.probes = {"cgroup_stats"};
  options.cgroup2_root = root;
  auto probes = statlet::BpfProbes::Create(options);
  if (!probes.ok()) {
    std::fprintf(stderr, "cgroup_stats: %s\n", probes.status().ToString().c_str());
    return 1;
  }
  CgroupFileSource* source = (*probes)->FileSource();
  if (root.empty())
    root = access("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0 ? "/sys/fs/cgroup" : "/sys/fs/cgroup/unified";
  // One tree per hierarchy measured (the same relative paths in each).
  std::vector<std::pair<statlet::Hierarchy, std::unique_ptr<Tree>>> trees;
  if (v1) {
    auto h = statlet::DetectHierarchies("/sys/fs/cgroup", "/proc");
    if (!h.ok()) return 1;
    for (statlet::Hierarchy hh : {statlet::kV1Cpu, statlet::kV1Cpuacct, statlet::kV1Memory}) {
      if (h->has(hh)) trees.emplace_back(hh, std::make_unique<Tree>(h->mount[hh], n));
    }
  } else {
    trees.emplace_back(statlet::kUnified, std::make_unique<Tree>(root, n));
  }
  for (const auto& [h, tree] : trees) {
    if (!tree->ok()) {
      std::fprintf(stderr, "cannot create %zu cgroups under %s\n", n, tree->root().c_str());
      return 1;
    }
  }
  const Tree& tree = *trees.front().second;

  // The (cgroup, file) pairs both sides read: the files the iterator renders that exist.
  struct Target {
    uint64_t id;
    int index;
    int fd;
  };
  std::vector<Target> targets;
  std::string names;
  for (const auto& [h, t] : trees) {
    for (const char* file : FilesOf(h)) {
      const int index = source->FileIndex(h, file);
      if (index < 0 || access((t->cgroups()[0].path + "/" + file).c_str(), F_OK) != 0) continue;
      names += std::string(names.empty() ? "" : ",") + file;
      for (const auto& cg : t->cgroups()) {
        const int fd = open((cg.path + "/" + file).c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
          std::fprintf(stderr, "open %s/%s: %s\n", cg.path.c_str(), file, std::strerror(errno));
          return 1;
        }
        targets.push_back({cg.id, index, fd});
      }
    }
  }
  std::printf("cgroups=%zu files=%s pairs=%zu rounds=%d\n", n, names.c_str(), targets.size(), rounds);

  statlet::CollectorOptions co;
  co.subtrees = {tree.dir().substr(tree.root().size())};
  co.include_empty = true;
  co.network = false;
  auto files_collector = statlet::Collector::Create(co);
  co.file_source = source;
  co.min_walked_files = 0;  // the walk is what this bench measures
  auto iter_collector = statlet::Collector::Create(co);
  if (!files_collector.ok() || !iter_collector.ok()) {
    std::fprintf(stderr, "collector: %s\n",
                 (files_collector.ok() ? iter_collector : files_collector).status().ToString().c_str());
    return 1;
  }

  statlet::ReadBuffer buf;
  size_t failures = 0;
  auto iterator_pass = [&] {
    if (!source->Refresh().ok()) failures++;
    for (const Target& t : targets) failures += !source->Render(t.id, t.index, &buf);
  };
  auto floor_pass = [&] {
    for (const Target& t : targets) failures += statlet::PreadWhole(t.fd, &buf) != 0;
  };
  auto collect = [&](statlet::Collector* c) {
    auto s = c->Collect();
    if (!s.ok() || s->cgroups.size() < n) failures++;
  };
  Side sides[] = {{"iterator", {}, {}}, {"floor", {}, {}}, {"collector_files", {}, {}}, {"collector_iter", {}, {}}};
  auto run = [&](int side) {
    switch (side) {
      case 0: iterator_pass(); break;
      case 1: floor_pass(); break;
      case 2: collect(files_collector->get()); break;
      case 3: collect(iter_collector->get()); break;
    }
  };
  for (int side = 0; side < 4; side++) run(side);  // warm: kept fds opened, existence checked
  for (int r = 0; r < rounds; r++) {
    for (int k = 0; k < 4; k++) {
      const int side = (r + k) % 4;
      // The process's CPU: the collectors' reading threads included (nothing else runs).
      const int64_t c0 = Now(CLOCK_PROCESS_CPUTIME_ID), w0 = Now(CLOCK_MONOTONIC);
      run(side);
      sides[side].cpu_us.push_back((Now(CLOCK_PROCESS_CPUTIME_ID) - c0) / 1e3);
      sides[side].wall_us.push_back((Now(CLOCK_MONOTONIC) - w0) / 1e3);
    }
  }
  for (const Side& s : sides) Print(s);
  PrintRatio("iterator/floor", sides[0], sides[1]);
  PrintRatio("collector_iter/collector_files", sides[3], sides[2]);
  std::printf("failures=%zu\n", failures);
  for (const Target& t : targets) close(t.fd);
  return failures == 0 ? 0 : 1;
}
