// Builds cgroup v2 directory trees from recorded file contents
// (tests/fixtures/cgroup-v2-debian-6.1.txt, recorded on Debian 12's 6.1 kernel under real
// workloads) so the v2 readers run on real formats this host's kernel cannot show.
#pragma once

#include <map>
#include <string>

namespace statlet::testing {

// fixture dir (as recorded, e.g. "/sys/fs/cgroup/kubepods.slice/pod1/ctr_cpu") → file → content
using RecordedCgroups = std::map<std::string, std::map<std::string, std::string>>;

RecordedCgroups LoadRecordedCgroups(const std::string& fixture_path);

// A temporary directory removed (recursively) on destruction.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

void WriteFile(const std::string& path, const std::string& content);
void MakeDirs(const std::string& path);

}  // namespace statlet::testing
