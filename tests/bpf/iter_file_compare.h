// Both ways at the same moment: for given cgroups, every file a CgroupFileSource renders is
// read from cgroupfs, then the source walks once, then the files are read again. Each
// value the source rendered must lie between the two file readings (equal when the cgroup
// was idle). Used by the live test on this host and by the guest of tests/vm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "collector/cgroup_hierarchies.h"

namespace statlet {
class CgroupFileSource;
}

namespace statlet::testing {

struct FieldReading {
  std::string cgroup;  // path below the root
  std::string file;    // "memory.stat"
  std::string key;     // "anon"; "" for a single-value file
  uint64_t before = 0, source = 0, after = 0;
  bool within() const;
};

struct Comparison {
  std::vector<FieldReading> fields;
  std::vector<std::string> files;         // the files the source renders here
  std::vector<std::string> errors;        // files that could not be read, keys the file lacks
  size_t rendered = 0;                    // (cgroup, file) pairs the source rendered
  std::vector<std::string> not_rendered;  // "cgroup file" it did not render (no value there)
};

// `root` is the mount of hierarchy `h`; `cgroups` are paths below it ("/a/b").
Comparison CompareWithFiles(CgroupFileSource& source, Hierarchy h, const std::string& root,
                            const std::vector<std::string>& cgroups);
inline Comparison CompareWithFiles(CgroupFileSource& source, const std::string& root,
                                   const std::vector<std::string>& cgroups) {
  return CompareWithFiles(source, kUnified, root, cgroups);
}

// Every cgroup directory below root, as paths below it ("/" for root itself), parents first.
std::vector<std::string> CgroupDirs(const std::string& root, const std::string& below = "");

}  // namespace statlet::testing
