// Whole-process scrape benchmark. For N real cgroups (each holding a sleeping process) it
// measures, in one run:
//   floor   — bench/support/read_floor.h, in-process: the files statlet reads for this tree
//             (its read plan and process lists) on kept fds under its fd budget, and the
//             daemon's default process fd scan; no parsing;
//   statlet — the daemon scraped over loopback: latency p50/p99, bytes, series, CPU per
//             scrape (its own cgroup's CPU time, every thread) and RSS;
//   node_exporter — Debian's prometheus-node-exporter on loopback, as a reference exporter.
// Prints one line per measurement and the ratio of statlet to the floor.
//
// usage: bench_prometheus_scrape [cgroups...]   (default: 100 1000; needs root)
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "bench/support/bench_tree.h"
#include "bench/support/read_floor.h"
#include "bpf/bpf_probes.h"
#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/wait_for.h"

namespace statlet::testing {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kScrapes = 60;

// CPU time of everything that ran in `cg`, in ms.
double CpuMs(const LiveCgroup& cg) { return static_cast<double>(cg.CpuUsageNs()) / 1e6; }

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

// `cg`: the server's own cgroup, for its CPU time.
ScrapeStats ScrapeLoop(int port, pid_t pid, const LiveCgroup& cg, const std::string& path) {
  httplib::Client cli("127.0.0.1", port);
  cli.set_keep_alive(true);
  cli.set_decompress(false);
  cli.set_read_timeout(60, 0);
  ScrapeStats s;
  for (int i = 0; i < 3; ++i) cli.Get(path.c_str());  // warm-up: opens fds, fills caches
  std::vector<double> ms;
  double cpu0 = CpuMs(cg);
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
  s.cpu_ms = (CpuMs(cg) - cpu0) / kScrapes;
  s.p50_ms = bench::Percentile(ms, 0.5);
  s.p99_ms = bench::Percentile(ms, 0.99);
  s.rss_kib = RssKiB(pid);
  return s;
}

void RunAt(size_t n, bool node_exporter) {
  const std::string root = "/statlet-bench-" + std::to_string(::getpid()) + "-" + std::to_string(n);
  bench::BenchTree tree(root, n, bench::BenchTree::kFlat);
  if (!tree.ok()) {
    std::fprintf(stderr, "cannot create cgroups (root needed): %s\n", tree.error().c_str());
    std::exit(1);
  }

  // The floor, with the process fd scan the daemon does by default (--collector.process-fds);
  // its kept fds are closed again before statlet starts.
  bench::FloorResult f;
  size_t floor_files = 0, floor_kept_fds = 0, floor_processes = 0;
  {
    // The daemon's cgroup_stats probe, loaded here too: the floor walks where it walks.
    BpfOptions bo = BpfOptions::WithMode(BpfMode::kAuto);
    bo.probes = {"cgroup_stats"};
    auto probes = BpfProbes::Create(bo);
    bench::ReadFloor floor(root, CollectParts::All(), CollectorOptions::kDefaultMaxKeptFiles,
                           probes.ok() ? (*probes)->FileSource() : nullptr);
    f = bench::MeasureFloor(&floor, kScrapes, true, std::chrono::nanoseconds(0));
    floor_files = floor.files();
    floor_kept_fds = floor.kept_fds();
    floor_processes = floor.processes();
  }

  char dir[] = "/tmp/statlet-bench-XXXXXX";
  ::mkdtemp(dir);
  const int port = FreeLoopbackPort();
  LiveCgroup statlet_cg(root + "-statlet", bench::ServerCgroupHierarchies());  // outlives the process
  BinaryProcess statlet({STATLET_BINARY, "--web.listen-address=127.0.0.1:" + std::to_string(port),
                         "--collector.subtree=" + root, "--cri.listen=", "--runtime.endpoint=none"},
                        std::string(dir) + "/statlet.log");
  if (!statlet_cg.Add(statlet.pid())) {
    std::fprintf(stderr, "cannot move statlet into a cgroup of its own: %s\n", statlet_cg.error().c_str());
    std::exit(1);
  }
  httplib::Client probe("127.0.0.1", port);
  if (!WaitFor(
          [&] {
            auto r = probe.Get("/readyz");
            return r && r->status == 200;
          },
          std::chrono::seconds(30))) {
    std::fprintf(stderr, "statlet did not become ready\n%s", ReadWholeFile(std::string(dir) + "/statlet.log").c_str());
    std::exit(1);
  }
  ScrapeStats st = ScrapeLoop(port, statlet.pid(), statlet_cg, "/metrics");
  statlet.Stop();

  const double floor_p50 = f.p50_ms;
  const double target_ms = 1.3 * floor_p50 + 150e-6 * static_cast<double>(st.series);
  std::printf(
      "cgroups=%zu floor files=%zu kept_fds=%zu reopen_ms=%.3f failed_reads=%zu processes=%zu "
      "fds_listed=%zu p50_ms=%.3f p99_ms=%.3f cpu_ms_per_pass=%.2f\n",
      n, floor_files, floor_kept_fds, f.reopen_ms, f.failed_reads, floor_processes, f.fds_listed, floor_p50, f.p99_ms,
      f.cpu_ms);
  std::printf(
      "cgroups=%zu statlet p50_ms=%.3f p99_ms=%.3f cpu_ms_per_scrape=%.2f bytes=%zu series=%zu rss_mib=%.1f "
      "p50/floor=%.2f target(1.3*floor+150ns*series)_ms=%.3f p50/target=%.2f cpu/floor_cpu=%.2f\n",
      n, st.p50_ms, st.p99_ms, st.cpu_ms, st.bytes, st.series, st.rss_kib / 1024.0, st.p50_ms / floor_p50, target_ms,
      st.p50_ms / target_ms, st.cpu_ms / f.cpu_ms);

  if (node_exporter && ::access("/usr/bin/prometheus-node-exporter", X_OK) == 0) {
    const int ne_port = FreeLoopbackPort();
    LiveCgroup ne_cg(root + "-node-exporter", bench::ServerCgroupHierarchies());
    BinaryProcess ne({"/usr/bin/prometheus-node-exporter", "--web.listen-address=127.0.0.1:" + std::to_string(ne_port)},
                     std::string(dir) + "/node_exporter.log");
    httplib::Client ne_probe("127.0.0.1", ne_port);
    if (ne_cg.Add(ne.pid()) && WaitFor(
                                   [&] {
                                     auto r = ne_probe.Get("/metrics");
                                     return r && r->status == 200;
                                   },
                                   std::chrono::seconds(20))) {
      ScrapeStats ns = ScrapeLoop(ne_port, ne.pid(), ne_cg, "/metrics");
      std::printf(
          "reference node_exporter p50_ms=%.3f p99_ms=%.3f cpu_ms_per_scrape=%.2f bytes=%zu series=%zu "
          "rss_mib=%.1f\n",
          ns.p50_ms, ns.p99_ms, ns.cpu_ms, ns.bytes, ns.series, ns.rss_kib / 1024.0);
    }
    ne.Stop();
  }
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
