#include "tests/bpf/iter_file_compare.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <map>

#include "collector/cgroup_file_source.h"
#include "collector/kept_file.h"
#include "collector/parse/cgroup_parsers.h"

namespace statlet::testing {
namespace {

// The files a CgroupFileSource may render: the ones the collector reads of each hierarchy.
std::vector<const char*> Candidates(Hierarchy h) {
  switch (h) {
    case kUnified:
      return {"cpu.stat",      "memory.current",      "memory.peak",  "memory.swap.current", "memory.stat",
              "memory.events", "memory.events.local", "pids.current", "pids.events"};
    case kV1Cpu: return {"cpu.stat"};
    case kV1Cpuacct: return {"cpuacct.usage_percpu", "cpuacct.usage_user", "cpuacct.usage_sys"};
    case kV1Memory:
      return {"memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.failcnt", "memory.kmem.usage_in_bytes",
              "memory.oom_control"};
    default: return {};
  }
}

using Values = std::map<std::string, uint64_t>;

bool ParseValues(std::string_view text, Values* out) {
  out->clear();
  uint64_t single;
  if (text.find(' ') == std::string_view::npos && parse::ParseU64(text, &single)) {
    (*out)[""] = single;
    return true;
  }
  if (!text.empty() && text[0] >= '0' && text[0] <= '9') {  // a list: cpuacct.usage_percpu
    std::vector<uint64_t> list;
    if (!parse::ParseU64List(text, &list)) return false;
    for (size_t i = 0; i < list.size(); i++) (*out)["cpu" + std::to_string(i)] = list[i];
    return true;
  }
  return parse::ForEachFlatKeyed(text, [&](std::string_view k, uint64_t v) { (*out)[std::string(k)] = v; }) == 0;
}

bool ReadValues(const std::string& path, Values* out) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ReadBuffer buf;
  const int err = PreadWhole(fd, &buf);
  close(fd);
  return err == 0 && ParseValues(buf.view(), out);
}

}  // namespace

bool FieldReading::within() const { return std::min(before, after) <= source && source <= std::max(before, after); }

std::vector<std::string> CgroupDirs(const std::string& root, const std::string& below) {
  std::vector<std::string> out{below.empty() ? "/" : below};
  DIR* d = opendir((root + below).c_str());
  if (d == nullptr) return out;
  std::vector<std::string> children;
  while (dirent* e = readdir(d)) {
    if (e->d_type == DT_DIR && e->d_name[0] != '.') children.push_back(below + "/" + e->d_name);
  }
  closedir(d);
  std::sort(children.begin(), children.end());
  for (const std::string& c : children) {
    std::vector<std::string> sub = CgroupDirs(root, c);
    out.insert(out.end(), sub.begin(), sub.end());
  }
  return out;
}

Comparison CompareWithFiles(CgroupFileSource& source, Hierarchy h, const std::string& root,
                            const std::vector<std::string>& cgroups) {
  Comparison c;
  struct Target {
    std::string cgroup, file, path;
    int index;
    uint64_t id;
    Values before, after;
    bool ok = true;
  };
  std::vector<Target> targets;
  for (const char* file : Candidates(h)) {
    if (source.FileIndex(h, file) >= 0) c.files.push_back(file);
  }
  for (const std::string& cg : cgroups) {
    const std::string dir = cg == "/" ? root : root + cg;
    struct stat st;
    if (stat(dir.c_str(), &st) != 0) continue;
    for (const std::string& file : c.files) {
      const std::string path = dir + "/" + file;
      if (access(path.c_str(), F_OK) != 0) continue;  // not on this cgroup
      targets.push_back({cg, file, path, source.FileIndex(h, file), st.st_ino, {}, {}});
    }
  }
  for (Target& t : targets) t.ok = ReadValues(t.path, &t.before);
  const Status walked = source.Refresh();
  for (Target& t : targets) t.ok = t.ok && ReadValues(t.path, &t.after);
  if (!walked.ok()) {
    c.errors.push_back("walk: " + walked.message());
    return c;
  }
  ReadBuffer buf;
  Values rendered;
  for (const Target& t : targets) {
    if (!t.ok) {
      c.errors.push_back("cannot read " + t.path);
      continue;
    }
    if (!source.Render(t.id, t.index, &buf)) {
      c.not_rendered.push_back(t.cgroup + " " + t.file);
      continue;
    }
    c.rendered++;
    if (!ParseValues(buf.view(), &rendered)) {
      c.errors.push_back("unparsable rendering of " + t.path + ": " + std::string(buf.view()));
      continue;
    }
    for (const auto& [key, value] : rendered) {
      auto b = t.before.find(key), a = t.after.find(key);
      if (b == t.before.end() || a == t.after.end()) {
        c.errors.push_back(t.path + " has no key \"" + key + "\" the source rendered");
        continue;
      }
      c.fields.push_back({t.cgroup, t.file, key, b->second, value, a->second});
    }
  }
  return c;
}

}  // namespace statlet::testing
