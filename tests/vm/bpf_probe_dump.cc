// statlet_vm_bpf_dump: loads statlet's eBPF probes in the guest before the workloads
// start, then, when a line arrives on the control FIFO, collects once for every cgroup
// directory and prints what the probes saw as JSON. Counters start at zero when a probe loads, so the
// guest starts this first; the host compares the numbers with the cgroup files.
//
// usage: statlet_vm_bpf_dump --ready FILE --control FIFO [--cgroup-root DIR] > out.json
#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <unordered_map>
#include <vector>

#include "bpf/bpf_probes.h"

namespace {

using Json = nlohmann::ordered_json;

// Every cgroup directory below root (path relative to root) by inode.
void AddDirs(const std::string& root, const std::string& rel, std::map<uint64_t, std::string>* dirs) {
  struct stat st;
  std::string full = root + rel;
  if (::stat(full.c_str(), &st) != 0) return;  // removed meanwhile
  (*dirs)[st.st_ino] = rel.empty() ? "/" : rel;
  DIR* d = ::opendir(full.c_str());
  if (d == nullptr) return;
  while (dirent* e = ::readdir(d)) {
    if (e->d_type == DT_DIR && e->d_name[0] != '.') AddDirs(root, rel + "/" + e->d_name, dirs);
  }
  ::closedir(d);
}

Json StatsJson(const statlet::BpfCgroupStats& b, const std::vector<uint64_t>* per_cpu) {
  Json j = Json::object();
  auto put = [&](const char* k, const statlet::Opt<uint64_t>& v) {
    if (v) j[k] = *v;
  };
  put("minor_faults", b.minor_faults);
  put("major_faults", b.major_faults);
  put("oom_kills", b.oom_kills);
  put("tcp_retransmits", b.tcp_retransmits);
  put("tcp_drops", b.tcp_drops);
  put("net_rx_bytes", b.net_rx_bytes);
  put("net_tx_bytes", b.net_tx_bytes);
  put("runq_latency_sum_ns", b.runq_latency_sum_ns);
  if (per_cpu) j["per_cpu_ns"] = *per_cpu;
  return j;
}

}  // namespace

int main(int argc, char** argv) {
  std::string ready, control, root = "/sys/fs/cgroup";
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--ready") ready = argv[i + 1];
    else if (flag == "--control") control = argv[i + 1];
    else if (flag == "--cgroup-root") root = argv[i + 1];
  }
  statlet::BpfOptions options = statlet::BpfOptions::WithMode(statlet::BpfMode::kAuto);
  options.probes = statlet::BpfProbes::ProbeNames();  // the scheduler probes too
  options.cgroup2_root = root;
  auto probes = statlet::BpfProbes::Create(options);
  if (!probes.ok()) {
    std::fprintf(stderr, "statlet_vm_bpf_dump: %s\n", probes.status().message().c_str());
    return 1;
  }
  Json status = Json::array();
  for (const auto& s : (*probes)->ProbeStatus())
    status.push_back(Json{{"probe", s.probe}, {"up", s.up}, {"error", s.error}});
  if (!ready.empty()) std::ofstream(ready) << status.dump() << "\n";

  std::string line;
  std::ifstream control_in(control);
  if (!std::getline(control_in, line)) {  // the guest's "collect now"
    std::fprintf(stderr, "statlet_vm_bpf_dump: no line on %s\n", control.c_str());
    return 1;
  }

  std::map<uint64_t, std::string> dirs;
  AddDirs(root, "", &dirs);
  std::vector<uint64_t> ids;
  for (const auto& [id, path] : dirs) ids.push_back(id);
  std::unordered_map<uint64_t, statlet::BpfCgroupStats> by_id;
  std::vector<statlet::OomEvent> ooms;
  (*probes)->Collect(ids, &by_id, &ooms, true, true);

  Json out;
  out["probes"] = status;
  Json cgroups = Json::object();
  for (const auto& [id, path] : dirs) {
    auto it = by_id.find(id);
    if (it == by_id.end()) continue;
    Json c = StatsJson(it->second, (*probes)->PerCpuNs(id));
    c["cgroup_id"] = id;
    cgroups[path] = c;
  }
  out["cgroups"] = cgroups;
  Json jo = Json::array();
  for (const auto& e : ooms)
    jo.push_back(
        Json{{"pid", e.pid}, {"comm", e.comm}, {"cgroup_id", e.cgroup_id}, {"constraint_memcg", e.constraint_memcg}});
  out["ooms"] = jo;
  std::cout << out.dump(1, ' ', false, Json::error_handler_t::replace) << "\n";
  return 0;
}
