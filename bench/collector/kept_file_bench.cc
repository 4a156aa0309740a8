// What keeping a cgroup file open buys, per file read, through statlet's own reader
// (KeptFile) on N real cgroups:
//   BM_KeptRead/<file>      pread on the fd kept since the first read (the budget allows it)
//   BM_ReopenRead/<file>    the same reader with no budget left: openat, read, close each time
// and what it costs: "kernel_bytes_per_file", the kernel memory charged to this process's
// own v1 memory cgroup per kept file after its first read (the seq_file page, struct file,
// kernfs state), the figure behind --collector.max-kept-files. Needs root and cgroup v1
// memory for the kernel figure (left out otherwise).
#include <fcntl.h>
#include <unistd.h>

#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "collector/kept_file.h"
#include "tests/support/live_cgroup.h"

namespace statlet {
namespace {

using testing::HostHierarchies;
using testing::LiveCgroup;

constexpr int kCgroups = 200;

// kCgroups empty cgroups in the memory hierarchy (v1) or the unified one.
struct Tree {
  Tree() {
    const CgroupHierarchies& h = HostHierarchies();
    hierarchy = h.has(kV1Memory) ? kV1Memory : kUnified;
    root = std::make_unique<LiveCgroup>(testing::UniqueName("/statlet-kept-bench"), std::vector<Hierarchy>{hierarchy});
    for (int i = 0; i < kCgroups; ++i) {
      cgroups.push_back(std::make_unique<LiveCgroup>(root->path() + "/c" + std::to_string(i),
                                                     std::vector<Hierarchy>{hierarchy}));
    }
    root_fd = ::open(h.mount[hierarchy].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~Tree() { ::close(root_fd); }
  Hierarchy hierarchy;
  std::unique_ptr<LiveCgroup> root;
  std::vector<std::unique_ptr<LiveCgroup>> cgroups;
  int root_fd = -1;
};

Tree& SharedTree() {
  static Tree* tree = new Tree();
  return *tree;
}

const char* FileName(Hierarchy h, int which) {
  if (h == kV1Memory) return which == 0 ? "memory.stat" : which == 1 ? "memory.usage_in_bytes" : "cgroup.procs";
  return which == 0 ? "cgroup.stat" : which == 1 ? "cgroup.events" : "cgroup.procs";
}

void Run(benchmark::State& state, size_t budget_limit) {
  Tree& t = SharedTree();
  const char* name = FileName(t.hierarchy, static_cast<int>(state.range(0)));
  state.SetLabel(name);
  FdBudget budget(budget_limit);
  ReadBuffer buf;
  std::vector<KeptFile> files(t.cgroups.size());
  std::vector<std::string> rels;
  for (const auto& c : t.cgroups) rels.push_back(c->path().substr(1));
  int err = 0;
  for (size_t i = 0; i < files.size(); ++i) files[i].Read(t.root_fd, rels[i], name, &budget, &buf, &err);
  for (auto _ : state) {
    for (size_t i = 0; i < files.size(); ++i) {
      if (files[i].Read(t.root_fd, rels[i], name, &budget, &buf, &err) != ReadOutcome::kOk) {
        state.SkipWithError("read failed");
        return;
      }
    }
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(files.size()));
  for (auto& f : files) f.Close(&budget);
}

void BM_KeptRead(benchmark::State& state) { Run(state, kCgroups); }
void BM_ReopenRead(benchmark::State& state) { Run(state, 0); }
BENCHMARK(BM_KeptRead)->DenseRange(0, 2);
BENCHMARK(BM_ReopenRead)->DenseRange(0, 2);

// Kernel memory per kept, read file: this process in a v1 memory cgroup of its own, its
// memory.kmem.usage_in_bytes before and after keeping (and reading) one file per cgroup.
void BM_KernelBytesPerKeptFile(benchmark::State& state) {
  Tree& t = SharedTree();
  if (t.hierarchy != kV1Memory) {
    state.SkipWithError("needs the v1 memory controller");
    return;
  }
  LiveCgroup self(testing::UniqueName("/statlet-kept-bench-self"), {kV1Memory});
  if (!self.Add(::getpid())) {
    state.SkipWithError("cannot move the bench into a memory cgroup");
    return;
  }
  auto kmem = [&] { return std::stod(self.Read(kV1Memory, "memory.kmem.usage_in_bytes")); };
  const char* name = FileName(t.hierarchy, static_cast<int>(state.range(0)));
  state.SetLabel(name);
  double per_file = 0;
  for (auto _ : state) {
    FdBudget budget(kCgroups);
    ReadBuffer buf;
    std::vector<KeptFile> files(t.cgroups.size());
    const double before = kmem();
    int err = 0;
    for (size_t i = 0; i < files.size(); ++i) {
      files[i].Read(t.root_fd, t.cgroups[i]->path().substr(1), name, &budget, &buf, &err);
    }
    per_file = (kmem() - before) / static_cast<double>(files.size());
    for (auto& f : files) f.Close(&budget);
  }
  state.counters["kernel_bytes_per_file"] = per_file;
  // Out to the hierarchy's root before `self` is removed (its destructor kills what is in it).
  std::ofstream(HostHierarchies().mount[kV1Memory] + "/cgroup.procs") << ::getpid() << std::endl;
}
BENCHMARK(BM_KernelBytesPerKeptFile)->DenseRange(0, 2)->Iterations(1);

}  // namespace
}  // namespace statlet

BENCHMARK_MAIN();
