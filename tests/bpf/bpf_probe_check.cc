// Loads the probes in the given mode, prints each probe's status and collects once for its
// own cgroup. The fallback test runs it with BPF capabilities dropped.
//   statlet_bpf_probe_check --bpf=auto|on|off
// Exit 0 with one "probe=<name> up=<0|1> error=<text>" line per probe and "collect=ok";
// exit 2 when Create fails (mode on), 1 on bad usage.
#include <sys/stat.h>

#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

#include "bpf/bpf_probes.h"

namespace {

uint64_t OwnCgroupId() {
  std::ifstream f("/proc/self/cgroup");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("0::", 0) != 0) continue;
    for (const char* root : {"/sys/fs/cgroup/unified", "/sys/fs/cgroup"}) {
      struct stat st;
      if (stat((std::string(root) + line.substr(3)).c_str(), &st) == 0 && S_ISDIR(st.st_mode)) return st.st_ino;
    }
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  statlet::BpfMode mode;
  if (argc != 2 || std::strncmp(argv[1], "--bpf=", 6) != 0 || !statlet::ParseBpfMode(argv[1] + 6, &mode)) {
    std::fprintf(stderr, "usage: %s --bpf=auto|on|off\n", argv[0]);
    return 1;
  }
  auto probes = statlet::BpfProbes::Create(statlet::BpfOptions::WithMode(mode));
  if (!probes.ok()) {
    std::fprintf(stderr, "error: %s\n", probes.status().ToString().c_str());
    return 2;
  }
  for (const statlet::BpfProbeStatus& s : (*probes)->ProbeStatus()) {
    std::printf("probe=%s up=%d error=%s\n", s.probe.c_str(), s.up ? 1 : 0, s.error.c_str());
  }
  std::unordered_map<uint64_t, statlet::BpfCgroupStats> by_id;
  std::vector<statlet::OomEvent> ooms;
  (*probes)->Collect({OwnCgroupId()}, &by_id, &ooms, true, true);
  std::printf("collect=ok entries=%zu\n", by_id.size());
  return 0;
}
