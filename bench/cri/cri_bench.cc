// Whole-process benchmark of statlet's CRI stats calls. For N real container cgroups in the
// kubelet's cgroupfs layout (<root>/kubepods/burstable/pod<uid>/<64-hex id>, a few
// containers per pod, each holding a sleeping process) it measures, in one run:
//   floor  — pread() of every file statlet's collector reads for that tree (its read plan
//            and process lists, every hierarchy), on kept fds under the same fd budget,
//            parsing nothing: the cost of the kernel work a collection cannot avoid;
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
#include <fcntl.h>
#include <grpcpp/grpcpp.h>
#include <httplib.h>
#include <signal.h>
#include <dirent.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <thread>
#include <sstream>
#include <string>
#include <vector>

#include "collector/cgroup_discovery.h"
#include "collector/cgroup_files.h"
#include "collector/cgroup_hierarchies.h"
#include "bench/cri/containerd_peer.h"
#include "collector/kept_file.h"
#include "cri/proto/api.grpc.pb.h"
#include "tests/cri/server_process.h"
#include "tests/prometheus/child_process.h"
#include "tests/prometheus/live_cgroups.h"

namespace statlet::bench {
namespace {

namespace v1 = ::runtime::v1;
using Clock = std::chrono::steady_clock;
using testing::ChildProcess;

// The daemon's CRI service answers from a snapshot younger than this (cri/stats_service.h
// CriServiceOptions::max_age; the daemon does not expose it as a flag).
constexpr auto kDaemonReuseWindow = std::chrono::seconds(1);
constexpr auto kPacingMargin = std::chrono::milliseconds(30);
constexpr int kWarmupCalls = 2;

const CgroupHierarchies& Hier() {
  static CgroupHierarchies h = *DetectHierarchies("/sys/fs/cgroup", "/proc");
  return h;
}

double Pct(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double ThreadCpuMs() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e3 + static_cast<double>(ts.tv_nsec) / 1e6;
}

// A cgroup of its own for a server process (beside the measured tree, so statlet does
// not see it): its CPU counter includes every thread, exited ones too, at ns precision —
// /proc/<pid>/stat counts 10 ms ticks, and gRPC's thread pool starts and ends threads.
class ServerCgroup {
 public:
  explicit ServerCgroup(const std::string& rel) {
    if (Hier().has(kV1Cpuacct)) {
      dir_ = Hier().mount[kV1Cpuacct] + rel;
      file_ = "cpuacct.usage";  // ns
      scale_ = 1e-6;
    } else if (Hier().has(kUnified)) {
      dir_ = Hier().mount[kUnified] + rel;
      file_ = "cpu.stat";  // usage_usec
      scale_ = 1e-3;
    }
    if (!dir_.empty() && ::mkdir(dir_.c_str(), 0755) != 0) dir_.clear();
  }
  ~ServerCgroup() {
    if (dir_.empty()) return;
    auto deadline = Clock::now() + std::chrono::seconds(5);  // the server exits a moment after its reaping
    while (::rmdir(dir_.c_str()) != 0 && errno == EBUSY && Clock::now() < deadline) ::usleep(1000);
  }
  bool Move(pid_t pid) {
    if (dir_.empty()) return false;
    std::ofstream out(dir_ + "/cgroup.procs");
    out << pid << std::flush;
    return static_cast<bool>(out);
  }
  // CPU milliseconds used by the processes moved here; -1 when unknown.
  double CpuMs() const {
    std::ifstream in(dir_ + "/" + file_);
    std::string key;
    double v = -1;
    if (file_ == "cpuacct.usage") {
      in >> v;
    } else {
      while (in >> key >> v && key != "usage_usec") {}
    }
    return v < 0 ? -1 : v * scale_;
  }

 private:
  std::string dir_, file_;
  double scale_ = 0;
};

long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

// ---------------------------------------------------------------- the kubelet-shaped tree
// root/kubepods/burstable/pod<uid>/<id> in every mounted hierarchy, one sleeping process
// per container cgroup. Removed (processes killed, directories deepest first) on
// destruction.
class KubeletTree {
 public:
  KubeletTree(std::string root, size_t containers, size_t per_pod) : root_(std::move(root)) {
    Mkdir(root_);
    Mkdir(root_ + "/kubepods");
    Mkdir(root_ + "/kubepods/burstable");
    std::string pod;
    for (size_t i = 0; i < containers; ++i) {
      if (i % per_pod == 0) {
        pod = root_ + "/kubepods/burstable/pod" + Uid(i / per_pod);
        Mkdir(pod);
        ++pods_;
      }
      std::string c = pod + "/" + ContainerId(i);
      Mkdir(c);
      pid_t p = ::fork();
      if (p == 0) {
        // A container's process holds few fds; not the bench's sockets and kept files.
        ::syscall(SYS_close_range, 3u, ~0u, 0u);
        while (true) ::pause();
      }
      pids_.push_back(p);
      for (const std::string& m : mounts_) WriteStr(m + c + "/cgroup.procs", std::to_string(p));
    }
  }
  ~KubeletTree() {
    for (pid_t p : pids_) ::kill(p, SIGKILL);
    for (pid_t p : pids_) ::waitpid(p, nullptr, 0);
    for (auto it = dirs_.rbegin(); it != dirs_.rend(); ++it) {
      // A killed process leaves its cgroup a moment after waitpid: retry while busy.
      auto deadline = Clock::now() + std::chrono::seconds(5);
      while (::rmdir(it->c_str()) != 0 && errno == EBUSY && Clock::now() < deadline) ::usleep(1000);
    }
  }
  const std::string& root() const { return root_; }
  size_t pods() const { return pods_; }
  bool ok() const { return !mounts_.empty() && !dirs_.empty(); }

 private:
  void Mkdir(const std::string& rel) {
    if (mounts_.empty()) {
      for (int h = 0; h < kNumHierarchies; ++h) {
        if (Hier().has(static_cast<Hierarchy>(h))) mounts_.push_back(Hier().mount[h]);
      }
    }
    for (const std::string& m : mounts_) {
      std::string d = m + rel;
      if (::mkdir(d.c_str(), 0755) == 0) dirs_.push_back(d);
    }
  }
  static void WriteStr(const std::string& path, const std::string& v) {
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
      (void)!::write(fd, v.data(), v.size());
      ::close(fd);
    }
  }
  std::string Uid(size_t i) const {
    char b[48];
    std::snprintf(b, sizeof b, "%08x-0000-4000-8000-%012zx", static_cast<unsigned>(::getpid()), i);
    return b;
  }
  std::string ContainerId(size_t i) const {
    char b[65];
    unsigned long long x = (static_cast<unsigned long long>(::getpid()) << 32) ^ i;
    for (int w = 0; w < 4; ++w) {
      x = x * 6364136223846793005ULL + 1442695040888963407ULL;  // distinct 64-hex ids
      std::snprintf(b + 16 * w, 17, "%016llx", x);
    }
    return b;
  }

  std::string root_;
  size_t pods_ = 0;
  std::vector<std::string> mounts_;
  std::vector<std::string> dirs_;  // absolute, in creation order
  std::vector<pid_t> pids_;
};

// ---------------------------------------------------------------- floor
// The kernel work a collection of the tree cannot avoid, with no parsing:
//  - every file of statlet's read plan plus the process lists, for every cgroup directory
//    under root in every hierarchy holding it; kept fds up to the same budget statlet
//    uses, open+pread+close beyond it;
//  - what the daemon adds by default (--collector.process-fds): for each process of a
//    container cgroup, a listing of /proc/<pid>/fd with a readlink per entry, and the
//    open-files rlimit of the first one.
class Floor {
 public:
  explicit Floor(const std::string& root) : budget_(FdBudget::FromRlimit(512)) {
    std::vector<std::pair<Hierarchy, std::string>> names;
    for (const auto* r : BuildReadPlan(Hier())) names.push_back({r->hierarchy, r->name});
    Hierarchy ph = Hier().has(kUnified) ? kUnified : Hier().cpu();
    names.push_back({ph, "cgroup.procs"});
    names.push_back({ph, ph == kUnified ? "cgroup.threads" : "tasks"});
    CgroupDiscovery d(Hier(), {root});
    (void)d.Init();
    cgroups_ = d.paths().size();
    for (const auto& [path, mask] : d.paths()) {
      for (const auto& [h, name] : names) {
        if (!(mask & (1u << h))) continue;
        std::string p = Hier().mount[h] + path + "/" + name;
        int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) continue;  // statlet marks it absent and never reads it again
        if (budget_.TryAcquire()) {
          kept_.push_back({fd, ""});
        } else {
          ::close(fd);
          reopened_.push_back({-1, p});
        }
      }
      if (path.size() > 64 && path.rfind('/') == path.size() - 65) {  // a container: <pod>/<64 hex>
        std::ifstream procs(Hier().mount[ph] + path + "/cgroup.procs");
        for (pid_t pid; procs >> pid;) pids_.push_back(pid);
      }
    }
    proc_fd_ = ::open("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  }
  ~Floor() {
    for (const File& f : kept_) ::close(f.fd);
    if (proc_fd_ >= 0) ::close(proc_fd_);
  }

  // One pass over the cgroup files; the number of reads that failed. *reopen_ms: the
  // part spent on the files beyond the fd budget.
  size_t ReadFiles(double* reopen_ms) {
    static char buf[65536];
    size_t failed = 0;
    for (const File& f : kept_) failed += ::pread(f.fd, buf, sizeof buf, 0) < 0;
    auto t0 = Clock::now();
    for (const File& f : reopened_) {
      int fd = ::open(f.path.c_str(), O_RDONLY | O_CLOEXEC);
      failed += fd < 0 || ::pread(fd, buf, sizeof buf, 0) < 0;
      if (fd >= 0) ::close(fd);
    }
    *reopen_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
    return failed;
  }
  // One pass over the container processes' fd tables; the number of fds seen.
  size_t ScanProcesses() {
    static char dents[32768];
    size_t seen = 0;
    for (pid_t pid : pids_) {
      char path[32];
      std::snprintf(path, sizeof path, "%d/fd", pid);
      int dir = ::openat(proc_fd_, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (dir < 0) continue;
      long n;
      while ((n = ::syscall(SYS_getdents64, dir, dents, sizeof dents)) > 0) {
        for (long off = 0; off < n;) {
          const auto* d = reinterpret_cast<const struct dirent64*>(dents + off);
          off += d->d_reclen;
          if (d->d_name[0] == '.') continue;
          char link[8];
          (void)!::readlinkat(dir, d->d_name, link, sizeof link);
          ++seen;
        }
      }
      ::close(dir);
    }
    struct rlimit rl;
    for (size_t i = 0; i < pids_.size(); i += per_container_) (void)::prlimit(pids_[i], RLIMIT_NOFILE, nullptr, &rl);
    return seen;
  }

  size_t cgroups() const { return cgroups_; }
  size_t files() const { return kept_.size() + reopened_.size(); }
  size_t kept_fds() const { return budget_.used(); }
  size_t processes() const { return pids_.size(); }

 private:
  struct File {
    int fd;
    std::string path;  // beyond the fd budget: opened for each read
  };
  FdBudget budget_;
  std::vector<File> kept_, reopened_;
  std::vector<pid_t> pids_;  // of the container cgroups
  size_t per_container_ = 1;  // one sleeping process each
  size_t cgroups_ = 0;
  int proc_fd_ = -1;
};

struct FloorResult {
  double p50_ms = 0, p99_ms = 0, cpu_ms = 0;  // per pass
  size_t failed_reads = 0, fds_seen = 0;
  double reopen_ms = 0;  // median part spent reopening the files beyond the fd budget
};

// `passes` passes after one warm-up pass, `gap` apart (end to start) when non-zero, like
// the calls they stand beside. With scan: the process fd tables too.
FloorResult MeasureFloor(Floor* floor, int passes, bool scan, std::chrono::nanoseconds gap) {
  std::vector<double> wall, reopen;
  double cpu_ms = 0;
  FloorResult r;
  auto next = Clock::now();
  for (int i = 0; i < passes + 1; ++i) {
    std::this_thread::sleep_until(next);  // pacing, as the calls are paced
    double c0 = ThreadCpuMs();
    auto t0 = Clock::now();
    double reopen_ms = 0;
    size_t failed = floor->ReadFiles(&reopen_ms);
    size_t seen = scan ? floor->ScanProcesses() : 0;
    auto t1 = Clock::now();
    next = t1 + gap;
    if (i == 0) continue;  // warm-up
    cpu_ms += ThreadCpuMs() - c0;
    wall.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
    reopen.push_back(reopen_ms);
    r.failed_reads = failed;
    r.fds_seen = seen;
  }
  r.cpu_ms = cpu_ms / passes;
  r.p50_ms = Pct(wall, 0.5);
  r.p99_ms = Pct(wall, 0.99);
  r.reopen_ms = Pct(reopen, 0.5);
  return r;
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
CallResult CallLoop(v1::RuntimeService::Stub* stub, pid_t server, const ServerCgroup& server_cg, const Rpc& rpc,
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
    if (i == kWarmupCalls) cpu0 = server_cg.CpuMs();
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
  r.cpu_ms = (server_cg.CpuMs() - cpu0) / calls;
  r.p50_ms = Pct(ms, 0.5);
  r.p99_ms = Pct(ms, 0.99);
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

void PrintFloor(size_t n, const char* what, const FloorResult& f, const Floor& fl) {
  std::printf("%-10zu %-6s %-22s %9.3f %9.3f %11.3f %10s %6s %8s %8s %8s %8s  (cgroups=%zu files=%zu kept_fds=%zu "
              "reopen_ms=%.3f failed_reads=%zu processes=%zu fds_listed=%zu)\n",
              n, "floor", what, f.p50_ms, f.p99_ms, f.cpu_ms, "-", "-", "-", "-", "-", "-", fl.cgroups(), fl.files(),
              fl.kept_fds(), f.reopen_ms, f.failed_reads, fl.processes(), f.fds_seen);
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
  KubeletTree tree(root, n, o.per_pod);
  if (!tree.ok()) {
    std::fprintf(stderr, "cannot create cgroups under %s (root needed)\n", root.c_str());
    return 1;
  }
  // The floors: the cgroup files alone (what the hot side reads: cri_test_server keeps
  // the collector's default, no process fd scan), and with the daemon's process fd scan,
  // back to back and paced like the daemon's calls.
  const auto gap = kDaemonReuseWindow + kPacingMargin;
  Floor fl(root);
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
    ServerCgroup server_cg(root + "-daemon");  // outlives the process
    const int port = testing::FreeLoopbackPort();
    ChildProcess statlet({STATLET_BINARY, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                          "--collector.subtree=" + root, "--collector.max-age=0s", "--cri.listen=" + socket,
                          "--runtime.endpoint=none"},
                         dir.path() + "/statlet.log");
    if (!server_cg.Move(statlet.pid())) {
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
    const double idle0 = server_cg.CpuMs();
    const auto idle_start = Clock::now();
    std::this_thread::sleep_for(std::chrono::seconds(3));  // a measurement window
    const double idle_ms_per_s =
        (server_cg.CpuMs() - idle0) / std::chrono::duration<double>(Clock::now() - idle_start).count();
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
    ServerCgroup server_cg(root + "-hot");  // outlives the process
    testing::ServerProcess server;
    if (!server.Start({CRI_TEST_SERVER, "--socket", socket, "--live", root, "--max-age-ms", "0"}, 60000)) {
      std::fprintf(stderr, "cri_test_server: %s\n", server.error().c_str());
      return 1;
    }
    if (!server_cg.Move(server.pid())) {
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
