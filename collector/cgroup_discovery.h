// Finds cgroup directories in every hierarchy statlet reads and keeps the set current
// incrementally: one full walk at start, then inotify (IN_CREATE / IN_DELETE on every
// watched directory) so an unchanged tree costs one non-blocking read() per collection.
// A queue overflow falls back to a full walk. On a hybrid host a path present in several
// hierarchies is one entry with a bit per hierarchy.
//
// The watch of a removed directory is removed explicitly (inotify_rm_watch) when its
// removal is seen: the kernel's own IN_IGNORED does not come while an fd kept open inside
// the directory pins it, and leaked watches eat a budget (fs.inotify.max_user_watches)
// shared with the kubelet, the runtime and systemd.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/status.h"
#include "collector/cgroup_hierarchies.h"

namespace statlet {

class CgroupDiscovery {
 public:
  using HierarchyMask = uint32_t;

  // `subtrees`: paths relative to the hierarchy roots ("/kubepods.slice"); empty = "/".
  CgroupDiscovery(CgroupHierarchies hierarchies, std::vector<std::string> subtrees);
  ~CgroupDiscovery();
  CgroupDiscovery(const CgroupDiscovery&) = delete;
  CgroupDiscovery& operator=(const CgroupDiscovery&) = delete;

  // Opens the hierarchy roots and the inotify fd and walks every subtree once.
  Status Init();

  struct Changes {
    std::vector<std::string> added;    // paths that appeared (in any hierarchy)
    std::vector<std::string> removed;  // paths gone from every hierarchy
    std::vector<std::string> changed;  // present, but their hierarchy mask changed
  };
  // Applies pending inotify events (non-blocking) and returns what changed.
  Changes Poll();
  // Forgets `path` in every hierarchy where it no longer exists (called when a read
  // answered ENODEV, which can precede the inotify event).
  void Revalidate(const std::string& path, Changes* changes);

  // Current paths and their hierarchy masks, sorted by path.
  const std::map<std::string, HierarchyMask>& paths() const { return paths_; }
  int root_fd(Hierarchy h) const { return root_fd_[h]; }
  const CgroupHierarchies& hierarchies() const { return h_; }
  uint64_t directories_read() const { return dirs_read_; }
  uint64_t full_walks() const { return full_walks_; }
  size_t watches() const { return wd_.size(); }

  // "/a/b" → "a/b", "/" → "." (a path usable with openat on a root fd): a view into `path`.
  static const char* RelPath(const std::string& path);

 private:
  void WalkAll(std::map<std::string, HierarchyMask>* out);
  void Walk(Hierarchy h, const std::string& path, std::map<std::string, HierarchyMask>* out);
  void AddWatch(Hierarchy h, const std::string& path);
  // Removes the watches of `path` and everything under it in hierarchy `h`.
  void Unwatch(Hierarchy h, const std::string& path);
  void ForgetWatch(int wd);
  void FullRescan(Changes* changes);
  void RemoveSubtree(Hierarchy h, const std::string& path, std::map<std::string, HierarchyMask>* masks);

  CgroupHierarchies h_;
  std::vector<std::string> subtrees_;
  int root_fd_[kNumHierarchies];
  int inotify_fd_ = -1;
  struct Watch {
    Hierarchy h;
    const std::string* path;  // watched_'s key: an entry there outlives every watch of it
  };
  std::unordered_map<int, Watch> wd_;
  // The same watches by path: one wd (or -1) per hierarchy.
  std::map<std::string, std::array<int, kNumHierarchies>> watched_;
  std::map<std::string, HierarchyMask> paths_;
  uint64_t dirs_read_ = 0;
  uint64_t full_walks_ = 0;
};

}  // namespace statlet
