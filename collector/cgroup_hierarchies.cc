#include "collector/cgroup_hierarchies.h"

#include <sys/stat.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace statlet {
namespace {

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (true) {
    size_t p = s.find(sep);
    out.push_back(s.substr(0, p));
    if (p == std::string_view::npos) break;
    s.remove_prefix(p + 1);
  }
  return out;
}

bool ReadWhole(const std::string& path, std::string* out) {
  std::ifstream f(path);
  if (!f) return false;
  std::stringstream ss;
  ss << f.rdbuf();
  *out = ss.str();
  return true;
}

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

// mountinfo escapes spaces etc. as \040; cgroup mounts never need it, but decode anyway.
std::string Unescape(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '\\' && i + 3 < s.size()) {
      int v = 0;
      bool ok = true;
      for (int k = 1; k <= 3; ++k) {
        char c = s[i + k];
        if (c < '0' || c > '7') {
          ok = false;
          break;
        }
        v = v * 8 + (c - '0');
      }
      if (ok) {
        out.push_back(static_cast<char>(v));
        i += 3;
        continue;
      }
    }
    out.push_back(s[i]);
  }
  return out;
}

}  // namespace

const char* HierarchyName(Hierarchy h) {
  switch (h) {
    case kUnified: return "unified";
    case kV1Cpu: return "cpu";
    case kV1Cpuacct: return "cpuacct";
    case kV1Memory: return "memory";
    case kV1Pids: return "pids";
    case kV1Blkio: return "blkio";
    case kV1Hugetlb: return "hugetlb";
    default: return "?";
  }
}

const char* CgroupHierarchies::Mode() const {
  bool any_v1 = false;
  for (int h = kV1Cpu; h < kNumHierarchies; ++h) any_v1 |= has(static_cast<Hierarchy>(h));
  if (!any_v1) return "v2";
  return has(kUnified) ? "hybrid" : "v1";
}

void ParseV2Controllers(std::string_view controllers, CgroupHierarchies* h) {
  for (std::string_view c : Split(controllers, ' ')) {
    while (!c.empty() && (c.back() == '\n' || c.back() == ' ')) c.remove_suffix(1);
    if (c == "cpu") h->v2_cpu = true;
    else if (c == "memory") h->v2_memory = true;
    else if (c == "io") h->v2_io = true;
    else if (c == "pids") h->v2_pids = true;
    else if (c == "hugetlb") h->v2_hugetlb = true;
  }
}

StatusOr<CgroupHierarchies> ParseMountinfo(std::string_view mountinfo, std::string_view cgroup_mount) {
  CgroupHierarchies h;
  for (std::string_view line : Split(mountinfo, '\n')) {
    if (line.empty()) continue;
    // id parent maj:min root mountpoint opts [optional...] - fstype source superopts
    size_t dash = line.find(" - ");
    if (dash == std::string_view::npos) continue;
    auto pre = Split(line.substr(0, dash), ' ');
    auto post = Split(line.substr(dash + 3), ' ');
    if (pre.size() < 5 || post.size() < 3) continue;
    std::string mnt = Unescape(pre[4]);
    std::string_view fstype = post[0];
    if (mnt.compare(0, cgroup_mount.size(), cgroup_mount) != 0) continue;
    if (fstype == "cgroup2") {
      if (h.mount[kUnified].empty()) h.mount[kUnified] = mnt;
      continue;
    }
    if (fstype != "cgroup") continue;
    for (std::string_view opt : Split(post[2], ',')) {
      Hierarchy which = kNumHierarchies;
      if (opt == "cpu") which = kV1Cpu;
      else if (opt == "cpuacct") which = kV1Cpuacct;
      else if (opt == "memory") which = kV1Memory;
      else if (opt == "pids") which = kV1Pids;
      else if (opt == "blkio") which = kV1Blkio;
      else if (opt == "hugetlb") which = kV1Hugetlb;
      if (which != kNumHierarchies && h.mount[which].empty()) h.mount[which] = mnt;
    }
  }
  return h;
}

StatusOr<CgroupHierarchies> DetectHierarchies(const std::string& cgroup_mount, const std::string& proc_root) {
  CgroupHierarchies h;
  std::string mountinfo;
  bool found = false;
  if (ReadWhole(proc_root + "/self/mountinfo", &mountinfo)) {
    auto parsed = ParseMountinfo(mountinfo, cgroup_mount);
    if (parsed.ok()) {
      h = *parsed;
      for (const auto& m : h.mount) found |= !m.empty();
    }
  }
  if (!found) {
    // Not a mount (fixture tree): a cgroup.controllers file at the top means a v2 tree;
    // subdirectories named after v1 controllers mean a v1/hybrid tree.
    if (Exists(cgroup_mount + "/cgroup.controllers")) {
      h.mount[kUnified] = cgroup_mount;
    } else {
      const std::pair<Hierarchy, const char*> dirs[] = {
          {kUnified, "unified"}, {kV1Cpu, "cpu"},     {kV1Cpuacct, "cpuacct"}, {kV1Memory, "memory"},
          {kV1Pids, "pids"},     {kV1Blkio, "blkio"}, {kV1Hugetlb, "hugetlb"}};
      for (auto [which, name] : dirs) {
        std::string p = cgroup_mount + "/" + name;
        if (Exists(p + "/cgroup.procs")) h.mount[which] = p;
      }
    }
  }
  bool any = false;
  for (const auto& m : h.mount) any |= !m.empty();
  if (!any) return NotFound("no cgroup hierarchy found under " + cgroup_mount);
  if (h.has(kUnified)) {
    std::string controllers;
    if (ReadWhole(h.mount[kUnified] + "/cgroup.controllers", &controllers)) ParseV2Controllers(controllers, &h);
  }
  return h;
}

std::vector<std::string> MissingSubtrees(const CgroupHierarchies& h, const std::vector<std::string>& subtrees) {
  std::vector<std::string> missing;
  for (const std::string& subtree : subtrees) {
    bool found = false;
    for (const std::string& mount : h.mount) {
      struct stat st;
      if (!mount.empty() && stat((mount + subtree).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) found = true;
    }
    if (!found) missing.push_back(subtree);
  }
  return missing;
}

}  // namespace statlet
