#include "collector/cgroup_discovery.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "base/log.h"

namespace statlet {
namespace {

constexpr uint32_t kWatchMask = IN_CREATE | IN_DELETE | IN_ONLYDIR | IN_DONT_FOLLOW;

std::string Child(const std::string& parent, const char* name) {
  // Appended piecewise: GCC 12 at -O3 misreads `"/" + std::string(name)` as an
  // overlapping memcpy (-Wrestrict).
  std::string out;
  out.reserve(parent.size() + std::strlen(name) + 1);
  if (parent != "/") out.append(parent);
  out.push_back('/');
  out.append(name);
  return out;
}

bool IsUnder(const std::string& path, const std::string& root) {
  if (root == "/") return true;
  return path.size() >= root.size() && path.compare(0, root.size(), root) == 0 &&
         (path.size() == root.size() || path[root.size()] == '/');
}

}  // namespace

CgroupDiscovery::CgroupDiscovery(CgroupHierarchies hierarchies, std::vector<std::string> subtrees)
    : h_(std::move(hierarchies)), subtrees_(std::move(subtrees)) {
  for (int& fd : root_fd_) fd = -1;
  if (subtrees_.empty()) subtrees_.push_back("/");
  for (auto& s : subtrees_) {
    if (s.empty() || s.front() != '/') s.insert(s.begin(), '/');
    while (s.size() > 1 && s.back() == '/') s.pop_back();
  }
}

CgroupDiscovery::~CgroupDiscovery() {
  for (int fd : root_fd_)
    if (fd >= 0) ::close(fd);
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
}

const char* CgroupDiscovery::RelPath(const std::string& path) {
  if (path.size() <= 1) return ".";
  return path.c_str() + 1;
}

Status CgroupDiscovery::Init() {
  bool any = false;
  for (int h = 0; h < kNumHierarchies; ++h) {
    if (!h_.has(static_cast<Hierarchy>(h))) continue;
    // v1 controllers co-mounted at one path share a root fd's content; opening twice is fine.
    root_fd_[h] = ::open(h_.mount[h].c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd_[h] < 0) return ErrnoStatus(errno, "open " + h_.mount[h]);
    any = true;
  }
  if (!any) return NotFound("no cgroup hierarchy to read");
  inotify_fd_ = ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (inotify_fd_ < 0) {
    log::Warn(std::string("inotify unavailable, cgroups are re-walked on every collection: ") + std::strerror(errno));
  }
  WalkAll(&paths_);
  return Status::Ok();
}

void CgroupDiscovery::AddWatch(Hierarchy h, const std::string& path) {
  if (inotify_fd_ < 0) return;
  std::string full = h_.mount[h] + (path == "/" ? "" : path);
  int wd = ::inotify_add_watch(inotify_fd_, full.c_str(), kWatchMask);
  if (wd < 0) {
    log::Once(log::Level::kWarn, "inotify_add_watch",
              "inotify_add_watch failed (" + std::string(std::strerror(errno)) +
                  "); new cgroups may be seen late. Raise fs.inotify.max_user_watches.");
    return;
  }
  auto [it, fresh] = watched_.try_emplace(path);
  if (fresh) it->second.fill(-1);
  int& slot = it->second[h];
  if (slot >= 0 && slot != wd) {
    // The path was removed and made again before the removal was seen: the old
    // directory's watch goes now.
    ::inotify_rm_watch(inotify_fd_, slot);
    wd_.erase(slot);
  }
  slot = wd;
  wd_[wd] = Watch{h, &it->first};
}

void CgroupDiscovery::ForgetWatch(int wd) {
  auto it = wd_.find(wd);
  if (it == wd_.end()) return;
  auto w = watched_.find(*it->second.path);
  if (w != watched_.end()) {
    if (w->second[it->second.h] == wd) w->second[it->second.h] = -1;
    if (std::all_of(w->second.begin(), w->second.end(), [](int x) { return x < 0; })) watched_.erase(w);
  }
  wd_.erase(it);
}

void CgroupDiscovery::Unwatch(Hierarchy h, const std::string& path) {
  if (inotify_fd_ < 0) return;
  for (auto it = watched_.lower_bound(path); it != watched_.end() && IsUnder(it->first, path);) {
    int& slot = it->second[h];
    if (slot >= 0) {
      ::inotify_rm_watch(inotify_fd_, slot);  // its IN_IGNORED finds no entry and is skipped
      wd_.erase(slot);
      slot = -1;
    }
    if (std::all_of(it->second.begin(), it->second.end(), [](int x) { return x < 0; })) {
      it = watched_.erase(it);
    } else {
      ++it;
    }
  }
}

void CgroupDiscovery::Walk(Hierarchy h, const std::string& path, std::map<std::string, HierarchyMask>* out) {
  std::string rel = RelPath(path);
  int fd = ::openat(root_fd_[h], rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return;  // vanished or not in this hierarchy
  DIR* dir = ::fdopendir(fd);
  if (dir == nullptr) {
    ::close(fd);
    return;
  }
  // Watch before listing, so a child created between the listing and the watch is not lost.
  AddWatch(h, path);
  ++dirs_read_;
  (*out)[path] |= 1u << h;
  std::vector<std::string> children;
  while (dirent* e = ::readdir(dir)) {
    if (e->d_type != DT_DIR || e->d_name[0] == '.') continue;
    children.push_back(Child(path, e->d_name));
  }
  ::closedir(dir);
  for (const auto& c : children) Walk(h, c, out);
}

void CgroupDiscovery::WalkAll(std::map<std::string, HierarchyMask>* out) {
  ++full_walks_;
  for (int h = 0; h < kNumHierarchies; ++h) {
    if (root_fd_[h] < 0) continue;
    for (const auto& s : subtrees_) Walk(static_cast<Hierarchy>(h), s, out);
  }
}

void CgroupDiscovery::FullRescan(Changes* changes) {
  if (inotify_fd_ >= 0) {
    for (auto& [wd, w] : wd_) ::inotify_rm_watch(inotify_fd_, wd);
    wd_.clear();
    watched_.clear();
  }
  std::map<std::string, HierarchyMask> fresh;
  WalkAll(&fresh);
  for (const auto& [p, m] : fresh) {
    auto it = paths_.find(p);
    if (it == paths_.end()) changes->added.push_back(p);
    else if (it->second != m) changes->changed.push_back(p);
  }
  for (const auto& [p, m] : paths_) {
    if (!fresh.count(p)) changes->removed.push_back(p);
  }
  paths_ = std::move(fresh);
}

void CgroupDiscovery::RemoveSubtree(Hierarchy h, const std::string& path, std::map<std::string, HierarchyMask>* masks) {
  // A path removed from several hierarchies gets one event per hierarchy: each clears its
  // bit in the pending mask, which starts from the known one.
  for (auto it = paths_.lower_bound(path); it != paths_.end() && IsUnder(it->first, path); ++it) {
    auto [pending, fresh] = masks->try_emplace(it->first, it->second);
    pending->second &= ~(1u << h);
  }
}

CgroupDiscovery::Changes CgroupDiscovery::Poll() {
  Changes changes;
  if (inotify_fd_ < 0) {
    FullRescan(&changes);
    return changes;
  }
  // New masks for touched paths; applied after the queue is drained.
  std::map<std::string, HierarchyMask> masks;
  bool overflow = false;

  alignas(struct inotify_event) char buf[16384];
  while (true) {
    ssize_t n = ::read(inotify_fd_, buf, sizeof buf);
    if (n <= 0) break;
    for (char* p = buf; p < buf + n;) {
      auto* ev = reinterpret_cast<struct inotify_event*>(p);
      p += sizeof(struct inotify_event) + ev->len;
      if (ev->mask & IN_Q_OVERFLOW) {
        overflow = true;
        continue;
      }
      auto it = wd_.find(ev->wd);
      if (it == wd_.end()) continue;
      if (ev->mask & IN_IGNORED) {
        // The watched directory is gone. For a subtree root nobody else reports that (its
        // parent is not watched): forget the subtree and look for the root again.
        // The event can come late, after the root was made again: only a root that is
        // really gone is forgotten.
        const Hierarchy gone_h = it->second.h;
        const std::string gone_path = *it->second.path;  // ForgetWatch may drop the key
        ForgetWatch(ev->wd);
        struct stat st;
        if (std::find(subtrees_.begin(), subtrees_.end(), gone_path) != subtrees_.end() &&
            ::fstatat(root_fd_[gone_h], RelPath(gone_path), &st, 0) != 0) {
          RemoveSubtree(gone_h, gone_path, &masks);
          Unwatch(gone_h, gone_path);
        }
        continue;
      }
      if (!(ev->mask & IN_ISDIR) || ev->len == 0) continue;
      const Watch w = it->second;
      const std::string child = Child(*w.path, ev->name);
      if (ev->mask & IN_CREATE) {
        std::map<std::string, HierarchyMask> found;
        Walk(w.h, child, &found);
        for (const auto& [fp, bit] : found) {
          auto cur = masks.count(fp) ? masks[fp] : (paths_.count(fp) ? paths_[fp] : 0u);
          masks[fp] = cur | bit;
        }
      } else if (ev->mask & IN_DELETE) {
        // Apply to the pending view too: a create+delete within one drain cancels out.
        for (auto& [mp, mm] : masks) {
          if (IsUnder(mp, child)) mm &= ~(1u << w.h);
        }
        RemoveSubtree(w.h, child, &masks);
        Unwatch(w.h, child);
      }
    }
    if (overflow) break;
  }
  if (overflow) {
    log::Warn("inotify queue overflowed; re-walking the cgroup tree");
    FullRescan(&changes);
    return changes;
  }
  // Subtree roots that are not known in some hierarchy (not made yet when statlet started,
  // or removed and made again) are looked for at every Poll: one stat each while missing.
  for (int h = 0; h < kNumHierarchies; ++h) {
    if (root_fd_[h] < 0) continue;
    for (const auto& root : subtrees_) {
      auto pending = masks.find(root);
      auto known = paths_.find(root);
      HierarchyMask m = pending != masks.end() ? pending->second : known != paths_.end() ? known->second : 0u;
      if (m & (1u << h)) continue;
      struct stat st;
      if (::fstatat(root_fd_[h], RelPath(root), &st, 0) != 0) continue;
      std::map<std::string, HierarchyMask> found;
      Walk(static_cast<Hierarchy>(h), root, &found);
      for (const auto& [fp, bit] : found) {
        auto cur = masks.count(fp) ? masks[fp] : (paths_.count(fp) ? paths_[fp] : 0u);
        masks[fp] = cur | bit;
      }
    }
  }
  for (const auto& [p, m] : masks) {
    auto it = paths_.find(p);
    if (m == 0) {
      if (it != paths_.end()) {
        paths_.erase(it);
        changes.removed.push_back(p);
      }
    } else if (it == paths_.end()) {
      paths_[p] = m;
      changes.added.push_back(p);
    } else if (it->second != m) {
      it->second = m;
      changes.changed.push_back(p);
    }
  }
  return changes;
}

void CgroupDiscovery::Revalidate(const std::string& path, Changes* changes) {
  auto it = paths_.find(path);
  if (it == paths_.end()) return;
  std::string rel = RelPath(path);
  HierarchyMask m = 0;
  for (int h = 0; h < kNumHierarchies; ++h) {
    if (!(it->second & (1u << h))) continue;
    struct stat st;
    if (::fstatat(root_fd_[h], rel.c_str(), &st, 0) == 0) {
      m |= 1u << h;
    } else {
      Unwatch(static_cast<Hierarchy>(h), path);
    }
  }
  if (m == it->second) return;
  if (m == 0) {
    // Descendants are gone too (a cgroup can only be removed when empty of children).
    for (auto d = paths_.lower_bound(path); d != paths_.end() && IsUnder(d->first, path);) {
      changes->removed.push_back(d->first);
      d = paths_.erase(d);
    }
  } else {
    it->second = m;
    changes->changed.push_back(path);
  }
}

}  // namespace statlet
