// Whole-process benchmark of statlet's CRI stats calls. For N real container cgroups in the
// kubelet's cgroupfs layout (<root>/kubepods/burstable/pod<uid>/<64-hex id>, a few
// containers per pod, each holding a sleeping process) it measures, in one run:
//   floor  — bench/support/read_floor.h: every file statlet's collector reads for that tree
//            (its read plan and process lists, every hierarchy), on kept fds under the same
//            fd budget, parsing nothing, with and without the daemon's process fd scan: the
//            cost of the kernel work a collection cannot avoid;
//   daemon — the real `statlet` binary with --cri.listen on a temp socket, called over
//            gRPC: ListContainerStats and ListPodSandboxMetrics latency p50/p99, response
//            bytes, the daemon's CPU per call (the daemon runs in a cgroup of its own:
//            cpuacct.usage, ns, every thread), less its idle CPU over the pacing gap, RSS.
//            The daemon's CRI service reuses a snapshot younger than 1 s, so calls are
//            paced just over 1 s apart and each one is checked to carry a fresh collection;
//   hot    — statlet's CRI server with max-age 0 (tests/cri's cri_test_server over a live
//            Collector + Sampler), called back to back: every call a fresh collection
//            (--hot-gap-ms paces it like the daemon, to tell pacing from the daemon);
//   peer   — containerd's own ListContainerStats on as many real containers (tests/e2e's
//            private containerd and runc; ListPodSandboxMetrics is UNIMPLEMENTED in 1.6).
// Each row is also given as a ratio to the floor measured like it (column "ref").
//
//   bench_cri [--containers N,N...] [--per-pod K] [--calls C] [--sides daemon,hot]
//             [--hot-gap-ms G] [--peer containerd|none]
//
// Defaults: 100,1000 containers, 4 per pod, 50 calls per RPC, the containerd peer when
// tests/e2e is built. Needs root. Exits non-zero only when the measurement itself fails
// (a call errors or a response is not a fresh collection).
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "bench/cri/containerd_peer.h"
#include "bench/support/bench_tree.h"
#include "bench/support/read_floor.h"
#include "cri/proto/api.grpc.pb.h"
#include "tests/cri/server_process.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/wait_for.h"

namespace statlet::bench {
namespace {

namespace v1 = ::runtime::v1;
using Clock = std::chrono::steady_clock;
using testing::BinaryProcess;
using testing::LiveCgroup;

// The daemon's CRI service answers from a snapshot younger than this (cri/stats_service.h
// CriServiceOptions::max_age; the daemon does not expose it as a flag).
constexpr auto kDaemonReuseWindow = std::chrono::seconds(1);
constexpr auto kPacingMargin = std::chrono::milliseconds(30);
constexpr int kWarmupCalls = 2;

// CPU milliseconds used by the processes moved into `cg`; -1 when unknown.
double CpuMs(const LiveCgroup& cg) {
  const int64_t ns = cg.CpuUsageNs();
  return ns < 0 ? -1 : static_cast<double>(ns) / 1e6;
}

long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// ---------------------------------------------------------------- CRI calls
struct CallResult {
  double p50_ms = 0, p99_ms = 0, cpu_ms = 0;  // cpu: the server process's, per call
  size_t bytes = 0, items = 0, metrics = 0;
  long rss_kib = 0;
  std::string error;
};

std::unique_ptr<v1::RuntimeService::Stub> Connect(const std::string& socket) {
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(-1);  // 1,000 containers of metrics exceed the 4 MiB default
  return v1::RuntimeService::NewStub(
      grpc::CreateCustomChannel("unix:" + socket, grpc::InsecureChannelCredentials(), args));
}

bool WaitForVersion(v1::RuntimeService::Stub* stub, std::chrono::seconds deadline) {
  return testing::WaitFor(
      [&] {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
        v1::VersionResponse resp;
        return stub->Version(&ctx, v1::VersionRequest(), &resp).ok();
      },
      deadline);
}

// One call of an RPC: its response's size, item counts and the collection timestamp it
// carries (to tell a fresh collection from a reused one).
struct Answer {
  grpc::Status status;
  size_t bytes = 0, items = 0, metrics = 0;
  int64_t timestamp = 0;
};
using Rpc = std::function<Answer(v1::RuntimeService::Stub*)>;

grpc::ClientContext* WithDeadline(grpc::ClientContext* ctx) {
  ctx->set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
  return ctx;
}

Answer CallListContainerStats(v1::RuntimeService::Stub* stub) {
  grpc::ClientContext ctx;
  v1::ListContainerStatsResponse resp;
  Answer a;
  a.status = stub->ListContainerStats(WithDeadline(&ctx), v1::ListContainerStatsRequest(), &resp);
  a.bytes = resp.ByteSizeLong();
  a.items = static_cast<size_t>(resp.stats_size());
  if (resp.stats_size() > 0) a.timestamp = resp.stats(0).cpu().timestamp();
  return a;
}

Answer CallListPodSandboxMetrics(v1::RuntimeService::Stub* stub) {
  grpc::ClientContext ctx;
  v1::ListPodSandboxMetricsResponse resp;
  Answer a;
  a.status = stub->ListPodSandboxMetrics(WithDeadline(&ctx), v1::ListPodSandboxMetricsRequest(), &resp);
  a.bytes = resp.ByteSizeLong();
  a.items = static_cast<size_t>(resp.pod_metrics_size());
  for (const auto& p : resp.pod_metrics()) {
    a.metrics += static_cast<size_t>(p.metrics_size());
    for (const auto& c : p.container_metrics()) a.metrics += static_cast<size_t>(c.metrics_size());
    if (a.timestamp == 0 && p.metrics_size() > 0) a.timestamp = p.metrics(0).timestamp();
  }
  return a;
}

// `calls` measured calls after kWarmupCalls; `gap` > 0 paces them that far apart (end of
// one to start of the next) so that a server reusing young snapshots collects afresh.
CallResult CallLoop(v1::RuntimeService::Stub* stub, pid_t server, const LiveCgroup& server_cg, const Rpc& rpc,
                    int calls, std::chrono::nanoseconds gap) {
  CallResult r;
  std::vector<double> ms;
  int64_t last_ts = -1;
  double cpu0 = 0;
  // Pacing, not synchronisation: the server's reuse window is a fixed duration, and the
  // call before this loop (or a scrape) may have collected just now.
  auto next = Clock::now() + gap;
  for (int i = 0; i < kWarmupCalls + calls; ++i) {
    std::this_thread::sleep_until(next);
    if (i == kWarmupCalls) cpu0 = CpuMs(server_cg);
    auto t0 = Clock::now();
    Answer a = rpc(stub);
    auto t1 = Clock::now();
    next = t1 + gap;
    if (!a.status.ok()) {
      r.error = "call failed: " + a.status.error_message();
      return r;
    }
    if (a.items == 0) {
      r.error = "empty response";
      return r;
    }
    if (a.timestamp == last_ts) {
      r.error = "call " + std::to_string(i) + " answered from a reused snapshot";
      return r;
    }
    last_ts = a.timestamp;
    if (i < kWarmupCalls) continue;
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    r.bytes = a.bytes;
    r.items = a.items;
    r.metrics = a.metrics;
  }
  r.cpu_ms = (CpuMs(server_cg) - cpu0) / calls;
  r.p50_ms = Percentile(ms, 0.5);
  r.p99_ms = Percentile(ms, 0.99);
  r.rss_kib = RssKiB(server);
  return r;
}

// statlet_snapshot_reuses_total from the daemon's /metrics (-1 when unreadable).
double ReusesTotal(int port) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60, 0);
  auto res = cli.Get("/metrics");
  if (!res || res->status != 200) return -1;
  std::istringstream in(res->body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("statlet_snapshot_reuses_total ", 0) == 0) return std::atof(line.c_str() + 30);
  }
  return -1;
}

// ---------------------------------------------------------------- report
struct Rpcs {
  const char* name;
  Rpc call;
};
const Rpcs kRpcs[] = {{"ListContainerStats", CallListContainerStats},
                      {"ListPodSandboxMetrics", CallListPodSandboxMetrics}};

void PrintHeader() {
  std::printf("%-10s %-6s %-22s %9s %9s %11s %10s %6s %8s %8s %8s %8s  %s\n", "containers", "side", "what", "p50_ms",
              "p99_ms", "cpu_ms/call", "bytes", "items", "metrics", "rss_mib", "p50/ref", "cpu/ref", "ref");
}

void PrintFloor(size_t n, const char* what, const FloorResult& f, const ReadFloor& fl) {
  std::printf("%-10zu %-6s %-22s %9.3f %9.3f %11.3f %10s %6s %8s %8s %8s %8s  (cgroups=%zu files=%zu kept_fds=%zu "
              "reopen_ms=%.3f failed_reads=%zu processes=%zu fds_listed=%zu)\n",
              n, "floor", what, f.p50_ms, f.p99_ms, f.cpu_ms, "-", "-", "-", "-", "-", "-", fl.cgroups(), fl.files(),
              fl.kept_fds(), f.reopen_ms, f.failed_reads, fl.processes(), f.fds_listed);
  std::fflush(stdout);
}

void PrintCall(size_t n, const char* side, const char* what, const CallResult& c, const FloorResult& ref,
               const char* ref_name) {
  std::printf("%-10zu %-6s %-22s %9.3f %9.3f %11.3f %10zu %6zu %8zu %8.1f %8.2f %8.2f  %s\n", n, side, what, c.p50_ms,
              c.p99_ms, c.cpu_ms, c.bytes, c.items, c.metrics, static_cast<double>(c.rss_kib) / 1024.0,
              c.p50_ms / ref.p50_ms, c.cpu_ms / ref.cpu_ms, ref_name);
  std::fflush(stdout);
}

struct Options {
  std::vector<size_t> sizes = {100, 1000};
  size_t per_pod = 4;
  int calls = 50;
  bool daemon = true, hot = true;
  int hot_gap_ms = 0;  // pacing of the hot side's calls (0: back to back)
  bool peer = true;    // containerd's ListContainerStats on as many containers
};

int RunAt(size_t n, const Options& o, ContainerdPeer* peer) {
  const std::string root = "/statlet-bench-" + std::to_string(::getpid()) + "-" + std::to_string(n);
  BenchTree tree(root, n, BenchTree::kKubelet, o.per_pod);
  if (!tree.ok()) {
    std::fprintf(stderr, "cannot create cgroups under %s (root needed): %s\n", root.c_str(), tree.error().c_str());
    return 1;
  }
  // The floors: the cgroup files alone (what the hot side reads: cri_test_server keeps
  // the collector's default, no process fd scan), and with the daemon's process fd scan,
  // back to back and paced like the daemon's calls.
  const auto gap = kDaemonReuseWindow + kPacingMargin;
  ReadFloor fl(root);
  const FloorResult floor_files = MeasureFloor(&fl, o.calls, false, std::chrono::nanoseconds(0));
  PrintFloor(n, "files", floor_files, fl);
  const FloorResult floor_fds = MeasureFloor(&fl, o.calls, true, std::chrono::nanoseconds(0));
  PrintFloor(n, "files+fd scan", floor_fds, fl);
  FloorResult floor_paced;
  if (o.daemon) {
    floor_paced = MeasureFloor(&fl, o.calls, true, gap);
    PrintFloor(n, "files+fd scan, paced", floor_paced, fl);
  }

  testing::ScratchDir dir;
  const std::string socket = dir.path() + "/cri.sock";
  int failures = 0;
  auto report = [&](const char* side, const char* rpc, const CallResult& c, const FloorResult& ref,
                    const char* ref_name) {
    if (!c.error.empty()) {
      std::fprintf(stderr, "%zu %s %s: %s\n", n, side, rpc, c.error.c_str());
      ++failures;
      return;
    }
    PrintCall(n, side, rpc, c, ref, ref_name);
    if (c.bytes > 0 && std::strcmp(rpc, "ListPodSandboxMetrics") == 0) {
      // The kubelet's CRI client receives at most 16 MiB per message.
      std::printf("%-10zu %-6s %.0f bytes per container: a 16 MiB message at ~%.0f containers\n", n, side,
                  static_cast<double>(c.bytes) / static_cast<double>(n),
                  16.0 * 1024 * 1024 / (static_cast<double>(c.bytes) / static_cast<double>(n)));
    }
  };

  if (o.daemon) {
    LiveCgroup server_cg(root + "-daemon", ServerCgroupHierarchies());  // outlives the process
    const int port = testing::FreeLoopbackPort();
    BinaryProcess statlet({STATLET_BINARY, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                           "--collector.subtree=" + root, "--collector.max-age=0s", "--cri.listen=" + socket,
                           "--runtime.endpoint=none"},
                          dir.path() + "/statlet.log");
    if (!server_cg.Add(statlet.pid())) {
      std::fprintf(stderr, "cannot move statlet into a cgroup of its own\n");
      return 1;
    }
    auto stub = Connect(socket);
    if (!WaitForVersion(stub.get(), std::chrono::seconds(60))) {
      std::fprintf(stderr, "statlet did not serve CRI on %s\n%s", socket.c_str(),
                   testing::ReadWholeFile(dir.path() + "/statlet.log").c_str());
      return 1;
    }
    // What the daemon spends with nobody calling (HTTP and gRPC threads waking up): the
    // paced loop's CPU includes about one gap of it per call, taken off below.
    const double idle0 = CpuMs(server_cg);
    const auto idle_start = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(3));  // a measurement window
    const double idle_ms_per_s =
        (CpuMs(server_cg) - idle0) / std::chrono::duration<double>(Clock::now() - idle_start).count();
    std::printf("%-10zu daemon idle cpu_ms_per_s=%.3f (subtracted: %.3f ms per paced call)\n", n, idle_ms_per_s,
                idle_ms_per_s * std::chrono::duration<double>(gap).count());
    const double reuses0 = ReusesTotal(port);
    for (const Rpcs& rpc : kRpcs) {
      CallResult c = CallLoop(stub.get(), statlet.pid(), server_cg, rpc.call, o.calls, gap);
      c.cpu_ms -= idle_ms_per_s * std::chrono::duration<double>(gap).count();
      report("daemon", rpc.name, c, floor_paced, "files+fd scan, paced");
    }
    const double reuses1 = ReusesTotal(port);
    if (reuses0 < 0 || reuses1 != reuses0) {
      std::fprintf(stderr, "%zu daemon: statlet_snapshot_reuses_total went %.0f -> %.0f\n", n, reuses0, reuses1);
      ++failures;
    }
    statlet.Stop();
  }

  if (o.hot) {
    LiveCgroup server_cg(root + "-hot", ServerCgroupHierarchies());  // outlives the process
    testing::ServerProcess server;
    if (!server.Start({CRI_TEST_SERVER, "--socket", socket, "--live", root, "--max-age-ms", "0"}, 60000)) {
      std::fprintf(stderr, "cri_test_server: %s\n", server.error().c_str());
      return 1;
    }
    if (!server_cg.Add(server.pid())) {
      std::fprintf(stderr, "cannot move cri_test_server into a cgroup of its own\n");
      return 1;
    }
    auto stub = Connect(socket);
    for (const Rpcs& rpc : kRpcs) {
      report("hot", rpc.name,
             CallLoop(stub.get(), server.pid(), server_cg, rpc.call, o.calls, std::chrono::milliseconds(o.hot_gap_ms)),
             floor_files, "files");
    }
    server.Stop();
  }
  if (peer != nullptr) {
    if (Status s = peer->Grow(n, o.per_pod); !s.ok()) {
      std::fprintf(stderr, "%zu containerd: running the containers failed: %s\n", n, s.ToString().c_str());
      return 1;
    }
    auto f = peer->Measure(o.calls);
    if (!f.ok()) {
      std::fprintf(stderr, "%zu containerd: %s\n", n, f.status().ToString().c_str());
      return 1;
    }
    // Its containers are in a tree of the same shape: the floor above stands for it too.
    std::printf("%-10zu %-6s %-22s %9.3f %9.3f %11.3f %10zu %6zu %8s %8s %8.2f %8.2f  %s\n", n, "peer",
                "containerd LCS", f->p50_ms, f->p99_ms, f->cpu_ms, f->bytes, f->items, "-", "-",
                f->p50_ms / floor_files.p50_ms, f->cpu_ms / floor_files.cpu_ms, "files");
    std::fflush(stdout);
  }
  return failures == 0 ? 0 : 1;
}

std::vector<size_t> ParseSizes(const std::string& s) {
  std::vector<size_t> out;
  std::stringstream in(s);
  for (std::string item; std::getline(in, item, ',');) out.push_back(std::stoul(item));
  return out;
}

}  // namespace
}  // namespace statlet::bench

constexpr char kUsage[] =
    "usage: bench_cri [--containers N,N...] [--per-pod K] [--calls C] [--sides daemon,hot]\n"
    "                 [--hot-gap-ms G] [--peer containerd|none]\n";

int main(int argc, char** argv) {
  statlet::bench::Options o;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--containers") o.sizes = statlet::bench::ParseSizes(v);
    else if (a == "--per-pod") o.per_pod = std::max<size_t>(1, std::stoul(v));
    else if (a == "--calls") o.calls = std::max(1, std::stoi(v));
    else if (a == "--hot-gap-ms") o.hot_gap_ms = std::max(0, std::stoi(v));
    else if (a == "--peer") o.peer = v != "none";
    else if (a == "--sides") {
      o.daemon = v.find("daemon") != std::string::npos;
      o.hot = v.find("hot") != std::string::npos;
    } else {
      std::fputs(kUsage, stderr);
      return 2;
    }
  }
  if ((argc - 1) % 2 != 0) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  ::signal(SIGPIPE, SIG_IGN);
  statlet::bench::PrintHeader();
  std::unique_ptr<statlet::bench::ContainerdPeer> peer;
  if (o.peer) {
    auto p = statlet::bench::ContainerdPeer::Start();
    if (p.ok()) {
      peer = std::move(p).value();
    } else {
      std::printf("containerd peer skipped: %s\n", p.status().ToString().c_str());
    }
  }
  int rc = 0;
  for (size_t n : o.sizes) rc |= statlet::bench::RunAt(n, o, peer.get());
  if (peer) peer->Stop();
  return rc;
}
