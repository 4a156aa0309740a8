// statlet deployed as deploy/kubernetes/daemonset.yaml says, under the stage's real
// containerd and runc: the image built by deploy/image/build_image.py, the pod and container
// created over CRI from the manifest itself (daemonset_pod.h: its args, env, hostPath mounts
// read-only where it says so, read-only root filesystem, runAsUser, ALL capabilities
// dropped and exactly its added ones, the node's network and PID namespaces).
//
// Each feature is judged against the stage's own agent, which runs on the host with every
// privilege: for the workload pods, the containerized agent must serve the same series (same
// label sets, runtime names included) of each feature's families. The eBPF probes are judged
// against the same image run privileged: with the manifest's capabilities they must load
// exactly where the kernel lets a privileged agent load them. Then each added capability is
// dropped in turn: the features that stop are the capability's documented reason
// (kCapabilityReasons), and a capability whose absence stops nothing fails the test (the
// manifest must not ask for it).
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/daemonset_pod.h"
#include "tests/e2e/e2e_shared.h"
#include "tests/support/http_client.h"

namespace statlet::e2e {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

constexpr int kMetricsPort = 10340;  // the manifest's --web.listen-address
constexpr int kHealthPort = 10341;   // its --web.health-listen-address (127.0.0.1)

// The features each added capability exists for (what stops without it). Keep in step with
// the comment above the capabilities in deploy/kubernetes/daemonset.yaml.
const std::map<std::string, std::set<std::string>>& kCapabilityReasons() {
  static const auto* m = new std::map<std::string, std::set<std::string>>{
      {"SYS_PTRACE", {"pod network"}},
      {"BPF", {"ebpf"}},
      {"PERFMON", {"ebpf"}},
      {"SYS_NICE", {"exit watcher priority"}},
  };
  return *m;
}

// A feature and the families that show it, per workload series.
struct Feature {
  std::string name;
  std::vector<std::string> families;
};
const std::vector<Feature>& Features() {
  static const auto* f = new std::vector<Feature>{
      {"cgroup stats",
       {"container_cpu_usage_seconds_total", "container_memory_working_set_bytes",
        "container_spec_memory_limit_bytes"}},
      {"processes", {"container_processes", "container_threads"}},
      {"open files", {"container_file_descriptors", "container_sockets"}},
      {"pod network", {"container_network_receive_bytes_total", "container_network_transmit_bytes_total"}},
  };
  return *f;
}

std::string ContainerdNetns() {
  std::ifstream in(g_stage->dir() + "/containerd.pid");
  std::string pid;
  in >> pid;
  return "/proc/" + pid + "/ns/net";
}

// GET in containerd's network namespace: the node's network for the harness' pods.
StatusOr<testing::RawResponse> HttpGetInNetns(const std::string& netns, int port, const std::string& path) {
  StatusOr<testing::RawResponse> out = Internal("not run");
  std::thread t([&] {
    int fd = open(netns.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      out = ErrnoStatus(errno, "open " + netns);
      return;
    }
    if (setns(fd, CLONE_NEWNET) != 0) {  // this thread only
      out = ErrnoStatus(errno, "setns " + netns);
      close(fd);
      return;
    }
    close(fd);
    auto r = testing::TimedGet(port, path, "", milliseconds(5000)).response;
    if (r) {
      out = std::move(*r);
    } else {
      out = Unavailable("no answer to GET " + path);
    }
  });
  t.join();
  return out;
}

// A series and whether its value is non-zero (an agent that may not read a file may still
// name the series, with 0).
std::string Key(const Sample& s) {
  std::string k = s.name + "{";
  for (const auto& [l, v] : s.labels) k += l + "=" + v + ",";
  return k + (s.value > 0 ? "} > 0" : "} = 0");
}

bool IsWorkload(const Sample& s) {
  auto it = s.labels.find("namespace");
  return it != s.labels.end() && (it->second == "e2e-a" || it->second == "e2e-b");
}

// Label sets of a feature's families for the workload pods.
std::set<std::string> FeatureSeries(const std::vector<Sample>& samples, const Feature& f) {
  std::set<std::string> out;
  for (const Sample& s : samples) {
    if (IsWorkload(s) && std::find(f.families.begin(), f.families.end(), s.name) != f.families.end()) {
      out.insert(Key(s));
    }
  }
  return out;
}

std::map<std::string, double> ProbesUp(const std::vector<Sample>& samples) {
  std::map<std::string, double> out;
  for (const Sample& s : samples) {
    if (s.name == "statlet_bpf_probe_up") out[s.labels.at("probe")] = s.value;
  }
  return out;
}

double Value(const std::vector<Sample>& samples, const std::string& name) {
  for (const Sample& s : samples) {
    if (s.name == name) return s.value;
  }
  return -1;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

struct AgentRun {
  std::string error;  // the agent did not start or answer
  std::vector<Sample> scrape;
  std::set<std::string> working;           // features that work
  std::map<std::string, std::string> why;  // feature → what differed
  std::map<std::string, double> probes;    // statlet_bpf_probe_up
  std::string log;
};

class DeployedAgent {
 public:
  explicit DeployedAgent(std::string manifest) : manifest_(std::move(manifest)) {}

  // Runs the manifest's pod with `caps` added (all of the manifest's when null) or
  // privileged, judges every feature against `host` (the stage agent's scrape), removes it.
  AgentRun Start(const std::string& variant, const std::vector<std::string>* caps, bool privileged,
                 const std::vector<Sample>& host) {
    AgentRun run;
    const std::string dir = g_stage->dir() + "/deployed-" + variant;
    mkdir(dir.c_str(), 0755);
    mkdir((dir + "/run").c_str(), 0755);
    ManifestHost mh;
    // The kubelet's configuration as a v1.36 node with tiered protection has it.
    std::ofstream(dir + "/kubelet-config.yaml")
        << "apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nfeatureGates: {MemoryQoS: true}\n"
           "memoryReservationPolicy: TieredReservation\n";
    mh.host_paths = {{"/run/statlet", dir + "/run"},
                     {"/run/containerd", g_stage->dir()},
                     {"/var/lib/kubelet/config.yaml", dir + "/kubelet-config.yaml"}};
    mh.node_name = "e2e-node";
    mh.service_env = {{"KUBERNETES_SERVICE_HOST", "10.96.0.1"}, {"KUBERNETES_SERVICE_PORT", "443"}};
    auto m = PodFromDaemonSet(manifest_, mh);
    if (!m.ok()) {
      run.error = m.status().ToString();
      return run;
    }
    m->pod.log_directory = dir;
#ifdef STATLET_E2E_SANITIZED
    // ASan's shadow memory and quarantine are not what the limit was sized for.
    m->container.mutable_linux()->mutable_resources()->set_memory_limit_in_bytes(0);
#endif
    m->container.set_log_path("statlet.log");
    auto* sc = m->container.mutable_linux()->mutable_security_context();
    if (caps != nullptr) {
      sc->mutable_capabilities()->clear_add_capabilities();
      for (const auto& c : *caps) sc->mutable_capabilities()->add_add_capabilities(c);
    }
    if (privileged) {
      sc->set_privileged(true);
      m->pod.privileged = true;
    }
    auto pod = g_stage->driver().RunPod(m->pod);
    if (!pod.ok()) {
      run.error = "RunPodSandbox: " + pod.status().ToString();
      return run;
    }
    auto id = g_stage->driver().StartContainer(*pod, m->container);
    if (id.ok()) {
      run = Observe(*id, dir, host);
    } else {
      run.error = "Create/StartContainer: " + id.status().ToString();
    }
    run.log = ReadFile(dir + "/statlet.log");
    Status removed = g_stage->driver().RemovePod(*pod);
    EXPECT_TRUE(removed.ok()) << removed.ToString();
    return run;
  }

 private:
  AgentRun Observe(const std::string& id, const std::string& dir, const std::vector<Sample>& host) {
    AgentRun run;
    const std::string netns = ContainerdNetns();
    // Ready: /readyz on the probe address (first collection done) and the CRI socket there.
    auto deadline = Clock::now() + std::chrono::seconds(30);
    struct stat st;
    while (true) {
      auto r = HttpGetInNetns(netns, kHealthPort, "/readyz");
      if (r.ok() && r->status == 200 && stat((dir + "/run/cri.sock").c_str(), &st) == 0) break;
      auto status = g_stage->driver().ContainerStatus(id);
      if (status.ok() && status->state() == lifecycle::CONTAINER_EXITED) {
        run.error = "exited with " + std::to_string(status->exit_code()) + " " + status->reason();
        return run;
      }
      if (Clock::now() > deadline) {
        run.error = "not ready within 30 s";
        return run;
      }
      std::this_thread::sleep_for(milliseconds(50));  // polling a condition, with a deadline
    }
    // Names come from the runtime client's first listing: wait for it (statlet_runtime_up
    // and a workload series with a pod name), then judge one scrape.
    deadline = Clock::now() + std::chrono::seconds(15);
    while (true) {
      auto r = HttpGetInNetns(netns, kMetricsPort, "/metrics");
      if (r.ok() && r->status == 200) {
        auto parsed = ParseExposition(r->body);
        if (parsed.ok()) {
          run.scrape = std::move(*parsed);
          bool named = std::any_of(run.scrape.begin(), run.scrape.end(), [](const Sample& s) {
            return s.name == "container_cpu_usage_seconds_total" && IsWorkload(s);
          });
          if (Value(run.scrape, "statlet_runtime_up") == 1 && named) break;
        }
      }
      if (Clock::now() > deadline) break;  // judged as it is
      std::this_thread::sleep_for(milliseconds(100));
    }
    if (run.scrape.empty()) {
      run.error = "/metrics did not answer";
      return run;
    }
    run.probes = ProbesUp(run.scrape);
    for (const Feature& f : Features()) {
      std::set<std::string> want = FeatureSeries(host, f), got = FeatureSeries(run.scrape, f);
      if (!want.empty() && want == got) {
        run.working.insert(f.name);
        continue;
      }
      std::string why = std::to_string(got.size()) + " of the host agent's " + std::to_string(want.size()) + " series";
      for (const auto& k : want) {
        if (!got.count(k)) {
          why += "; missing e.g. " + k;
          break;
        }
      }
      run.why[f.name] = why;
    }
    if (Value(run.scrape, "statlet_runtime_up") == 1) run.working.insert("runtime names");
    // Real-time where the container's cgroup has real-time runtime, else nice -10: either
    // needs CAP_SYS_NICE.
    const bool has_nice = std::any_of(run.scrape.begin(), run.scrape.end(),
                                      [](const Sample& s) { return s.name == "statlet_exit_watcher_nice"; });
    if (Value(run.scrape, "statlet_exit_watcher_realtime") == 1 ||
        (has_nice && Value(run.scrape, "statlet_exit_watcher_nice") < 0)) {
      run.working.insert("exit watcher priority");
    }
    // The CRI socket: stats of the burner's container.
    auto channel = CriChannel(dir + "/run/cri.sock");
    auto stub = v1::RuntimeService::NewStub(channel);
    v1::ListContainerStatsResponse resp;
    grpc::Status s = stub->ListContainerStats(CallContext().get(), v1::ListContainerStatsRequest(), &resp);
    const std::string burner = g_pods.at("cpu-burner").containers.at("burn");
    if (s.ok()) {
      for (const auto& c : resp.stats()) {
        if (c.attributes().id() == burner && c.cpu().usage_core_nano_seconds().value() > 0)
          run.working.insert("cri stats");
      }
    }
    if (!run.working.count("cri stats")) run.why["cri stats"] = s.ok() ? "burner not listed" : s.error_message();
    bool any_probe = std::any_of(run.probes.begin(), run.probes.end(), [](const auto& p) { return p.second == 1; });
    if (any_probe) run.working.insert("ebpf");
    return run;
  }

  std::string manifest_;
};

std::string Describe(const AgentRun& r) {
  if (!r.error.empty()) return "did not run: " + r.error + "\nlog:\n" + r.log;
  std::string s = "works:";
  for (const auto& f : r.working) s += " [" + f + "]";
  for (const auto& [f, why] : r.why) s += "\n  " + f + ": " + why;
  s += "\n  probes:";
  for (const auto& [p, up] : r.probes) s += " " + p + "=" + std::to_string(static_cast<int>(up));
  // The agent's own word on what did not load or could not be read.
  std::istringstream log(r.log);
  for (std::string line; std::getline(log, line);) {
    if (line.find("\"level\":\"info\"") == std::string::npos) s += "\n  log: " + line.substr(0, 400);
  }
  return s;
}

TEST(E2e, DaemonSetManifestRunsUnderContainerdWithOnlyTheCapabilitiesItNeeds) {
  REQUIRE_STAGE();
  // Loaded as README tells an operator to on a node without a registry.
  Status imported =
      RunCommand({"env", "CONTAINERD_ADDRESS=" + g_stage->dir() + "/containerd.sock",
                  STATLET_E2E_SOURCE_DIR "/deploy/image/publish.sh", "load", STATLET_E2E_IMAGE_ARCHIVE, "containerd"},
                 g_stage->dir() + "/statlet-image-import.log");
  ASSERT_TRUE(imported.ok()) << imported.ToString() << "\n" << Tail(g_stage->dir() + "/statlet-image-import.log", 20);

  DeployedAgent agent(STATLET_E2E_DAEMONSET);
  ManifestHost probe_host;
  auto manifest = PodFromDaemonSet(STATLET_E2E_DAEMONSET, probe_host);
  ASSERT_TRUE(manifest.ok()) << manifest.status().ToString();
  ASSERT_TRUE(g_stage->driver().WaitForImage(manifest->image, std::chrono::seconds(20)).ok());
  const std::vector<std::string> manifest_caps = manifest->added_capabilities;

  auto host_scrape = [] {
    auto r = testing::TimedGet(g_stage->metrics_port(), "/metrics", "", milliseconds(10000)).response;
    EXPECT_TRUE(r && r->status == 200);
    auto parsed = ParseExposition(r ? r->body : "");
    return parsed.ok() ? *parsed : std::vector<Sample>{};
  };

  // The reference for the eBPF probes: the same image and manifest, privileged.
  const AgentRun privileged = agent.Start("privileged", nullptr, /*privileged=*/true, host_scrape());
  ASSERT_EQ(privileged.error, "") << Describe(privileged);
  std::printf("privileged: %s\n", Describe(privileged).c_str());

  const AgentRun full = agent.Start("manifest", nullptr, false, host_scrape());
  ASSERT_EQ(full.error, "") << Describe(full);
  std::printf("manifest (%zu capabilities): %s\n", manifest_caps.size(), Describe(full).c_str());
  for (const std::string f : {"cgroup stats", "processes", "open files", "pod network", "runtime names", "cri stats"}) {
    EXPECT_TRUE(full.working.count(f)) << "with the manifest's capabilities, " << f
                                       << " does not work: " << Describe(full);
  }
  EXPECT_EQ(full.probes, privileged.probes) << "the eBPF probes must load where a privileged agent loads them";
  if (privileged.working.count("ebpf")) {
    EXPECT_TRUE(full.working.count("ebpf"));
  }

  // Each added capability, dropped in turn.
  std::set<std::string> full_features = full.working;
  for (const std::string& cap : manifest_caps) {
    std::vector<std::string> fewer;
    for (const auto& c : manifest_caps) {
      if (c != cap) fewer.push_back(c);
    }
    const AgentRun run = agent.Start("without-" + cap, &fewer, false, host_scrape());
    std::set<std::string> stopped;
    if (!run.error.empty()) {
      stopped = full_features;
    } else {
      for (const auto& f : full_features) {
        if (!run.working.count(f)) stopped.insert(f);
      }
    }
    std::string list;
    for (const auto& f : stopped) list += " [" + f + "]";
    std::printf("without %s: stops%s\n  %s\n", cap.c_str(), list.empty() ? " nothing" : list.c_str(),
                Describe(run).c_str());
    EXPECT_FALSE(stopped.empty()) << cap << " is added by the manifest but nothing stops without it: remove it";
    auto reason = kCapabilityReasons().find(cap);
    ASSERT_NE(reason, kCapabilityReasons().end()) << cap << " has no documented reason in kCapabilityReasons";
    // eBPF stops only where the privileged agent had probes to lose.
    std::set<std::string> expected = reason->second;
    if (!privileged.working.count("ebpf")) expected.erase("ebpf");
    EXPECT_EQ(stopped, expected) << "without " << cap << ": " << Describe(run);
  }
}

}  // namespace
}  // namespace statlet::e2e
