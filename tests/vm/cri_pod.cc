// Plays the kubelet against the guest's containerd over CRI (tests/e2e/cri_driver.h): a
// host-network pod under CGROUP_ROOT and one container in it whose linux.resources carry a
// memory limit and, in `unified`, the memory.min and memory.high a kubelet with Memory QoS
// on passes to a cgroup-v2 runtime. The container runs `sleep` and stays; what was created
// goes to OUT as "key=value" lines for guest/runtime_runs.sh.
//
// usage: statlet_vm_cri_pod --socket PATH --image NAME --cgroup-root PATH --limit BYTES
//                           --min BYTES --high BYTES --out FILE
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "tests/e2e/cri_driver.h"

namespace {

int Fail(const std::string& what) {
  std::fprintf(stderr, "statlet_vm_cri_pod: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  std::map<std::string, std::string> args;
  for (int i = 1; i + 1 < argc; i += 2) {
    if (std::strncmp(argv[i], "--", 2) != 0) return Fail(std::string("unexpected argument ") + argv[i]);
    args[argv[i] + 2] = argv[i + 1];
  }
  for (const char* k : {"socket", "image", "cgroup-root", "limit", "min", "high", "out"}) {
    if (!args.count(k)) return Fail(std::string("missing --") + k);
  }
  using statlet::e2e::ContainerSpec;
  using statlet::e2e::CriDriver;
  using statlet::e2e::PodSpec;
  CriDriver driver(args["socket"], args["cgroup-root"], args["image"]);
  // Under TCG the CRI plugin may take a while to list an image just imported with ctr.
  if (auto s = driver.WaitForImage(std::chrono::seconds(60)); !s.ok()) return Fail(s.ToString());
  PodSpec pod_spec{"memqos", "vm-runtime", {{"app", "memqos"}}};
  pod_spec.host_network = true;      // no CNI in the guest: the node's network, as hostNetwork pods have
  pod_spec.qos_class = "burstable";  // a request below its limit
  auto pod = driver.RunPod(pod_spec);
  if (!pod.ok()) return Fail(pod.status().ToString());
  ContainerSpec spec{"qos", {"sleep", "2147483647"}};
  spec.memory_limit_bytes = std::stoll(args["limit"]);
  spec.unified = {{"memory.min", args["min"]}, {"memory.high", args["high"]}};
  auto id = driver.StartContainer(*pod, spec);
  if (!id.ok()) return Fail(id.status().ToString());
  std::ofstream out(args["out"]);
  out << "pod_id=" << pod->id << "\npod_uid=" << pod->uid << "\ncontainer_id=" << *id
      << "\npod_cgroup=" << pod->cgroup_parent << "\ncgroup=" << pod->cgroup_parent << "/" << *id << "\n";
  return out.good() ? 0 : Fail("cannot write " + args["out"]);
}
