#include "tests/prometheus/promtool.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace statlet::testing {

PromtoolResult PromtoolCheckMetrics(const std::string& exposition) {
  PromtoolResult r;
  char path[] = "/tmp/statlet-promtool-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) return r;
  ::close(fd);
  { std::ofstream(path, std::ios::binary) << exposition; }
  std::string cmd = std::string("promtool check metrics < ") + path + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  ::unlink(path);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  size_t pos = 0;
  while (pos < r.output.size()) {
    size_t end = r.output.find('\n', pos);
    if (end == std::string::npos) end = r.output.size();
    std::string line = r.output.substr(pos, end - pos);
    pos = end + 1;
    if (line.empty()) continue;
    // cAdvisor's own names, kept for compatibility: a counter without "_total" and a gauge
    // with it.
    if (line.rfind("container_memory_failcnt counter metrics should have \"_total\" suffix", 0) == 0) continue;
    if (line.rfind("container_hugetlb_failcnt counter metrics should have \"_total\" suffix", 0) == 0) continue;
    if (line.rfind("container_fs_inodes_total non-counter metrics should not have \"_total\" suffix", 0) == 0) continue;
    // cAdvisor's machine gauges ending in "_count" (prometheus_machine.go).
    bool machine_count = false;
    for (const char* name : {"machine_dimm_count", "machine_thread_siblings_count", "machine_node_hugepages_count"}) {
      machine_count = machine_count || line.rfind(std::string(name) + " non-histogram and non-summary", 0) == 0;
    }
    if (machine_count) continue;
    r.unexpected_findings.push_back(line);
  }
  return r;
}

}  // namespace statlet::testing
