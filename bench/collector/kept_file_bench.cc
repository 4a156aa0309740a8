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

#include <algorithm>
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

// The files a container collection reads through cgroupfs on this host (the v1 layout when
// the memory controller is on v1, else the controller-less unified files), each with the
// hierarchy it lives in.
struct BenchFile {
  Hierarchy hierarchy;
  const char* name;
};
const std::vector<BenchFile>& Files() {
  static const std::vector<BenchFile> files =
      HostHierarchies().has(kV1Memory)
          ? std::vector<BenchFile>{{kV1Memory, "memory.stat"},  {kV1Memory, "memory.usage_in_bytes"},
                                   {kV1Memory, "cgroup.procs"}, {kV1Cpuacct, "cpuacct.usage_user"},
                                   {kV1Cpuacct, "tasks"},       {kV1Blkio, "blkio.throttle.io_service_bytes_recursive"}}
          : std::vector<BenchFile>{{kUnified, "cgroup.stat"}, {kUnified, "cgroup.events"}, {kUnified, "cgroup.procs"}};
  return files;
}

// kCgroups empty cgroups in every hierarchy Files() names.
struct Tree {
  Tree() {
    const CgroupHierarchies& h = HostHierarchies();
    std::vector<Hierarchy> in;
    for (const BenchFile& f : Files()) {
      if (h.has(f.hierarchy) && std::find(in.begin(), in.end(), f.hierarchy) == in.end()) in.push_back(f.hierarchy);
    }
    root = std::make_unique<LiveCgroup>(testing::UniqueName("/statlet-kept-bench"), in);
    for (int i = 0; i < kCgroups; ++i) {
      cgroups.push_back(std::make_unique<LiveCgroup>(root->path() + "/c" + std::to_string(i), in));
    }
    for (Hierarchy x : in) root_fd[x] = ::open(h.mount[x].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~Tree() {
    for (int fd : root_fd)
      if (fd >= 0) ::close(fd);
  }
  std::unique_ptr<LiveCgroup> root;
  std::vector<std::unique_ptr<LiveCgroup>> cgroups;
  int root_fd[kNumHierarchies] = {-1, -1, -1, -1, -1, -1, -1};
};

// Made by the first benchmark that needs it, removed by main once every benchmark ran.
Tree*& TreeSlot() {
  static Tree* tree = nullptr;
  return tree;
}
Tree& SharedTree() {
  if (TreeSlot() == nullptr) TreeSlot() = new Tree();
  return *TreeSlot();
}

void Run(benchmark::State& state, size_t budget_limit) {
  Tree& t = SharedTree();
  const BenchFile& f = Files()[static_cast<size_t>(state.range(0))];
  const char* name = f.name;
  const int root_fd = t.root_fd[f.hierarchy];
  state.SetLabel(name);
  if (root_fd < 0) {
    state.SkipWithError("hierarchy not mounted");
    return;
  }
  FdBudget budget(budget_limit);
  ReadBuffer buf;
  std::vector<KeptFile> files(t.cgroups.size());
  std::vector<std::string> rels;
  for (const auto& c : t.cgroups) rels.push_back(c->path().substr(1));
  int err = 0;
  for (size_t i = 0; i < files.size(); ++i) files[i].Read(root_fd, rels[i], name, &budget, &buf, &err);
  for (auto _ : state) {
    for (size_t i = 0; i < files.size(); ++i) {
      if (files[i].Read(root_fd, rels[i], name, &budget, &buf, &err) != ReadOutcome::kOk) {
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
void Kinds(benchmark::internal::Benchmark* b) {
  for (size_t i = 0; i < Files().size(); ++i) b->Arg(static_cast<int64_t>(i));
}
BENCHMARK(BM_KeptRead)->Apply(Kinds);
BENCHMARK(BM_ReopenRead)->Apply(Kinds);

// Kernel memory per kept, read file: this process in a v1 memory cgroup of its own, its
// memory.kmem.usage_in_bytes before and after keeping (and reading) one file per cgroup.
void BM_KernelBytesPerKeptFile(benchmark::State& state) {
  Tree& t = SharedTree();
  if (t.root_fd[kV1Memory] < 0) {
    state.SkipWithError("needs the v1 memory controller");
    return;
  }
  LiveCgroup self(testing::UniqueName("/statlet-kept-bench-self"), {kV1Memory});
  if (!self.Add(::getpid())) {
    state.SkipWithError("cannot move the bench into a memory cgroup");
    return;
  }
  auto kmem = [&] { return std::stod(self.Read(kV1Memory, "memory.kmem.usage_in_bytes")); };
  const BenchFile& f = Files()[static_cast<size_t>(state.range(0))];
  const char* name = f.name;
  state.SetLabel(name);
  if (t.root_fd[f.hierarchy] < 0) {
    state.SkipWithError("hierarchy not mounted");
    return;
  }
  double per_file = 0;
  for (auto _ : state) {
    FdBudget budget(kCgroups);
    ReadBuffer buf;
    std::vector<KeptFile> files(t.cgroups.size());
    const double before = kmem();
    int err = 0;
    for (size_t i = 0; i < files.size(); ++i) {
      files[i].Read(t.root_fd[f.hierarchy], t.cgroups[i]->path().substr(1), name, &budget, &buf, &err);
    }
    per_file = (kmem() - before) / static_cast<double>(files.size());
    for (auto& f : files) f.Close(&budget);
  }
  state.counters["kernel_bytes_per_file"] = per_file;
  // Out to the hierarchy's root before `self` is removed (its destructor kills what is in it).
  std::ofstream(HostHierarchies().mount[kV1Memory] + "/cgroup.procs") << ::getpid() << std::endl;
}
BENCHMARK(BM_KernelBytesPerKeptFile)->Apply(Kinds)->Iterations(1);

}  // namespace
}  // namespace statlet

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  delete statlet::TreeSlot();  // its cgroups, so that no run leaves any behind
  return 0;
}
