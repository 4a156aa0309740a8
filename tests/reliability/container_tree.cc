#include "tests/reliability/container_tree.h"

#include <unistd.h>

#include <cstdio>

namespace statlet::testing {

ContainerTree::ContainerTree(std::string root) : root_(std::move(root)) {
  for (const char* sub : {"", "/kubepods", "/kubepods/burstable"}) {
    parents_.push_back(std::make_unique<LiveCgroup>(root_ + sub));
    if (!parents_.back()->ok()) {
      error_ = parents_.back()->error();
      return;
    }
  }
}

ContainerTree::~ContainerTree() {
  RemoveAll();
  while (!parents_.empty()) parents_.pop_back();  // deepest first
}

bool ContainerTree::Add(int count, int with_process_every, std::vector<std::string>* paths) {
  for (int i = 0; i < count; ++i) {
    const uint64_t n = next_++;
    char uid[64], id[80];
    std::snprintf(uid, sizeof uid, "%08x-0000-4000-8000-%012llx", static_cast<unsigned>(::getpid()),
                  static_cast<unsigned long long>(n));
    std::snprintf(id, sizeof id, "%032llx%016x%016llx", static_cast<unsigned long long>(n),
                  static_cast<unsigned>(::getpid()), static_cast<unsigned long long>(n));
    const std::string pod = root_ + "/kubepods/burstable/pod" + uid;
    pods_.push_back(std::make_unique<LiveCgroup>(pod));
    containers_.push_back(std::make_unique<LiveCgroup>(pod + "/" + id));
    if (!pods_.back()->ok() || !containers_.back()->ok()) {
      error_ = pods_.back()->ok() ? containers_.back()->error() : pods_.back()->error();
      return false;
    }
    if (with_process_every > 0 && n % static_cast<uint64_t>(with_process_every) == 0) {
      processes_.push_back(Child::Sleeper());
      if (!containers_.back()->Add(processes_.back().pid())) {
        error_ = "cannot move a process into " + containers_.back()->path();
        return false;
      }
    }
    if (paths != nullptr) paths->push_back(containers_.back()->path());
  }
  return true;
}

void ContainerTree::RemoveAll() {
  processes_.clear();  // killed and reaped
  containers_.clear();
  pods_.clear();
}

}  // namespace statlet::testing
