#include "bench/support/bench_tree.h"

#include <unistd.h>

#include <cstdio>

namespace statlet::bench {
namespace {

std::string PodUid(size_t i) {
  char b[48];
  std::snprintf(b, sizeof b, "%08x-0000-4000-8000-%012zx", static_cast<unsigned>(::getpid()), i);
  return b;
}

std::string ContainerId(size_t i) {
  char b[65];
  unsigned long long x = (static_cast<unsigned long long>(::getpid()) << 32) ^ i;
  for (int w = 0; w < 4; ++w) {
    x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // a bijection: distinct ids
    std::snprintf(b + 16 * w, 17, "%016llx", x);
  }
  return b;
}

}  // namespace

BenchTree::BenchTree(std::string root, size_t cgroups, Shape shape, size_t per_pod) : root_(std::move(root)) {
  std::string parent = root_;
  if (!Make(root_)) return;
  if (shape == kKubelet) {
    parent = root_ + "/kubepods/burstable";
    if (!Make(root_ + "/kubepods") || !Make(parent)) return;
  }
  std::string pod;
  for (size_t i = 0; i < cgroups; ++i) {
    std::string path;
    if (shape == kFlat) {
      path = parent + "/c" + std::to_string(i);
    } else {
      if (i % per_pod == 0) {
        pod = parent + "/pod" + PodUid(i / per_pod);
        if (!Make(pod)) return;
        ++pods_;
      }
      path = pod + "/" + ContainerId(i);
    }
    testing::LiveCgroup* cg = Make(path);
    if (cg == nullptr) return;
    sleepers_.push_back(testing::Child::Sleeper());
    if (!cg->Add(sleepers_.back().pid())) {
      error_ = "cannot move a process into " + path;
      return;
    }
  }
}

BenchTree::~BenchTree() {
  sleepers_.clear();
  while (!cgroups_.empty()) cgroups_.pop_back();
}

testing::LiveCgroup* BenchTree::Make(const std::string& path) {
  cgroups_.push_back(std::make_unique<testing::LiveCgroup>(path));
  if (!cgroups_.back()->ok()) {
    error_ = cgroups_.back()->error();
    return nullptr;
  }
  return cgroups_.back().get();
}

std::vector<Hierarchy> ServerCgroupHierarchies() {
  return {testing::HostHierarchies().has(kV1Cpuacct) ? kV1Cpuacct : kUnified};
}

}  // namespace statlet::bench
