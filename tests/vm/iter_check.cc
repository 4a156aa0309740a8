// statlet_vm_iter_check: in the guest, every file the eBPF cgroup iterator renders, for
// every cgroup, read both ways at the same moment (files, one walk, files again) and
// printed as JSON for the host's check_results.py. Rounds repeat (at most 5) until one has
// every value between its two file readings, so a gauge that moved both ways between the
// reads does not count as a mismatch; the host sees how many rounds it took.
//
// usage: statlet_vm_iter_check [--cgroup-root DIR] > out.json
#include <cstdio>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>

#include "bpf/bpf_probes.h"
#include "tests/bpf/iter_file_compare.h"

int main(int argc, char** argv) {
  std::string root = "/sys/fs/cgroup";
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--cgroup-root") root = argv[i + 1];
  }
  statlet::BpfOptions options = statlet::BpfOptions::WithMode(statlet::BpfMode::kOn);
  options.probes = {"cgroup_stats"};
  options.cgroup2_root = root;
  auto probes = statlet::BpfProbes::Create(options);
  if (!probes.ok() || (*probes)->FileSource() == nullptr) {
    std::fprintf(stderr, "statlet_vm_iter_check: %s\n",
                 probes.ok() ? "no file source" : probes.status().ToString().c_str());
    return 1;
  }
  statlet::testing::Comparison c;
  int rounds = 0;
  for (bool settled = false; !settled && rounds < 5;) {
    rounds++;
    c = statlet::testing::CompareWithFiles(*(*probes)->FileSource(), root, statlet::testing::CgroupDirs(root));
    settled = true;
    for (const auto& f : c.fields) settled = settled && f.within();
  }
  nlohmann::ordered_json out;
  out["rounds"] = rounds;
  out["files"] = c.files;
  out["rendered"] = c.rendered;
  out["not_rendered"] = c.not_rendered;
  out["errors"] = c.errors;
  auto fields = nlohmann::ordered_json::array();
  for (const auto& f : c.fields) fields.push_back({f.cgroup, f.file, f.key, f.before, f.source, f.after});
  out["fields"] = fields;
  std::cout << out.dump() << "\n";
  return 0;
}
