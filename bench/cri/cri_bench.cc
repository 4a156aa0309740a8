// Whole-process benchmark of statlet's CRI stats calls against their floor and containerd.
// For N real container cgroups in the kubelet's cgroupfs layout
// (<root>/kubepods/burstable/pod<uid>/<64-hex id>, a few containers per pod, each holding a
// sleeping process) one run measures, in alternating rounds (every side once per round,
// so that a machine slowing down mid-run slows every side alike):
//   floor   — bench/support/read_floor.h: every file statlet's collector reads for that
//             tree, on kept fds under the same fd budget, parsing nothing, on one thread; the
//             files of ListContainerStats' collections ("container files": no detail files
//             and no file of a cgroup that is not a container, see CollectParts), those of
//             ListPodSandboxStats' ("files": every reported cgroup's, no detail files), and
//             every file with the process fd scan ("files+fd scan": what
//             ListPodSandboxMetrics needs, its fd, socket and ulimit families);
//             and ListPodSandboxStats' files with as many kept open as RLIMIT_NOFILE allows
//             ("files, max kept": no fd budget of its own; root raises the limit where it
//             may): with every one kept, the bound of any reader of these files, whatever
//             kernel memory it spends on them (~4.5 KiB a kept file); the files the
//             daemon's cgroup_stats eBPF probe renders are not read: the floor loads that
//             probe too and walks once per pass instead (unless the daemon flags turn it off);
//   statlet — the real `statlet` daemon (--cri.max-age=0s: every call a fresh collection,
//             checked by its timestamp) over gRPC: ListContainerStats, ListPodSandboxStats,
//             ListPodSandboxMetrics; latency and the daemon's CPU per call (it runs in a
//             cgroup of its own: cpuacct.usage, every thread, ns). Its collections read on
//             two threads (--collector.read-threads), the floor on one: statlet's latency
//             may go below the floor's, its CPU not;
//   peer    — containerd's own ListContainerStats and ListPodSandboxStats on as many real
//             containers (tests/e2e's private containerd and runc; containerd 1.6 leaves
//             ListPodSandboxMetrics UNIMPLEMENTED).
// Each figure is the median over the rounds of that round's median call, with the rounds'
// minimum and maximum. Then, in a fresh daemon: its resident set after 10 calls of each
// stats call, and after 10 ListPodSandboxMetrics more (settled: read until it stops
// moving), and its peak. The run fails when a call fails, a call is answered from a reused
// snapshot, or the daemon read fewer files than the floor (it did not do the same work).
//
//   bench_cri [--containers N,N...] [--per-pod K] [--calls C] [--peer-calls P] [--rounds R]
//             [--peer containerd|none] [--json PATH] [--daemon-flag FLAG]...
//
// Defaults: 30,1000 containers, 4 per pod, 10 calls per side and round (3 for containerd,
// whose ListPodSandboxStats takes ~25 s at 1,000 containers), 5 rounds, the containerd peer
// when tests/e2e is built. Needs root.
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <sstream>
#include <string>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include "bench/cri/containerd_peer.h"
#include "bench/support/bench_tree.h"
#include "bench/support/read_floor.h"
#include "bpf/bpf_probes.h"
#include "proto/api.grpc.pb.h"
#include "tests/cri/server_process.h"  // ScratchDir
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/wait_for.h"

namespace statlet::bench {
namespace {

namespace v1 = ::runtime::v1;
using Clock = std::chrono::steady_clock;
using testing::BinaryProcess;
using testing::LiveCgroup;

constexpr int kWarmupCalls = 2;
constexpr int kRssCalls = 10;

double CpuMs(const LiveCgroup& cg) {
  const int64_t ns = cg.CpuUsageNs();
  return ns < 0 ? -1 : static_cast<double>(ns) / 1e6;
}

// A /proc/<pid>/status field in KiB; -1 when unreadable.
long StatusKiB(pid_t pid, const char* field) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  const size_t len = std::strlen(field);
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, len, field) == 0) return std::stol(line.substr(len));
  }
  return -1;
}

// The resident set by mapping (/proc/<pid>/smaps), summed per file's base name ("[heap]",
// "anon_inode:bpf-map", "anonymous" for unnamed ones), largest first.
std::vector<std::pair<std::string, long>> RssByMapping(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/smaps");
  std::map<std::string, long> kib;
  std::string current = "anonymous";
  for (std::string line; std::getline(in, line);) {
    if (line.compare(0, 4, "Rss:") == 0) {
      kib[current] += std::stol(line.substr(4));
      continue;
    }
    // A mapping's header: "start-end perms offset dev inode [path]"; field lines start
    // with a capitalised key and a colon.
    const size_t dash = line.find('-');
    if (dash == std::string::npos || dash == 0 || line.find(':') < dash) continue;
    std::istringstream header(line);
    std::string range, perms, offset, dev, inode, path;
    header >> range >> perms >> offset >> dev >> inode;
    std::getline(header >> std::ws, path);
    if (path.empty()) current = "anonymous";
    else if (path[0] == '/') current = path.substr(path.rfind('/') + 1);
    else current = path;
  }
  std::vector<std::pair<std::string, long>> out(kib.begin(), kib.end());
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  return out;
}

// The resident set once it stops moving: the daemon hands freed memory back to the kernel
// within its trimmer's period, which backs off to 8 s while a trim finds the memory in use.
// Read every 250 ms until it held within 64 KiB for 10 s (at most 40 s).
long SettledRssKiB(pid_t pid) {
  constexpr int kSteadyReads = 40;
  long level = StatusKiB(pid, "VmRSS:");
  int steady = 0;
  for (int i = 0; i < 160 && steady < kSteadyReads; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
    const long now = StatusKiB(pid, "VmRSS:");
    if (std::labs(now - level) <= 64) {
      ++steady;
    } else {
      level = now;
      steady = 0;
    }
  }
  return level;
}

// ---------------------------------------------------------------- CRI calls
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

// One call: its response's size, item counts and the collection timestamp it carries (to
// tell a fresh collection from a reused one).
struct Answer {
  grpc::Status status;
  size_t bytes = 0, items = 0, metrics = 0;
  int64_t timestamp = 0;
};
using Rpc = Answer (*)(v1::RuntimeService::Stub*);

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

Answer CallListPodSandboxStats(v1::RuntimeService::Stub* stub) {
  grpc::ClientContext ctx;
  v1::ListPodSandboxStatsResponse resp;
  Answer a;
  a.status = stub->ListPodSandboxStats(WithDeadline(&ctx), v1::ListPodSandboxStatsRequest(), &resp);
  a.bytes = resp.ByteSizeLong();
  a.items = static_cast<size_t>(resp.stats_size());
  if (resp.stats_size() > 0) a.timestamp = resp.stats(0).linux().cpu().timestamp();
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

struct RpcInfo {
  const char* name;
  Rpc call;
  const char* floor;  // the floor it stands beside: what its collections read
};
const RpcInfo kRpcs[] = {{"ListContainerStats", CallListContainerStats, "container files"},
                         {"ListPodSandboxStats", CallListPodSandboxStats, "files"},
                         {"ListPodSandboxMetrics", CallListPodSandboxMetrics, "files+fd scan"}};

// One round of one side: its median call and CPU per call.
struct RoundFigures {
  double p50_ms = 0, cpu_ms = 0;
  size_t bytes = 0, items = 0;
};

// `calls` back-to-back calls after kWarmupCalls; every one must carry a fresh collection.
StatusOr<RoundFigures> StatletRound(v1::RuntimeService::Stub* stub, const LiveCgroup& server_cg, Rpc rpc, int calls) {
  RoundFigures r;
  std::vector<double> ms;
  int64_t last_ts = -1;
  double cpu0 = 0;
  for (int i = 0; i < kWarmupCalls + calls; ++i) {
    if (i == kWarmupCalls) cpu0 = CpuMs(server_cg);
    auto t0 = Clock::now();
    Answer a = rpc(stub);
    auto t1 = Clock::now();
    if (!a.status.ok()) return Unavailable("call failed: " + a.status.error_message());
    if (a.items == 0) return Unavailable("empty response");
    if (a.timestamp == last_ts) return Unavailable("call " + std::to_string(i) + " answered from a reused snapshot");
    last_ts = a.timestamp;
    if (i < kWarmupCalls) continue;
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    r.bytes = a.bytes;
    r.items = a.items;
  }
  r.cpu_ms = (CpuMs(server_cg) - cpu0) / calls;
  r.p50_ms = Percentile(ms, 0.5);
  return r;
}

// A gauge of the daemon's own /metrics (-1 when unreadable).
double SelfGauge(int port, const std::string& name) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_read_timeout(60, 0);
  auto res = cli.Get("/metrics");
  if (!res || res->status != 200) return -1;
  std::istringstream in(res->body);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(name + " ", 0) == 0) return std::atof(line.c_str() + name.size() + 1);
  }
  return -1;
}

// ---------------------------------------------------------------- figures
// One side's rounds: medians over rounds of each round's figure, with min and max.
struct Series {
  Series(std::string s, std::string w, std::string r) : side(std::move(s)), what(std::move(w)), ref(std::move(r)) {}
  std::string side, what, ref;  // ref: the floor row it stands beside
  std::vector<double> p50, cpu;
  size_t bytes = 0, items = 0;
  void Add(const RoundFigures& f) {
    p50.push_back(f.p50_ms);
    cpu.push_back(f.cpu_ms);
    bytes = f.bytes;
    items = f.items;
  }
};

double Median(std::vector<double> v) { return Percentile(std::move(v), 0.5); }
double Min(const std::vector<double>& v) { return v.empty() ? 0 : *std::min_element(v.begin(), v.end()); }
double Max(const std::vector<double>& v) { return v.empty() ? 0 : *std::max_element(v.begin(), v.end()); }

struct Options {
  std::vector<size_t> sizes = {30, 1000};
  size_t per_pod = 4;
  std::vector<std::string> daemon_flags;  // more flags for statlet (--daemon-flag)
  std::vector<std::string> wrapper;       // the memory phase's daemon runs under this (--daemon-wrapper)
  bool memory_only = false;               // only the memory phase (--memory-only)
  int calls = 10;
  int peer_calls = 3;
  int rounds = 5;
  bool peer = true;
  std::string json;
};

struct SizeReport {
  size_t containers = 0;
  std::vector<Series> series;
  double files_floor = 0, files_floor_stats = 0, files_floor_containers = 0, files_statlet = 0;
  double files_max_kept = 0;  // of files_floor_stats, kept open by the "files, max kept" floor
  double files_rendered = 0;  // of files_floor_stats, from the cgroup_stats walks
  long rss_stats_kib = -1, rss_all_kib = -1, rss_peak_kib = -1;
  long anon_stats_kib = -1, anon_all_kib = -1;  // of which anonymous (not the binary's and libraries' pages)
  // What the daemon's memory cgroup is charged after all calls (what a memory limit sees:
  // its anonymous memory, page cache it brought in, and kernel memory such as the kept
  // cgroup files' buffers), and the kernel part of it; -1 where the host does not say.
  long cgroup_all_kib = -1, kernel_all_kib = -1;
  // Where the resident set after the stats calls is: KiB per mapping (smaps), largest first.
  std::vector<std::pair<std::string, long>> rss_by_mapping;
  std::vector<std::string> errors;
};

const Series* Find(const SizeReport& r, const std::string& side, const std::string& what) {
  for (const auto& s : r.series) {
    if (s.side == side && s.what == what) return &s;
  }
  return nullptr;
}

void Print(const SizeReport& r) {
  std::printf("\n%zu containers (medians of per-round medians, [min-max] over rounds)\n", r.containers);
  std::printf("%-8s %-24s %26s %26s %10s %6s %9s %9s\n", "side", "what", "p50_ms [min-max]", "cpu_ms/call [min-max]",
              "bytes", "items", "p50/ref", "cpu/ref");
  for (const auto& s : r.series) {
    const Series* ref = s.ref.empty() ? nullptr : Find(r, "floor", s.ref);
    char rp[16] = "-", rc[16] = "-";
    const std::string p50 = MedianRange(s.p50, 3), cpu = MedianRange(s.cpu, 3);
    if (ref != nullptr) {
      std::snprintf(rp, sizeof(rp), "%.2f", Median(s.p50) / Median(ref->p50));
      std::snprintf(rc, sizeof(rc), "%.2f", Median(s.cpu) / Median(ref->cpu));
    }
    std::printf("%-8s %-24s %26s %26s %10zu %6zu %9s %9s\n", s.side.c_str(), s.what.c_str(), p50.c_str(), cpu.c_str(),
                s.bytes, s.items, rp, rc);
  }
  for (const char* rpc : {"ListContainerStats", "ListPodSandboxStats"}) {
    const Series* ours = Find(r, "statlet", rpc);
    const Series* theirs = Find(r, "peer", rpc);
    if (ours == nullptr || theirs == nullptr) continue;
    std::printf("%-8s %-24s containerd/statlet: latency %.1fx, cpu %.1fx\n", "ratio", rpc,
                Median(theirs->p50) / Median(ours->p50), Median(theirs->cpu) / Median(ours->cpu));
    if (const Series* bound = Find(r, "floor", "files, max kept")) {
      std::printf(
          "%-8s %-24s containerd/floor with %.0f of the %.0f files it reads kept (%.0f from the walks): latency "
          "%.1fx, cpu %.1fx\n",
          "bound", rpc, r.files_max_kept, r.files_floor_stats - r.files_rendered, r.files_rendered,
          Median(theirs->p50) / Median(bound->p50), Median(theirs->cpu) / Median(bound->cpu));
    }
  }
  if (!r.series.empty())
    std::printf(
        "files    floor %.0f (pod stats calls %.0f, of which %.0f from the eBPF walks; container stats calls %.0f), "
        "statlet %.0f per collection\n",
        r.files_floor, r.files_floor_stats, r.files_rendered, r.files_floor_containers, r.files_statlet);
  std::printf(
      "rss      after %d calls of each stats call: %.1f MiB (anonymous %.1f); after %d ListPodSandboxMetrics "
      "more: %.1f MiB (anonymous %.1f); peak %.1f MiB\n",
      kRssCalls, r.rss_stats_kib / 1024.0, r.anon_stats_kib / 1024.0, kRssCalls, r.rss_all_kib / 1024.0,
      r.anon_all_kib / 1024.0, r.rss_peak_kib / 1024.0);
  if (!r.rss_by_mapping.empty()) {
    std::printf("rss      by mapping after the stats calls (KiB):");
    long rest = 0;
    for (size_t i = 0; i < r.rss_by_mapping.size(); ++i) {
      if (i < 12) std::printf(" %s %ld;", r.rss_by_mapping[i].first.c_str(), r.rss_by_mapping[i].second);
      else rest += r.rss_by_mapping[i].second;
    }
    std::printf(" the rest %ld\n", rest);
  }
  std::printf("memory   the daemon's cgroup after all calls: %.1f MiB, of which kernel %.1f MiB\n",
              r.cgroup_all_kib / 1024.0, r.kernel_all_kib / 1024.0);
  const Series* lpsm = Find(r, "statlet", "ListPodSandboxMetrics");
  if (lpsm != nullptr && r.containers > 0) {
    const double per = static_cast<double>(lpsm->bytes) / static_cast<double>(r.containers);
    std::printf("bytes    ListPodSandboxMetrics %.0f bytes per container: 16 MiB at ~%.0f containers\n", per,
                16.0 * 1024 * 1024 / per);
  }
  for (const auto& e : r.errors) std::printf("ERROR    %s\n", e.c_str());
  std::fflush(stdout);
}

void WriteJson(const std::vector<SizeReport>& reports, const std::string& path) {
  std::ofstream out(path);
  out << "{\"bench\": \"cri\", \"sizes\": [";
  for (size_t i = 0; i < reports.size(); ++i) {
    const SizeReport& r = reports[i];
    out << (i ? ", " : "") << "{\"containers\": " << r.containers << ", \"files_floor\": " << r.files_floor
        << ", \"files_floor_stats\": " << r.files_floor_stats
        << ", \"files_floor_containers\": " << r.files_floor_containers << ", \"files_max_kept\": " << r.files_max_kept
        << ", \"files_rendered\": " << r.files_rendered << ", \"cgroup_all_kib\": " << r.cgroup_all_kib
        << ", \"kernel_all_kib\": " << r.kernel_all_kib << ", \"files_statlet\": " << r.files_statlet
        << ", \"rss_stats_kib\": " << r.rss_stats_kib << ", \"rss_all_kib\": " << r.rss_all_kib
        << ", \"rss_peak_kib\": " << r.rss_peak_kib << ", \"anon_stats_kib\": " << r.anon_stats_kib
        << ", \"anon_all_kib\": " << r.anon_all_kib << ", \"rows\": [";
    for (size_t j = 0; j < r.series.size(); ++j) {
      const Series& s = r.series[j];
      out << (j ? ", " : "") << "{\"side\": \"" << s.side << "\", \"what\": \"" << s.what << "\", \"ref\": \"" << s.ref
          << "\", \"p50_ms\": " << Median(s.p50) << ", \"p50_min_ms\": " << Min(s.p50)
          << ", \"p50_max_ms\": " << Max(s.p50) << ", \"cpu_ms\": " << Median(s.cpu)
          << ", \"cpu_min_ms\": " << Min(s.cpu) << ", \"cpu_max_ms\": " << Max(s.cpu) << ", \"bytes\": " << s.bytes
          << ", \"items\": " << s.items << "}";
    }
    out << "], \"errors\": " << r.errors.size() << "}";
  }
  out << "]}\n";
}

// The cgroups the daemon runs in: its CPU's, and its memory's (v1 memory, or the unified
// hierarchy where memory is a v2 controller).
std::vector<Hierarchy> DaemonHierarchies() {
  std::vector<Hierarchy> h = ServerCgroupHierarchies();
  const CgroupHierarchies& host = testing::HostHierarchies();
  if (host.has(kV1Memory) && !host.v2_memory) h.push_back(kV1Memory);
  else if (host.v2_memory && std::find(h.begin(), h.end(), kUnified) == h.end()) h.push_back(kUnified);
  return h;
}

// The daemon's argv behind a shell that moves itself into `cg` first, so that everything
// the daemon allocates from its first instruction on (the kept files of its start-up
// collection too) is charged to its own cgroup.
std::vector<std::string> InCgroup(const LiveCgroup& cg, std::vector<std::string> argv,
                                  const std::vector<std::string>& extra_flags,
                                  const std::vector<std::string>& wrapper) {
  argv.insert(argv.end(), extra_flags.begin(), extra_flags.end());
  argv.insert(argv.begin(), wrapper.begin(), wrapper.end());
  std::string script;
  for (Hierarchy h : DaemonHierarchies()) {
    if (cg.in(h)) script += "echo $$ > '" + cg.Dir(h) + "/cgroup.procs' && ";
  }
  script += "exec \"$0\" \"$@\"";
  argv.insert(argv.begin(), {"/bin/sh", "-c", script});
  return argv;
}

// KiB charged to the memory cgroup `cg` (all, kernel); -1 when not readable.
std::pair<long, long> CgroupMemoryKiB(const LiveCgroup& cg) {
  const CgroupHierarchies& host = testing::HostHierarchies();
  auto kib = [](const std::string& v) { return v.empty() ? -1 : static_cast<long>(std::stoull(v) / 1024); };
  if (host.has(kV1Memory) && !host.v2_memory && cg.in(kV1Memory)) {
    return {kib(cg.Read(kV1Memory, "memory.usage_in_bytes")), kib(cg.Read(kV1Memory, "memory.kmem.usage_in_bytes"))};
  }
  if (host.v2_memory && cg.in(kUnified)) {
    long kernel = -1;
    std::istringstream stat(cg.Read(kUnified, "memory.stat"));
    for (std::string key, value; stat >> key >> value;) {
      if (key == "kernel") kernel = kib(value);
    }
    return {kib(cg.Read(kUnified, "memory.current")), kernel};
  }
  return {-1, -1};
}

// The daemon as the bench runs it: its own cgroup (for its CPU and memory), a scratch socket.
struct Daemon {
  Daemon(const std::string& root, const std::string& dir, const std::string& tag,
         const std::vector<std::string>& extra_flags, const std::vector<std::string>& wrapper = {})
      : cg(root + "-" + tag, DaemonHierarchies()),
        socket(dir + "/" + tag + ".sock"),
        port(testing::FreeLoopbackPort()),
        process(InCgroup(cg,
                         {STATLET_BINARY, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                          "--collector.subtree=" + root, "--collector.max-age=0s", "--cri.max-age=0s",
                          "--cri.listen=" + socket, "--runtime.endpoint=none"},
                         extra_flags, wrapper),
                dir + "/" + tag + ".log") {}
  Status Ready(const std::string& log) {
    if (!cg.Add(process.pid())) return Unavailable("cannot move statlet into a cgroup of its own");
    stub = Connect(socket);
    if (!WaitForVersion(stub.get(), std::chrono::seconds(60))) {
      return Unavailable("statlet did not serve CRI on " + socket + "\n" + testing::ReadWholeFile(log));
    }
    return Status::Ok();
  }
  LiveCgroup cg;  // outlives the process
  std::string socket;
  int port;
  BinaryProcess process;
  std::unique_ptr<v1::RuntimeService::Stub> stub;
};

// The timed rounds: floors, statlet's calls and containerd's, alternating.
void MeasureCalls(const std::string& root, size_t n, const Options& o, ContainerdPeer* peer, CgroupFileSource* source,
                  SizeReport& report) {
  // The stats calls' floor reads what their collections read (no detail files);
  // ListPodSandboxMetrics' reads every file and scans the processes. One floor keeps its fds
  // at a time (each under the daemon's budget), built outside the measured passes.
  auto floor_of = [&](CollectParts parts, size_t max_kept = CollectorOptions::kDefaultMaxKeptFiles) {
    return std::make_unique<ReadFloor>(root, parts, max_kept, source);
  };
  constexpr CollectParts kContainerCalls = CollectParts::None();
  constexpr CollectParts kPodCalls = CollectParts(CollectParts::kNonContainerFiles);
  report.files_floor = static_cast<double>(floor_of(CollectParts::All())->files());
  report.files_floor_containers = static_cast<double>(floor_of(kContainerCalls)->files());
  {
    auto stats = floor_of(kPodCalls);
    report.files_floor_stats = static_cast<double>(stats->files());
    report.files_rendered = static_cast<double>(stats->rendered());
  }
  if (peer != nullptr) {
    if (Status s = peer->Grow(n, o.per_pod); !s.ok()) {
      report.errors.push_back("containerd: running the containers failed: " + s.ToString());
      peer = nullptr;
    }
  }

  testing::ScratchDir dir;
  Daemon daemon(root, dir.path(), "daemon", o.daemon_flags);
  if (Status s = daemon.Ready(dir.path() + "/daemon.log"); !s.ok()) {
    report.errors.push_back(s.ToString());
    return;
  }
  Series floor_containers{"floor", "container files", ""}, floor_files{"floor", "files", ""},
      floor_fds{"floor", "files+fd scan", ""}, floor_all{"floor", "files, max kept", ""};
  std::vector<Series> ours, theirs;
  for (const RpcInfo& rpc : kRpcs) ours.emplace_back("statlet", rpc.name, rpc.floor);
  if (peer != nullptr) {
    theirs.emplace_back("peer", "ListContainerStats", "files");
    theirs.emplace_back("peer", "ListPodSandboxStats", "files");
  }
  for (int round = 0; round < o.rounds && report.errors.empty(); ++round) {
    for (Series* floor : {&floor_containers, &floor_files, &floor_fds}) {
      const bool scan = floor == &floor_fds;
      const CollectParts parts = scan ? CollectParts::All() : floor == &floor_files ? kPodCalls : kContainerCalls;
      const FloorResult f = MeasureFloor(floor_of(parts).get(), o.calls, scan, std::chrono::nanoseconds(0));
      if (f.failed_reads > 0) report.errors.push_back("floor: " + std::to_string(f.failed_reads) + " reads failed");
      floor->Add({f.p50_ms, f.cpu_ms, 0, 0});
    }
    {
      auto all = floor_of(kPodCalls, SIZE_MAX);
      report.files_max_kept = static_cast<double>(all->kept_fds());
      const FloorResult f = MeasureFloor(all.get(), o.calls, false, std::chrono::nanoseconds(0));
      if (f.failed_reads > 0) report.errors.push_back("floor: " + std::to_string(f.failed_reads) + " reads failed");
      floor_all.Add({f.p50_ms, f.cpu_ms, 0, 0});
    }
    for (size_t i = 0; i < std::size(kRpcs); ++i) {
      auto r = StatletRound(daemon.stub.get(), daemon.cg, kRpcs[i].call, o.calls);
      if (!r.ok()) {
        report.errors.push_back(std::string("statlet ") + kRpcs[i].name + ": " + r.status().message());
        break;
      }
      ours[i].Add(*r);
    }
    for (size_t i = 0; i < theirs.size(); ++i) {
      auto f = peer->Measure(i == 0 ? PeerCall::kListContainerStats : PeerCall::kListPodSandboxStats, o.peer_calls);
      if (!f.ok()) {
        report.errors.push_back("containerd " + theirs[i].what + ": " + f.status().ToString());
        break;
      }
      theirs[i].Add({f->p50_ms, f->cpu_ms, f->bytes, f->items});
    }
  }
  // The same work: a collection of the daemon's read at least the files the floor read.
  report.files_statlet = SelfGauge(daemon.port, "statlet_collection_files_read");
  if (report.files_statlet < report.files_floor) {
    report.errors.push_back("statlet read " + std::to_string(report.files_statlet) +
                            " files per collection, the floor " + std::to_string(report.files_floor));
  }
  daemon.process.Stop();
  report.series = {floor_containers, floor_files, floor_fds, floor_all};
  report.series.insert(report.series.end(), ours.begin(), ours.end());
  report.series.insert(report.series.end(), theirs.begin(), theirs.end());
}

// Memory in a fresh daemon: what a node's kubelet calls cost it.
void MeasureMemory(const std::string& root, const Options& o, SizeReport& report) {
  testing::ScratchDir dir;
  Daemon fresh(root, dir.path(), "rss", o.daemon_flags, o.wrapper);
  if (Status s = fresh.Ready(dir.path() + "/rss.log"); !s.ok()) {
    report.errors.push_back(s.ToString());
    return;
  }
  auto calls = [&](Rpc rpc) {
    for (int i = 0; i < kRssCalls; ++i) {
      if (Answer a = rpc(fresh.stub.get()); !a.status.ok()) {
        report.errors.push_back("rss phase: " + a.status.error_message());
        return;
      }
    }
  };
  calls(CallListContainerStats);
  calls(CallListPodSandboxStats);
  report.rss_stats_kib = SettledRssKiB(fresh.process.pid());
  report.anon_stats_kib = StatusKiB(fresh.process.pid(), "RssAnon:");
  report.rss_by_mapping = RssByMapping(fresh.process.pid());
  calls(CallListPodSandboxMetrics);
  report.rss_all_kib = SettledRssKiB(fresh.process.pid());
  report.anon_all_kib = StatusKiB(fresh.process.pid(), "RssAnon:");
  report.rss_peak_kib = StatusKiB(fresh.process.pid(), "VmHWM:");
  std::tie(report.cgroup_all_kib, report.kernel_all_kib) = CgroupMemoryKiB(fresh.cg);
  fresh.process.Stop();
}

SizeReport RunAt(size_t n, const Options& o, ContainerdPeer* peer, CgroupFileSource* source) {
  SizeReport report;
  report.containers = n;
  const std::string root = "/statlet-bench-" + std::to_string(::getpid()) + "-" + std::to_string(n);
  BenchTree tree(root, n, BenchTree::kKubelet, o.per_pod);
  if (!tree.ok()) {
    report.errors.push_back("cannot create cgroups under " + root + " (root needed): " + tree.error());
    return report;
  }
  if (!o.memory_only) MeasureCalls(root, n, o, peer, source, report);
  MeasureMemory(root, o, report);
  return report;
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
    "usage: bench_cri [--containers N,N...] [--per-pod K] [--calls C] [--peer-calls P] [--rounds R]\n"
    "                 [--peer containerd|none] [--json PATH] [--daemon-flag FLAG]...\n"
    "                 [--memory-only true] [--daemon-wrapper ARG]...\n"
    "--memory-only true: only the memory phase (a fresh daemon, 10 calls of each stats call);\n"
    "--daemon-wrapper: that phase's daemon runs as ARG... statlet (e.g. a heap profiler)\n";

int main(int argc, char** argv) {
  statlet::bench::Options o;
  if ((argc - 1) % 2 != 0) {
    std::fputs(kUsage, stderr);
    return 2;
  }
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i], v = argv[i + 1];
    if (a == "--containers") o.sizes = statlet::bench::ParseSizes(v);
    else if (a == "--per-pod") o.per_pod = std::max<size_t>(1, std::stoul(v));
    else if (a == "--calls") o.calls = std::max(1, std::stoi(v));
    else if (a == "--rounds") o.rounds = std::max(1, std::stoi(v));
    else if (a == "--peer-calls") o.peer_calls = std::max(1, std::stoi(v));
    else if (a == "--peer") o.peer = v != "none";
    else if (a == "--json") o.json = v;
    else if (a == "--daemon-flag") o.daemon_flags.push_back(v);
    else if (a == "--daemon-wrapper") o.wrapper.push_back(v);
    else if (a == "--memory-only") o.memory_only = v == "true" || v == "1";
    else {
      std::fputs(kUsage, stderr);
      return 2;
    }
  }
  ::signal(SIGPIPE, SIG_IGN);
  // Room for the floor that keeps every file open (root may raise the hard limit); the
  // daemon's own budget stays its default (--collector.max-kept-files).
  if (struct rlimit rl; ::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_max < (1u << 18)) {
    struct rlimit raised = {1u << 18, 1u << 18};
    if (::setrlimit(RLIMIT_NOFILE, &raised) != 0) {
      std::printf("RLIMIT_NOFILE stays %llu (no CAP_SYS_RESOURCE): the max-kept floor keeps at most that many\n",
                  static_cast<unsigned long long>(rl.rlim_max));
    }
  }
  std::unique_ptr<statlet::bench::ContainerdPeer> peer;
  if (o.peer) {
    auto p = statlet::bench::ContainerdPeer::Start();
    if (p.ok()) {
      peer = std::move(p).value();
    } else {
      std::printf("containerd peer skipped: %s\n", p.status().ToString().c_str());
    }
  }
  // The daemon's cgroup_stats probe, loaded here too: the floor walks where the daemon walks.
  std::unique_ptr<statlet::BpfProbes> probes;
  const bool daemon_walks = std::none_of(o.daemon_flags.begin(), o.daemon_flags.end(), [](const std::string& f) {
    return f.rfind("--bpf=off", 0) == 0 ||
           (f.rfind("--bpf.probes", 0) == 0 && f.find("cgroup_stats") == std::string::npos);
  });
  if (daemon_walks) {
    statlet::BpfOptions bo = statlet::BpfOptions::WithMode(statlet::BpfMode::kAuto);
    bo.probes = {"cgroup_stats"};
    if (auto p = statlet::BpfProbes::Create(bo); p.ok()) probes = std::move(p).value();
  }
  statlet::CgroupFileSource* source = probes ? probes->FileSource() : nullptr;
  std::vector<statlet::bench::SizeReport> reports;
  int rc = 0;
  for (size_t n : o.sizes) {
    reports.push_back(statlet::bench::RunAt(n, o, peer.get(), source));
    statlet::bench::Print(reports.back());
    if (!reports.back().errors.empty()) rc = 1;
  }
  if (peer) peer->Stop();
  if (!o.json.empty()) statlet::bench::WriteJson(reports, o.json);
  return rc;
}
