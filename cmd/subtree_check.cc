#include "cmd/subtree_check.h"

#include "collector/cgroup_hierarchies.h"

namespace statlet {

Status CheckCgroupSubtrees(const CollectorOptions& options, const std::string& command) {
  for (const std::string& s : options.subtrees) {
    if (s.empty() || s[0] != '/') {
      return InvalidArgument("--cgroup " + s + ": a cgroup path starts with '/', relative to the hierarchy root " +
                             "(e.g. /kubepods.slice)");
    }
  }
  if (options.subtrees.empty()) return Status::Ok();
  auto h = DetectHierarchies(options.cgroup_mount, options.proc_root);
  if (!h.ok()) return h.status();
  std::vector<std::string> missing = MissingSubtrees(*h, options.subtrees);
  if (missing.empty()) return Status::Ok();
  return InvalidArgument("--cgroup " + missing[0] + ": no such cgroup in any hierarchy under " + options.cgroup_mount +
                         "; give a path relative to the hierarchy root (e.g. /kubepods.slice), or run `" + command +
                         "` without --cgroup to see the cgroups there are");
}

}  // namespace statlet
