// Whole-process scrape benchmark. For N real cgroups (each holding a sleeping process) it
// measures, in one run:
//   floor   — pread() of the same cgroup files statlet reads, through kept fds, in-process;
//   statlet — the daemon scraped over loopback: latency p50/p99, bytes, series, CPU per
//             scrape (utime+stime delta) and RSS;
//   node_exporter — Debian's prometheus-node-exporter on loopback, as a reference exporter.
// Prints one line per measurement and the ratio of statlet to the floor.
//
// usage: bench_prometheus_scrape [cgroups...]   (default: 100 1000; needs root)
#include <fcntl.h>
#include <httplib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "tests/prometheus/child_process.h"
#include "tests/prometheus/live_cgroups.h"
#include "tests/prometheus/test_snapshots.h"

namespace statlet::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kScrapes = 60;

struct Files {
  const char* hierarchy;
  std::vector<const char*> names;
};
// The files of statlet's read plan (collector/cgroup_files.cc) that exist on this host.
const std::vector<Files> kReadPlan = {
    {"unified", {"cpu.stat", "cpu.max", "cpu.weight", "memory.current", "memory.peak", "memory.stat",
                 "memory.events", "memory.events.local", "memory.min", "memory.low", "memory.high", "memory.max",
                 "memory.swap.current", "memory.swap.max", "pids.current", "pids.max", "pids.events", "io.stat",
                 "cpu.pressure", "memory.pressure", "io.pressure", "cgroup.procs"}},
    {"cpuacct", {"cpuacct.usage_percpu", "cpuacct.usage_user", "cpuacct.usage_sys"}},
    {"cpu", {"cpu.stat", "cpu.cfs_quota_us", "cpu.cfs_period_us", "cpu.shares"}},
    {"memory", {"memory.usage_in_bytes", "memory.max_usage_in_bytes", "memory.stat", "memory.failcnt",
                "memory.limit_in_bytes", "memory.soft_limit_in_bytes", "memory.memsw.limit_in_bytes",
                "memory.oom_control"}},
    {"pids", {"pids.current", "pids.max", "pids.events"}},
    {"blkio", {"blkio.throttle.io_service_bytes_recursive", "blkio.throttle.io_serviced_recursive"}},
};

double Pct(std::vector<double> v, double p) {
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<size_t>(p * static_cast<double>(v.size())))];
}

double ProcCpuMs(pid_t pid) { return ProcessCpuSeconds(pid) * 1000.0; }

long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stol(line.substr(6));
  }
  return -1;
}

struct ScrapeStats {
  double p50_ms = 0, p99_ms = 0, cpu_ms = 0;
  size_t bytes = 0, series = 0;
  long rss_kib = 0;
};

ScrapeStats ScrapeLoop(int port, pid_t pid, const std::string& path) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_keep_alive(true);
  cli.set_decompress(false);
  cli.set_read_timeout(60, 0);
  ScrapeStats s;
  for (int i = 0; i < 3; ++i) cli.Get(path.c_str());  // warm-up: opens fds, fills caches
  std::vector<double> ms;
  double cpu0 = ProcCpuMs(pid);
  for (int i = 0; i < kScrapes; ++i) {
    auto t0 = Clock::now();
    auto r = cli.Get(path.c_str());
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
    if (!r || r->status != 200) {
      std::fprintf(stderr, "scrape failed\n");
      std::exit(1);
    }
    s.bytes = r->body.size();
    s.series = CountSamples(r->body);
  }
  s.cpu_ms = (ProcCpuMs(pid) - cpu0) / kScrapes;
  s.p50_ms = Pct(ms, 0.5);
  s.p99_ms = Pct(ms, 0.99);
  s.rss_kib = RssKiB(pid);
  return s;
}

void RunAt(size_t n, bool node_exporter) {
  const std::string root = "/statlet-bench-" + std::to_string(::getpid()) + "-" + std::to_string(n);
  LiveCgroupTree tree(root);
  std::vector<pid_t> sleepers;
  for (size_t i = 0; i < n; ++i) {
    std::string child = "c" + std::to_string(i);
    if (!tree.Add(child)) { std::fprintf(stderr, "cannot create cgroups (root needed)\n"); std::exit(1); }
    pid_t p = ::fork();
    if (p == 0) { ::pause(); ::_exit(0); }
    sleepers.push_back(p);
    tree.Move(child, p);
  }

  // Floor: kept fds over the same files, one pread each per pass.
  std::vector<int> fds;
  for (size_t i = 0; i < n; ++i) {
    for (const Files& f : kReadPlan) {
      for (const char* name : f.names) {
        std::string path = std::string("/sys/fs/cgroup/") + f.hierarchy + root + "/c" + std::to_string(i) + "/" + name;
        int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd >= 0) fds.push_back(fd);
      }
    }
  }
  std::vector<double> floor_ms;
  static char buf[65536];
  double floor_cpu0 = 0;
  for (int pass = 0; pass < kScrapes + 3; ++pass) {
    if (pass == 3) floor_cpu0 = ProcCpuMs(::getpid());
    auto t0 = Clock::now();
    for (int fd : fds) (void)!::pread(fd, buf, sizeof buf, 0);
    if (pass >= 3) floor_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
  }
  const double floor_cpu_ms = (ProcCpuMs(::getpid()) - floor_cpu0) / kScrapes;
  for (int fd : fds) ::close(fd);

  char dir[] = "/tmp/statlet-bench-XXXXXX";
  ::mkdtemp(dir);
  const int port = FreeLoopbackPort();
  ChildProcess statlet({STATLET_BINARY, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                        "--collector.subtree=" + root},
                       std::string(dir) + "/statlet.log");
  httplib::Client probe("127.0.0.1", port);
  if (!WaitFor([&] { auto r = probe.Get("/readyz"); return r && r->status == 200; }, std::chrono::seconds(30))) {
    std::fprintf(stderr, "statlet did not become ready\n%s", ReadWholeFile(std::string(dir) + "/statlet.log").c_str());
    std::exit(1);
  }
  ScrapeStats st = ScrapeLoop(port, statlet.pid(), "/metrics");
  statlet.Stop();

  const double floor_p50 = Pct(floor_ms, 0.5);
  const double target_ms = 1.3 * floor_p50 + 150e-6 * static_cast<double>(st.series);
  std::printf("cgroups=%zu floor_pread files=%zu p50_ms=%.3f p99_ms=%.3f cpu_ms_per_pass=%.2f\n", n, fds.size(),
              floor_p50, Pct(floor_ms, 0.99), floor_cpu_ms);
  std::printf("cgroups=%zu statlet p50_ms=%.3f p99_ms=%.3f cpu_ms_per_scrape=%.2f bytes=%zu series=%zu rss_mib=%.1f "
              "p50/floor=%.2f target(1.3*floor+150ns*series)_ms=%.3f p50/target=%.2f cpu/floor_cpu=%.2f\n",
              n, st.p50_ms, st.p99_ms, st.cpu_ms, st.bytes, st.series, st.rss_kib / 1024.0, st.p50_ms / floor_p50,
              target_ms, st.p50_ms / target_ms, st.cpu_ms / floor_cpu_ms);

  if (node_exporter && ::access("/usr/bin/prometheus-node-exporter", X_OK) == 0) {
    const int ne_port = FreeLoopbackPort();
    ChildProcess ne({"/usr/bin/prometheus-node-exporter", "--web.listen-address=127.0.0.1:" + std::to_string(ne_port)},
                    std::string(dir) + "/node_exporter.log");
    httplib::Client ne_probe("127.0.0.1", ne_port);
    if (WaitFor([&] { auto r = ne_probe.Get("/metrics"); return r && r->status == 200; }, std::chrono::seconds(20))) {
      ScrapeStats ns = ScrapeLoop(ne_port, ne.pid(), "/metrics");
      std::printf("reference node_exporter p50_ms=%.3f p99_ms=%.3f cpu_ms_per_scrape=%.2f bytes=%zu series=%zu "
                  "rss_mib=%.1f\n",
                  ns.p50_ms, ns.p99_ms, ns.cpu_ms, ns.bytes, ns.series, ns.rss_kib / 1024.0);
    }
    ne.Stop();
  }
  for (pid_t p : sleepers) KillAndReap(p);
  std::system((std::string("rm -rf ") + dir).c_str());
}

}  // namespace
}  // namespace statlet::testing

int main(int argc, char** argv) {
  std::vector<size_t> sizes;
  for (int i = 1; i < argc; ++i) sizes.push_back(std::stoul(argv[i]));
  if (sizes.empty()) sizes = {100, 1000};
  for (size_t i = 0; i < sizes.size(); ++i) statlet::testing::RunAt(sizes[i], i == 0);
  return 0;
}
