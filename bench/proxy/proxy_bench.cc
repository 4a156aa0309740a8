// Upstream api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

// What proxy mode costs a kubelet: the same client (upstream cri-api v0.36.3, the
// kubelet's channel settings) calls a real containerd straight and through statlet, in
// alternating order round after round, in one run:
//   Version, ListContainers (over --pods pods), ContainerStatus: per-call p50 and p99 of
//     each side, and their difference (what statlet adds);
//   a pod's cycle RunPodSandbox → CreateContainer → StartContainer → StopContainer →
//     RemoveContainer → StopPodSandbox → RemovePodSandbox: its time, and statlet/direct.
// With --baseline BINARY a second proxy, another statlet binary (e.g. an earlier
// revision's), stands beside the first on its own socket and takes its turn in every round
// too (the sides' order changes each round): both statlets did the same calls in the same
// run. Each proxy's CPU (utime+stime of its process, collections in the background
// included) over its measured calls is reported per passed call.
// The two proxies are started alike (the same flags, one probe connection each, in slot
// order: --baseline-first starts the baseline first), and every side takes a connection
// of its own at each of its turns, warmed before it is measured: gRPC's server hands each
// new connection to one of its completion queues' pollers in turn, so the round's
// connection, not the process's start, decides which poller reads it, and both proxies
// see the same sequence of connections. Running the bench a second time with
// --baseline-first measures each binary in the other slot.
// With --relay, byte_relay (bench/proxy/byte_relay.cc: one thread copying bytes between
// the caller's connection and one of its own to containerd, nothing parsed) takes its turn
// in every round as well: relay over direct is what one more process hop costs by itself
// on the machine, statlet over relay what statlet costs beyond that hop.
// Figures are medians over the rounds with their [min–max]. Then memory: a statlet in
// stats mode (no --cri.proxy) and the proxy beside it answer the same stats calls, the
// proxy passes --passed calls more, and both resident sets are read.
//
// Targets (docs/cri.md): ≤ +100 µs p50 and ≤ +1 ms p99 per passed unary call, the cycle ≤
// 1.05× direct, proxy RSS ≤ stats-mode RSS + 5 MiB after 10,000 passed calls. The bench
// reports them and exits non-zero only when a call fails.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "tests/proxy/kubelet_calls.h"
#include "tests/proxy/proxy_stage.h"
#include "tests/support/wait_for.h"

namespace statlet::proxy_test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::seconds;

struct Args {
  int rounds = 10;
  int calls = 300;  // per unary call kind, side and round
  int cycles = 3;   // pod cycles per side and round
  int pods = 10;    // pods (one container each) ListContainers lists
  int passed = 10000;
  std::string baseline;         // another statlet binary, proxied beside this tree's
  bool baseline_first = false;  // the baseline takes the first slot (started first)
  bool relay = false;           // byte_relay takes a turn too
  std::string json;
};

// Calls of each kind on a side's new connection before its turn is measured.
constexpr int kWarmCalls = 20;

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

double Quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(q * static_cast<double>(v.size())))];
}

struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread SpreadOf(std::vector<double> v) {
  Spread s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.median = v[v.size() / 2];
  s.min = v.front();
  s.max = v.back();
  return s;
}

// utime+stime of a process in clock ticks (its ended threads included).
uint64_t CpuTicks(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) return 0;
  // After the command: state (field 3) ... utime (14), stime (15).
  const char* p = stat.c_str() + paren + 2;
  uint64_t utime = 0, stime = 0;
  for (int field = 3; field <= 15 && *p; ++field) {
    if (field == 14) utime = std::strtoull(p, nullptr, 10);
    if (field == 15) stime = std::strtoull(p, nullptr, 10);
    p = std::strchr(p, ' ');
    if (p == nullptr) break;
    ++p;
  }
  return utime + stime;
}

uint64_t RssKib(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::strtoull(line.c_str() + 6, nullptr, 10);
  }
  return 0;
}

void Check(const grpc::Status& s, const char* what) {
  if (s.ok()) return;
  std::fprintf(stderr, "bench_proxy: %s failed: %s\n", what, Describe(s).c_str());
  std::exit(1);
}

// One side of the comparison: a client on one socket.
class Side {
 public:
  // `pid`: the proxy behind the socket (0: none, the runtime itself).
  Side(std::string name, std::string socket, pid_t pid = 0)
      : name_(std::move(name)), socket_(std::move(socket)), pid_(pid) {
    Reconnect();
  }
  const std::string& name() const { return name_; }
  pid_t pid() const { return pid_; }
  KubeletClient& client() { return *client_; }
  // New connections (the old ones close).
  void Reconnect() { client_ = std::make_unique<KubeletClient>(socket_); }

  // `calls` calls of each unary kind; their latencies in ms, by kind.
  void Unary(int calls, const std::string& container, std::map<std::string, std::vector<double>>* out) {
    v1::ContainerStatusRequest status;
    status.set_container_id(container);
    for (int i = 0; i < calls; ++i) {
      v1::VersionResponse version;
      auto t0 = Clock::now();
      Check(client_->runtime().Version(Ctx().get(), v1::VersionRequest(), &version), "Version");
      (*out)["Version"].push_back(Ms(Clock::now() - t0));
    }
    for (int i = 0; i < calls; ++i) {
      v1::ListContainersResponse list;
      auto t0 = Clock::now();
      Check(client_->runtime().ListContainers(Ctx().get(), v1::ListContainersRequest(), &list), "ListContainers");
      (*out)["ListContainers"].push_back(Ms(Clock::now() - t0));
    }
    for (int i = 0; i < calls; ++i) {
      v1::ContainerStatusResponse resp;
      auto t0 = Clock::now();
      Check(client_->runtime().ContainerStatus(Ctx().get(), status, &resp), "ContainerStatus");
      (*out)["ContainerStatus"].push_back(Ms(Clock::now() - t0));
    }
  }

  // One pod's cycle; its time in ms (the kubelet's rmdir of the pod cgroup not counted).
  double Cycle(ProxyStage& stage, int n) {
    Pod pod = NewPod(stage.cgroup_root(), stage.dir(), "cycle-" + name_ + "-" + std::to_string(n));
    const auto t0 = Clock::now();
    v1::RunPodSandboxRequest run;
    *run.mutable_config() = pod.config;
    v1::RunPodSandboxResponse ran;
    Check(client_->runtime().RunPodSandbox(Ctx(seconds(120)).get(), run, &ran), "RunPodSandbox");
    pod.id = ran.pod_sandbox_id();
    v1::CreateContainerResponse created;
    Check(client_->runtime().CreateContainer(Ctx().get(), CreateRequest(pod, "app", stage.image(), {"sleep", "3600"}),
                                             &created),
          "CreateContainer");
    v1::StartContainerRequest start;
    start.set_container_id(created.container_id());
    v1::StartContainerResponse started;
    Check(client_->runtime().StartContainer(Ctx().get(), start, &started), "StartContainer");
    v1::StopContainerRequest stop;
    stop.set_container_id(created.container_id());
    stop.set_timeout(0);
    v1::StopContainerResponse stopped;
    Check(client_->runtime().StopContainer(Ctx().get(), stop, &stopped), "StopContainer");
    v1::RemoveContainerRequest rm;
    rm.set_container_id(created.container_id());
    v1::RemoveContainerResponse removed;
    Check(client_->runtime().RemoveContainer(Ctx().get(), rm, &removed), "RemoveContainer");
    v1::StopPodSandboxRequest stop_pod;
    stop_pod.set_pod_sandbox_id(pod.id);
    v1::StopPodSandboxResponse pod_stopped;
    Check(client_->runtime().StopPodSandbox(Ctx().get(), stop_pod, &pod_stopped), "StopPodSandbox");
    v1::RemovePodSandboxRequest rm_pod;
    rm_pod.set_pod_sandbox_id(pod.id);
    v1::RemovePodSandboxResponse pod_removed;
    Check(client_->runtime().RemovePodSandbox(Ctx().get(), rm_pod, &pod_removed), "RemovePodSandbox");
    const double ms = Ms(Clock::now() - t0);
    (void)RemoveCgroupEverywhere(pod.cgroup_parent, seconds(10));
    return ms;
  }

 private:
  std::string name_;
  std::string socket_;
  std::unique_ptr<KubeletClient> client_;
  pid_t pid_ = 0;
};

Args ParseArgs(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    auto value = [&](const char* flag) -> const char* {
      const size_t n = std::strlen(flag);
      if (std::strncmp(argv[i], flag, n) == 0 && argv[i][n] == '=') return argv[i] + n + 1;
      if (std::strcmp(argv[i], flag) == 0 && i + 1 < argc) return argv[++i];
      return nullptr;
    };
    if (const char* v = value("--rounds")) {
      a.rounds = std::atoi(v);
    } else if (const char* v = value("--calls")) {
      a.calls = std::atoi(v);
    } else if (const char* v = value("--cycles")) {
      a.cycles = std::atoi(v);
    } else if (const char* v = value("--pods")) {
      a.pods = std::atoi(v);
    } else if (const char* v = value("--passed")) {
      a.passed = std::atoi(v);
    } else if (const char* v = value("--baseline")) {
      a.baseline = v;
    } else if (std::strcmp(argv[i], "--baseline-first") == 0) {
      a.baseline_first = true;
    } else if (std::strcmp(argv[i], "--relay") == 0) {
      a.relay = true;
    } else if (const char* v = value("--json")) {
      a.json = v;
    } else {
      std::fprintf(
          stderr,
          "usage: bench_proxy [--rounds N] [--calls N] [--cycles N] [--pods N] [--passed N] [--baseline STATLET "
          "[--baseline-first]] [--relay] [--json FILE]\n");
      std::exit(2);
    }
  }
  return a;
}

// byte_relay is built beside this program.
std::string RelayBinary() {
  char exe[4096];
  const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return "byte_relay";
  std::string path(exe, static_cast<size_t>(n));
  return path.substr(0, path.rfind('/') + 1) + "byte_relay";
}

bool Answers(const std::string& socket) {
  // One probe connection per attempt: a channel that failed to connect would wait out a
  // backoff.
  return testing::WaitFor(
      [&] {
        auto stub = v1::RuntimeService::NewStub(KubeletChannel(socket, /*fresh=*/true));
        v1::VersionResponse r;
        return stub->Version(Ctx(std::chrono::milliseconds(500)).get(), v1::VersionRequest(), &r).ok();
      },
      seconds(30));
}

int Run(const Args& args) {
  auto started = ProxyStage::Start(StageOptions());
  if (!started.ok()) {
    std::fprintf(stderr, "bench_proxy: %s\n", started.status().ToString().c_str());
    return 1;
  }
  ProxyStage& stage = **started;
  // The stage's own statlet goes: both proxies are started here, alike.
  stage.StopStatlet();
  Side direct("direct", stage.containerd_socket());
  struct Slot {
    std::string name, binary;
  };
  // The stage's command line names this tree's statlet.
  std::vector<Slot> slots = {{"statlet", stage.StatletArgs(/*proxy=*/true, "", 0)[0]}};
  if (!args.baseline.empty()) {
    slots.push_back({"baseline", args.baseline});
    if (args.baseline_first) std::swap(slots[0], slots[1]);
  }
  std::map<std::string, std::unique_ptr<testing::BinaryProcess>> processes;
  std::map<std::string, std::unique_ptr<Side>> proxies;
  for (size_t i = 0; i < slots.size(); ++i) {
    const std::string socket = stage.dir() + "/slot" + std::to_string(i + 1) + ".sock";
    std::vector<std::string> argv = stage.StatletArgs(/*proxy=*/true, socket, testing::FreeLoopbackPort());
    argv[0] = slots[i].binary;
    auto process = std::make_unique<testing::BinaryProcess>(argv, stage.dir() + "/" + slots[i].name + ".log");
    // One probe connection per attempt, as the stage does: a channel that failed to
    // connect would wait out a backoff.
    if (!testing::WaitFor(
            [&] {
              auto stub = v1::RuntimeService::NewStub(KubeletChannel(socket, /*fresh=*/true));
              v1::VersionResponse r;
              return stub->Version(Ctx(std::chrono::milliseconds(500)).get(), v1::VersionRequest(), &r).ok();
            },
            seconds(30))) {
      std::fprintf(stderr, "bench_proxy: the %s statlet (%s) did not answer\n", slots[i].name.c_str(),
                   slots[i].binary.c_str());
      return 1;
    }
    std::printf("slot %zu: %s (%s), pid %d\n", i + 1, slots[i].name.c_str(), slots[i].binary.c_str(),
                static_cast<int>(process->pid()));
    proxies[slots[i].name] = std::make_unique<Side>(slots[i].name, socket, process->pid());
    processes[slots[i].name] = std::move(process);
  }
  Side& proxied = *proxies["statlet"];
  Side* baseline = args.baseline.empty() ? nullptr : proxies["baseline"].get();
  std::vector<Side*> sides = {&direct, &proxied};
  if (baseline) sides.push_back(baseline);
  std::unique_ptr<testing::BinaryProcess> relay_process;
  std::unique_ptr<Side> relay_side;
  if (args.relay) {
    const std::string socket = stage.dir() + "/relay.sock";
    relay_process = std::make_unique<testing::BinaryProcess>(
        std::vector<std::string>{RelayBinary(), socket, stage.containerd_socket()}, stage.dir() + "/relay.log");
    if (!Answers(socket)) {
      std::fprintf(stderr, "bench_proxy: byte_relay (%s) did not answer\n", RelayBinary().c_str());
      return 1;
    }
    std::printf("relay: byte_relay (%s), pid %d\n", RelayBinary().c_str(), static_cast<int>(relay_process->pid()));
    relay_side = std::make_unique<Side>("relay", socket, relay_process->pid());
    sides.push_back(relay_side.get());
  }
  Side* relay = relay_side.get();

  // The pods ListContainers lists (made straight on containerd), one of whose containers
  // ContainerStatus asks about.
  std::vector<Pod> pods;
  std::string container;
  for (int i = 0; i < args.pods; ++i) {
    Pod pod = NewPod(stage.cgroup_root(), stage.dir(), "listed-" + std::to_string(i));
    v1::RunPodSandboxRequest run;
    *run.mutable_config() = pod.config;
    v1::RunPodSandboxResponse ran;
    Check(direct.client().runtime().RunPodSandbox(Ctx(seconds(120)).get(), run, &ran), "RunPodSandbox");
    pod.id = ran.pod_sandbox_id();
    v1::CreateContainerResponse created;
    Check(direct.client().runtime().CreateContainer(
              Ctx().get(), CreateRequest(pod, "app", stage.image(), {"sleep", "2147483647"}), &created),
          "CreateContainer");
    v1::StartContainerRequest start;
    start.set_container_id(created.container_id());
    v1::StartContainerResponse ok;
    Check(direct.client().runtime().StartContainer(Ctx().get(), start, &ok), "StartContainer");
    container = created.container_id();
    pods.push_back(pod);
  }

  // Warm both sides (connections, containerd's caches).
  {
    std::map<std::string, std::vector<double>> warm;
    for (Side* side : sides) side->Unary(20, container, &warm);
  }
  const std::vector<std::string> kinds = {"Version", "ListContainers", "ContainerStatus"};
  std::map<std::string, std::map<std::string, std::vector<double>>> p50, p99;  // kind -> side -> per round
  std::map<std::string, std::vector<double>> added50, added99;                 // kind -> per round (statlet - direct)
  std::map<std::string, std::vector<double>> added50_base, added99_base;       // kind -> per round (baseline - direct)
  std::map<std::string, std::vector<double>> cycle;                            // side -> per round median
  std::vector<double> cycle_ratio, cycle_ratio_base;
  // kind -> per round: relay - direct (the hop's floor), statlet - relay (beyond it).
  std::map<std::string, std::vector<double>> floor50, floor99, beyond50, beyond99;
  std::vector<double> cycle_ratio_relay;
  std::map<std::string, long> done_calls, done_cycles;  // side -> successful measured calls, cycles
  std::map<std::string, std::vector<double>> cpu_us;    // proxy side -> per round, µs per passed call
  std::map<std::string, uint64_t> cpu_ticks;            // proxy side -> over every round
  std::vector<Side*> order = sides;
  for (int r = 0; r < args.rounds; ++r) {
    // Every order of the sides in turn (two sides: alternating); after the last order,
    // next_permutation starts again from the first.
    if (r > 0)
      std::next_permutation(order.begin(), order.end(), [](Side* a, Side* b) { return a->name() < b->name(); });
    std::map<std::string, std::map<std::string, double>> round50, round99;
    std::map<std::string, double> round_cycle;
    for (Side* side : order) {
      // A connection of the side's own for this turn, warmed (not measured).
      side->Reconnect();
      {
        std::map<std::string, std::vector<double>> warm;
        side->Unary(kWarmCalls, container, &warm);
      }
      std::map<std::string, std::vector<double>> ms;
      const uint64_t ticks0 = side->pid() > 0 ? CpuTicks(side->pid()) : 0;
      side->Unary(args.calls, container, &ms);
      for (const auto& [kind, v] : ms) done_calls[side->name()] += static_cast<long>(v.size());
      if (side->pid() > 0) {
        const uint64_t ticks = CpuTicks(side->pid()) - ticks0;
        cpu_ticks[side->name()] += ticks;
        cpu_us[side->name()].push_back(1e6 * static_cast<double>(ticks) / static_cast<double>(sysconf(_SC_CLK_TCK)) /
                                       (3.0 * args.calls));
      }
      for (const auto& kind : kinds) {
        round50[kind][side->name()] = Quantile(ms[kind], 0.5);
        round99[kind][side->name()] = Quantile(ms[kind], 0.99);
        p50[kind][side->name()].push_back(round50[kind][side->name()]);
        p99[kind][side->name()].push_back(round99[kind][side->name()]);
      }
      std::vector<double> cycles;
      for (int c = 0; c < args.cycles; ++c) cycles.push_back(side->Cycle(stage, r * args.cycles + c));
      done_cycles[side->name()] += static_cast<long>(cycles.size());
      round_cycle[side->name()] = Quantile(cycles, 0.5);
      cycle[side->name()].push_back(round_cycle[side->name()]);
    }
    for (const auto& kind : kinds) {
      added50[kind].push_back(round50[kind]["statlet"] - round50[kind]["direct"]);
      added99[kind].push_back(round99[kind]["statlet"] - round99[kind]["direct"]);
      if (baseline) {
        added50_base[kind].push_back(round50[kind]["baseline"] - round50[kind]["direct"]);
        added99_base[kind].push_back(round99[kind]["baseline"] - round99[kind]["direct"]);
      }
    }
    cycle_ratio.push_back(round_cycle["statlet"] / round_cycle["direct"]);
    if (relay) {
      for (const auto& kind : kinds) {
        floor50[kind].push_back(round50[kind]["relay"] - round50[kind]["direct"]);
        floor99[kind].push_back(round99[kind]["relay"] - round99[kind]["direct"]);
        beyond50[kind].push_back(round50[kind]["statlet"] - round50[kind]["relay"]);
        beyond99[kind].push_back(round99[kind]["statlet"] - round99[kind]["relay"]);
      }
      cycle_ratio_relay.push_back(round_cycle["relay"] / round_cycle["direct"]);
    }
    if (baseline) cycle_ratio_base.push_back(round_cycle["baseline"] / round_cycle["direct"]);
    std::printf(
        "round %d: Version p50 %.3f/%.3f ms, ListContainers %.3f/%.3f, ContainerStatus %.3f/%.3f, cycle "
        "%.1f/%.1f ms (direct/statlet)",
        r + 1, round50["Version"]["direct"], round50["Version"]["statlet"], round50["ListContainers"]["direct"],
        round50["ListContainers"]["statlet"], round50["ContainerStatus"]["direct"],
        round50["ContainerStatus"]["statlet"], round_cycle["direct"], round_cycle["statlet"]);
    if (baseline) {
      std::printf("; baseline %.3f, %.3f, %.3f, cycle %.1f", round50["Version"]["baseline"],
                  round50["ListContainers"]["baseline"], round50["ContainerStatus"]["baseline"],
                  round_cycle["baseline"]);
    }
    std::printf("\n");
    if (relay) {
      std::printf("round %d relay: Version p50 %.3f ms, ListContainers %.3f, ContainerStatus %.3f, cycle %.1f ms\n",
                  r + 1, round50["Version"]["relay"], round50["ListContainers"]["relay"],
                  round50["ContainerStatus"]["relay"], round_cycle["relay"]);
    }
  }

  // Memory: a stats-mode statlet beside the proxy, the same stats calls to both, then the
  // passed calls to the proxy.
  const std::string stats_socket = stage.dir() + "/stats-mode.sock";
  std::vector<std::string> argv = stage.StatletArgs(/*proxy=*/false, stats_socket, testing::FreeLoopbackPort());
  testing::BinaryProcess stats_mode(argv, stage.dir() + "/stats-mode.log");
  KubeletClient stats_client(stats_socket);
  v1::ListPodSandboxStatsRequest stats_req;
  stats_req.mutable_filter();
  if (!testing::WaitFor(
          [&] {
            v1::ListPodSandboxStatsResponse r;
            return stats_client.runtime().ListPodSandboxStats(Ctx().get(), stats_req, &r).ok();
          },
          seconds(30))) {
    std::fprintf(stderr, "bench_proxy: the stats-mode statlet did not answer\n");
    return 1;
  }
  std::map<std::string, uint64_t> rss_before, rss_after;  // proxy side -> KiB
  // The same stats calls to both (the first clients in turn): timed, since in proxy mode
  // they go through the socket's router to statlet's own server.
  std::map<std::string, std::vector<double>> stats_ms;  // side -> ListPodSandboxStats ms
  for (int i = 0; i < 200; ++i) {
    std::vector<std::pair<std::string, KubeletClient*>> clients = {{"stats mode", &stats_client},
                                                                   {"statlet", &proxied.client()}};
    if (baseline) clients.push_back({"baseline", &baseline->client()});
    std::rotate(clients.begin(), clients.begin() + i % clients.size(), clients.end());
    for (auto& [name, c] : clients) {
      v1::ListPodSandboxStatsResponse r;
      const auto t0 = Clock::now();
      Check(c->runtime().ListPodSandboxStats(Ctx().get(), stats_req, &r), "ListPodSandboxStats");
      if (i >= 20) stats_ms[name].push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    }
  }
  const uint64_t stats_before = RssKib(stats_mode.pid());
  v1::ContainerStatusRequest status;
  status.set_container_id(container);
  for (Side* side : sides) {
    if (side->pid() <= 0 || side == relay) continue;
    rss_before[side->name()] = RssKib(side->pid());
    for (int i = 0; i < args.passed; ++i) {
      switch (i % 3) {
        case 0: {
          v1::VersionResponse r;
          Check(side->client().runtime().Version(Ctx().get(), v1::VersionRequest(), &r), "Version");
          break;
        }
        case 1: {
          v1::ListContainersResponse r;
          Check(side->client().runtime().ListContainers(Ctx().get(), v1::ListContainersRequest(), &r),
                "ListContainers");
          break;
        }
        default: {
          v1::ContainerStatusResponse r;
          Check(side->client().runtime().ContainerStatus(Ctx().get(), status, &r), "ContainerStatus");
        }
      }
    }
  }
  // They settle (the daemons give freed memory back every 250 ms).
  std::this_thread::sleep_for(seconds(2));  // a measurement interval, not a synchronisation
  for (Side* side : sides) {
    if (side->pid() > 0 && side != relay) rss_after[side->name()] = RssKib(side->pid());
  }
  const uint64_t stats_after = RssKib(stats_mode.pid());
  const uint64_t proxy_before = rss_before["statlet"], proxy_after = rss_after["statlet"];
  stats_mode.Stop();

  // Report.
  std::string json = "{\"rounds\": " + std::to_string(args.rounds) + ", \"calls\": " + std::to_string(args.calls) +
                     ", \"cycles\": " + std::to_string(args.cycles) + ", \"pods\": " + std::to_string(args.pods) +
                     ", \"unary\": [";
  std::printf("\n%d rounds, %d calls per kind, side and round, %d pod cycles per side and round, %d pods listed\n",
              args.rounds, args.calls, args.cycles, args.pods);
  std::printf("%-16s %-8s %-26s %-26s\n", "call", "side", "p50 ms [min-max]", "p99 ms [min-max]");
  bool first = true;
  std::string relay_json;
  for (const auto& kind : kinds) {
    for (const Side* s : sides) {
      const char* side = s->name().c_str();
      Spread a = SpreadOf(p50[kind][side]), b = SpreadOf(p99[kind][side]);
      std::printf("%-16s %-8s %.3f [%.3f-%.3f]       %.3f [%.3f-%.3f]\n", kind.c_str(), side, a.median, a.min, a.max,
                  b.median, b.min, b.max);
    }
    Spread a = SpreadOf(added50[kind]), b = SpreadOf(added99[kind]);
    std::printf("%-16s %-8s %+.0f µs [%+.0f..%+.0f]     %+.0f µs [%+.0f..%+.0f]   (targets +100 µs, +1000 µs)\n",
                kind.c_str(), "added", a.median * 1000, a.min * 1000, a.max * 1000, b.median * 1000, b.min * 1000,
                b.max * 1000);
    if (baseline) {
      Spread c = SpreadOf(added50_base[kind]), d = SpreadOf(added99_base[kind]);
      std::printf("%-16s %-8s %+.0f µs [%+.0f..%+.0f]     %+.0f µs [%+.0f..%+.0f]   (baseline)\n", kind.c_str(),
                  "added", c.median * 1000, c.min * 1000, c.max * 1000, d.median * 1000, d.min * 1000, d.max * 1000);
    }
    if (relay) {
      Spread f50 = SpreadOf(floor50[kind]), f99 = SpreadOf(floor99[kind]);
      Spread b50 = SpreadOf(beyond50[kind]), b99 = SpreadOf(beyond99[kind]);
      std::printf("%-16s %-8s %+.0f µs [%+.0f..%+.0f]     %+.0f µs [%+.0f..%+.0f]   (relay over direct)\n",
                  kind.c_str(), "added", f50.median * 1000, f50.min * 1000, f50.max * 1000, f99.median * 1000,
                  f99.min * 1000, f99.max * 1000);
      std::printf("%-16s %-8s %+.0f µs [%+.0f..%+.0f]     %+.0f µs [%+.0f..%+.0f]   (statlet over relay)\n",
                  kind.c_str(), "added", b50.median * 1000, b50.min * 1000, b50.max * 1000, b99.median * 1000,
                  b99.min * 1000, b99.max * 1000);
      char rb[512];
      std::snprintf(
          rb, sizeof rb,
          "%s{\"call\": \"%s\", \"relay_p50_ms\": %.4f, \"relay_p99_ms\": %.4f, \"relay_added_p50_us\": %.1f, "
          "\"relay_added_p50_min_us\": %.1f, \"relay_added_p50_max_us\": %.1f, \"relay_added_p99_us\": %.1f, "
          "\"statlet_over_relay_p50_us\": %.1f, \"statlet_over_relay_p50_min_us\": %.1f, "
          "\"statlet_over_relay_p50_max_us\": %.1f, \"statlet_over_relay_p99_us\": %.1f}",
          relay_json.empty() ? "" : ", ", kind.c_str(), SpreadOf(p50[kind]["relay"]).median,
          SpreadOf(p99[kind]["relay"]).median, f50.median * 1000, f50.min * 1000, f50.max * 1000, f99.median * 1000,
          b50.median * 1000, b50.min * 1000, b50.max * 1000, b99.median * 1000);
      relay_json += rb;
    }
    char buf[512];
    std::snprintf(
        buf, sizeof buf,
        "%s{\"call\": \"%s\", \"direct_p50_ms\": %.4f, \"direct_p50_min_ms\": %.4f, \"direct_p50_max_ms\": "
        "%.4f, \"statlet_p50_ms\": %.4f, \"statlet_p50_min_ms\": %.4f, \"statlet_p50_max_ms\": %.4f, "
        "\"direct_p99_ms\": %.4f, \"statlet_p99_ms\": %.4f, \"added_p50_us\": %.1f, \"added_p50_min_us\": "
        "%.1f, \"added_p50_max_us\": %.1f, \"added_p99_us\": %.1f, \"added_p99_min_us\": %.1f, "
        "\"added_p99_max_us\": %.1f}",
        first ? "" : ", ", kind.c_str(), SpreadOf(p50[kind]["direct"]).median, SpreadOf(p50[kind]["direct"]).min,
        SpreadOf(p50[kind]["direct"]).max, SpreadOf(p50[kind]["statlet"]).median, SpreadOf(p50[kind]["statlet"]).min,
        SpreadOf(p50[kind]["statlet"]).max, SpreadOf(p99[kind]["direct"]).median, SpreadOf(p99[kind]["statlet"]).median,
        a.median * 1000, a.min * 1000, a.max * 1000, b.median * 1000, b.min * 1000, b.max * 1000);
    json += buf;
    first = false;
  }
  Spread cd = SpreadOf(cycle["direct"]), cs = SpreadOf(cycle["statlet"]), cr = SpreadOf(cycle_ratio);
  std::printf("%-16s %-8s %.1f ms [%.1f-%.1f]\n", "pod cycle", "direct", cd.median, cd.min, cd.max);
  std::printf("%-16s %-8s %.1f ms [%.1f-%.1f]\n", "pod cycle", "statlet", cs.median, cs.min, cs.max);
  std::printf("%-16s %-8s %.3fx [%.3f-%.3f]   (target <= 1.05x)\n", "pod cycle", "ratio", cr.median, cr.min, cr.max);
  if (baseline) {
    Spread cb = SpreadOf(cycle["baseline"]), rb = SpreadOf(cycle_ratio_base);
    std::printf("%-16s %-8s %.1f ms [%.1f-%.1f]\n", "pod cycle", "baseline", cb.median, cb.min, cb.max);
    std::printf("%-16s %-8s %.3fx [%.3f-%.3f]   (baseline)\n", "pod cycle", "ratio", rb.median, rb.min, rb.max);
  }
  if (relay) {
    Spread cl = SpreadOf(cycle["relay"]), rl = SpreadOf(cycle_ratio_relay);
    std::printf("%-16s %-8s %.1f ms [%.1f-%.1f]\n", "pod cycle", "relay", cl.median, cl.min, cl.max);
    std::printf("%-16s %-8s %.3fx [%.3f-%.3f]   (relay)\n", "pod cycle", "ratio", rl.median, rl.min, rl.max);
  }
  for (const Side* side : sides) {
    if (side->pid() <= 0) continue;
    Spread c = SpreadOf(cpu_us[side->name()]);
    const double calls = 3.0 * args.calls * args.rounds;
    std::printf("%-16s %-8s %.0f µs per measured passed call over the run, per round %.0f [%.0f-%.0f] (utime+stime)\n",
                "proxy CPU", side->name().c_str(),
                1e6 * static_cast<double>(cpu_ticks[side->name()]) / static_cast<double>(sysconf(_SC_CLK_TCK)) / calls,
                c.median, c.min, c.max);
  }
  std::printf(
      "RSS after %d passed calls: proxy %.1f MiB (%.1f before), stats mode %.1f MiB (%.1f before): %+.1f MiB "
      "(target <= +5 MiB)\n",
      args.passed, proxy_after / 1024.0, proxy_before / 1024.0, stats_after / 1024.0, stats_before / 1024.0,
      (static_cast<double>(proxy_after) - static_cast<double>(stats_after)) / 1024.0);
  std::printf("ListPodSandboxStats p50 (%zu calls each): stats mode %.3f ms, through the proxy %.3f ms (%.2fx)",
              stats_ms["statlet"].size(), Quantile(stats_ms["stats mode"], 0.5), Quantile(stats_ms["statlet"], 0.5),
              Quantile(stats_ms["statlet"], 0.5) / Quantile(stats_ms["stats mode"], 0.5));
  if (baseline) std::printf(", through the baseline proxy %.3f ms", Quantile(stats_ms["baseline"], 0.5));
  std::printf("\n");
  if (baseline) {
    std::printf("RSS after %d passed calls: baseline %.1f MiB (%.1f before): %+.1f MiB over stats mode\n", args.passed,
                rss_after["baseline"] / 1024.0, rss_before["baseline"] / 1024.0,
                (static_cast<double>(rss_after["baseline"]) - static_cast<double>(stats_after)) / 1024.0);
  }
  char buf[512];
  std::snprintf(buf, sizeof buf,
                "], \"cycle\": {\"direct_ms\": %.2f, \"direct_min_ms\": %.2f, \"direct_max_ms\": %.2f, \"statlet_ms\": "
                "%.2f, \"statlet_min_ms\": %.2f, \"statlet_max_ms\": %.2f, \"ratio\": %.4f, \"ratio_min\": %.4f, "
                "\"ratio_max\": %.4f}, \"memory\": {\"passed\": %d, \"proxy_kib\": %llu, \"proxy_before_kib\": %llu, "
                "\"stats_kib\": %llu, \"stats_before_kib\": %llu}}\n",
                cd.median, cd.min, cd.max, cs.median, cs.min, cs.max, cr.median, cr.min, cr.max, args.passed,
                static_cast<unsigned long long>(proxy_after), static_cast<unsigned long long>(proxy_before),
                static_cast<unsigned long long>(stats_after), static_cast<unsigned long long>(stats_before));
  json += buf;
  // Every side did the same work: the same successful measured calls and pod cycles.
  bool same_work = true;
  std::printf("work:");
  for (const Side* side : sides) {
    std::printf(" %s %ld calls %ld cycles;", side->name().c_str(), done_calls[side->name()], done_cycles[side->name()]);
    same_work = same_work && done_calls[side->name()] == done_calls["direct"] &&
                done_cycles[side->name()] == done_cycles["direct"];
  }
  std::printf(" %s\n", same_work ? "the same on every side" : "NOT the same");
  if (relay) {
    // Before the closing brace (and newline) of the object.
    json.resize(json.size() - 2);
    json += ", \"relay\": [" + relay_json + "]}\n";
  }
  if (!args.json.empty()) std::ofstream(args.json) << json;

  for (const Pod& pod : pods) {
    v1::StopPodSandboxRequest stop;
    stop.set_pod_sandbox_id(pod.id);
    v1::StopPodSandboxResponse stopped;
    (void)direct.client().runtime().StopPodSandbox(Ctx().get(), stop, &stopped);
    v1::RemovePodSandboxRequest rm;
    rm.set_pod_sandbox_id(pod.id);
    v1::RemovePodSandboxResponse removed;
    (void)direct.client().runtime().RemovePodSandbox(Ctx().get(), rm, &removed);
    (void)RemoveCgroupEverywhere(pod.cgroup_parent, seconds(10));
  }
  if (!same_work) {
    std::fprintf(stderr, "bench_proxy: the sides did not do the same work\n");
    return 1;
  }
  return 0;
}

}  // namespace
}  // namespace statlet::proxy_test

int main(int argc, char** argv) { return statlet::proxy_test::Run(statlet::proxy_test::ParseArgs(argc, argv)); }
