// What the net probe (cgroup_skb ingress/egress on the unified root: every socket of the
// host) costs loopback TCP, probe on vs off in one run, alternating which side goes first:
//   stream     iperf3 (Debian's) over 127.0.0.1, one TCP stream for [seconds] s: the
//              receiver's throughput, and that per CPU-second of both ends (iperf3's own
//              CPU figures: what contention for the CPUs blurs less). Each GSO super-packet
//              (up to 64 KiB) runs the egress program once, and the ingress program once at
//              the receiver (its ACKs the other way round).
//   pingpong   two processes on one TCP connection over 127.0.0.1 (TCP_NODELAY) bounce one
//              byte [round trips] times: per round trip four packets (two data, two ACKs
//              or piggybacked), each through a program; wall time and both processes' CPU
//              time per round trip.
// Each round runs three sides: nothing attached, the floor (empty cgroup_skb programs at the
// same place: the kernel's dispatch alone, bench/bpf/empty_skb_programs.h) and the probe.
// Ratios are medians of the per-round ratios (> 1: the first side costs), with their range.
//   statlet_net_probe_bench [rounds] [seconds] [round trips]   (root; iperf3 on PATH)
#include <arpa/inet.h>
#include <bpf/bpf.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "bench/bpf/empty_skb_programs.h"
#include "bench/bpf/program_stats.h"
#include "bpf/bpf_probes.h"

namespace {

using statlet::bench::HighestProgramId;
using statlet::bench::StatletProgramsAfter;

constexpr int kIperfPort = 5291;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n == 0 ? 0 : n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

struct Stream {
  double gbit_s = 0;        // the receiver's throughput
  double gbit_per_cpu = 0;  // per CPU-second of both ends (iperf3's host_total + remote_total)
};

double JsonNumber(const std::string& json, size_t from, const char* key) {
  size_t at = json.find(std::string("\"") + key + "\"", from);
  if (at == std::string::npos) return 0;
  at = json.find(':', at);
  return std::strtod(json.c_str() + at + 1, nullptr);
}

// One iperf3 run, from its JSON (end.sum_received and end.cpu_utilization_percent); zeros
// on failure.
Stream RunIperf(int seconds) {
  std::string cmd = "iperf3 -c 127.0.0.1 -p " + std::to_string(kIperfPort) + " -t " + std::to_string(seconds) + " -J";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {};
  std::string out;
  char buf[4096];
  for (size_t n; (n = fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  if (pclose(p) != 0) return {};
  size_t end = out.find("\"sum_received\"");
  size_t cpu = out.find("\"cpu_utilization_percent\"");
  if (end == std::string::npos || cpu == std::string::npos) return {};
  Stream s;
  s.gbit_s = JsonNumber(out, end, "bits_per_second") / 1e9;
  const double cpu_share = (JsonNumber(out, cpu, "host_total") + JsonNumber(out, cpu, "remote_total")) / 100;
  s.gbit_per_cpu = cpu_share > 0 ? s.gbit_s / cpu_share : 0;
  return s;
}

struct PingPong {
  double wall_ns = 0;  // per round trip
  double cpu_ns = 0;   // both processes, per round trip
};

double CpuNs(const rusage& ru) {
  return (ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e9 + (ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) * 1e3;
}

// One byte back and forth `trips` times between this process's child and grandchild.
PingPong RunPingPong(int trips) {
  int ready[2];
  if (pipe(ready) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    int ls = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    int one = 1;
    if (bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(ls, 1) != 0) _exit(2);
    socklen_t len = sizeof(addr);
    getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len);
    pid_t echo = fork();
    if (echo == 0) {
      int s = accept(ls, nullptr, nullptr);
      setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
      char c;
      while (read(s, &c, 1) == 1) {
        if (write(s, &c, 1) != 1) break;
      }
      _exit(0);
    }
    int s = socket(AF_INET, SOCK_STREAM, 0);
    if (connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) _exit(3);
    setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    auto start = std::chrono::steady_clock::now();
    char c = 'x';
    for (int i = 0; i < trips; i++) {
      if (write(s, &c, 1) != 1 || read(s, &c, 1) != 1) _exit(4);
    }
    double wall = std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
    close(s);
    int status = 0;
    waitpid(echo, &status, 0);
    if (write(ready[1], &wall, sizeof(wall)) != sizeof(wall)) _exit(5);
    _exit(0);
  }
  close(ready[1]);
  double wall = 0;
  bool got = read(ready[0], &wall, sizeof(wall)) == sizeof(wall);
  close(ready[0]);
  int status = 0;
  rusage ru{};
  if (wait4(pid, &status, 0, &ru) != pid || !got) return {};
  // wait4's usage of the child includes the echo grandchild it reaped.
  return {wall / trips, CpuNs(ru) / trips};
}

std::unique_ptr<statlet::BpfProbes> LoadNetProbe() {
  statlet::BpfOptions options = statlet::BpfOptions::WithMode(statlet::BpfMode::kOn);
  options.probes = {"net"};
  auto probes = statlet::BpfProbes::Create(options);
  if (!probes.ok()) {
    std::fprintf(stderr, "net probe: %s\n", probes.status().ToString().c_str());
    std::exit(1);
  }
  return std::move(probes).value();
}

// With the kernel's run-time statistics on (they add clock reads of their own, so not
// during the rounds): each program's runs and mean ns per run over one stream and one
// ping-pong, i.e. the programs' own cost per packet, which the host's noise does not blur.
void PrintProgramCosts(int seconds, int trips) {
  const uint32_t before = HighestProgramId();
  auto probes = LoadNetProbe();
  int stats_fd = bpf_enable_stats(BPF_STATS_RUN_TIME);
  if (stats_fd < 0) {
    std::printf("program run-time statistics unavailable\n");
    return;
  }
  for (const char* pass : {"stream", "pingpong"}) {
    const auto start = StatletProgramsAfter(before);
    double per_trip = 0;
    if (std::string(pass) == "stream") {
      std::printf("stream (stats on): %.2f Gbit/s\n", RunIperf(seconds).gbit_s);
    } else {
      per_trip = RunPingPong(trips).wall_ns;
      std::printf("pingpong (stats on): %.0f ns per round trip\n", per_trip);
    }
    for (const auto& [id, info] : StatletProgramsAfter(before)) {
      for (const auto& [id0, info0] : start) {
        if (id0 != id) continue;
        const unsigned long long runs = info.run_cnt - info0.run_cnt;
        const double ns = static_cast<double>(info.run_time_ns - info0.run_time_ns);
        std::printf("  %-18s %10llu runs %8.1f ns/run", info.name, runs, runs ? ns / runs : 0.0);
        if (per_trip > 0) std::printf("  %5.2f runs per round trip", static_cast<double>(runs) / trips);
        std::printf("\n");
      }
    }
  }
  close(stats_fd);
}

}  // namespace

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? std::atoi(argv[1]) : 7;
  const int seconds = argc > 2 ? std::atoi(argv[2]) : 3;
  const int trips = argc > 3 ? std::atoi(argv[3]) : 50000;
  pid_t server = fork();
  if (server == 0) {
    int null = open("/dev/null", O_WRONLY);
    dup2(null, STDOUT_FILENO);
    execlp("iperf3", "iperf3", "-s", "-p", std::to_string(kIperfPort).c_str(), nullptr);
    _exit(127);
  }
  // The server is up when a client run succeeds.
  bool up = false;
  for (int i = 0; i < 50 && !up; i++) {
    up = RunIperf(1).gbit_s > 0;
    if (!up) usleep(100000);
  }
  if (!up) {
    std::fprintf(stderr, "iperf3 server did not answer\n");
    kill(server, SIGTERM);
    return 1;
  }
  // Three sides per round, in an order that rotates from round to round: nothing attached,
  // the floor (empty programs: the kernel's dispatch alone), the probe.
  enum Side { kOff, kFloor, kOn, kSides };
  const char* const kSideName[kSides] = {"off", "floor", "on"};
  std::vector<double> stream[kSides], per_cpu[kSides], wall[kSides], cpu[kSides];
  // Per-round ratios against `base`: throughput as base/side (> 1: the side costs), time as side/base.
  struct Ratios {
    std::vector<double> stream, per_cpu, wall, cpu;
  } ratio[kSides][kSides];
  std::printf(
      "round  order           stream Gbit/s off/floor/on   pingpong wall ns off/floor/on   cpu ns off/floor/on\n");
  for (int r = 0; r < rounds; r++) {
    double s[kSides], e[kSides], w[kSides], c[kSides];
    std::string order;
    for (int k = 0; k < kSides; k++) {
      const int side = (r + k) % kSides;
      order += std::string(k ? "," : "") + kSideName[side];
      std::unique_ptr<statlet::BpfProbes> probes = side == kOn ? LoadNetProbe() : nullptr;
      std::unique_ptr<statlet::bench::EmptySkbPrograms> floor;
      if (side == kFloor) {
        floor = std::make_unique<statlet::bench::EmptySkbPrograms>();
        if (!floor->Attach()) {
          kill(server, SIGTERM);
          waitpid(server, nullptr, 0);
          return 1;
        }
      }
      Stream st = RunIperf(seconds);
      s[side] = st.gbit_s;
      e[side] = st.gbit_per_cpu;
      PingPong p = RunPingPong(trips);
      w[side] = p.wall_ns;
      c[side] = p.cpu_ns;
    }
    for (int side = 0; side < kSides; side++) {
      stream[side].push_back(s[side]);
      per_cpu[side].push_back(e[side]);
      wall[side].push_back(w[side]);
      cpu[side].push_back(c[side]);
      for (int base = 0; base < kSides; base++) {
        ratio[side][base].stream.push_back(s[base] / s[side]);
        ratio[side][base].per_cpu.push_back(e[base] / e[side]);
        ratio[side][base].wall.push_back(w[side] / w[base]);
        ratio[side][base].cpu.push_back(c[side] / c[base]);
      }
    }
    std::printf("%5d  %-14s  %6.2f / %6.2f / %6.2f      %6.0f / %6.0f / %6.0f      %6.0f / %6.0f / %6.0f\n", r,
                order.c_str(), s[kOff], s[kFloor], s[kOn], w[kOff], w[kFloor], w[kOn], c[kOff], c[kFloor], c[kOn]);
  }
  std::printf("\n");
  PrintProgramCosts(seconds, trips);
  kill(server, SIGTERM);
  waitpid(server, nullptr, 0);
  auto range = [](const std::vector<double>& v) {
    return std::to_string(*std::min_element(v.begin(), v.end())).substr(0, 5) + "-" +
           std::to_string(*std::max_element(v.begin(), v.end())).substr(0, 5);
  };
  std::printf("\nmedians over %d rounds (off / floor / on):\n", rounds);
  std::printf("  stream   %.2f / %.2f / %.2f Gbit/s; %.2f / %.2f / %.2f Gbit per CPU-second\n", Median(stream[kOff]),
              Median(stream[kFloor]), Median(stream[kOn]), Median(per_cpu[kOff]), Median(per_cpu[kFloor]),
              Median(per_cpu[kOn]));
  std::printf("  pingpong wall %.0f / %.0f / %.0f ns, cpu %.0f / %.0f / %.0f ns per round trip\n", Median(wall[kOff]),
              Median(wall[kFloor]), Median(wall[kOn]), Median(cpu[kOff]), Median(cpu[kFloor]), Median(cpu[kOn]));
  std::printf("ratios, medians of the rounds' ratios (> 1: the first side costs), with their range:\n");
  const int pairs[3][2] = {{kOn, kOff}, {kFloor, kOff}, {kOn, kFloor}};
  for (const auto& [side, base] : pairs) {
    const Ratios& q = ratio[side][base];
    std::printf("  %-5s vs %-5s  throughput %.4f (%s)  per CPU-s %.4f (%s)  pingpong wall %.4f (%s)  cpu %.4f (%s)\n",
                kSideName[side], kSideName[base], Median(q.stream), range(q.stream).c_str(), Median(q.per_cpu),
                range(q.per_cpu).c_str(), Median(q.wall), range(q.wall).c_str(), Median(q.cpu), range(q.cpu).c_str());
  }
  return 0;
}
