// ListContainerStats: containerd 1.6 (the runtime's own answer, gathered through one shim
// call per container) against statlet's (one collection over kept cgroup fds), on the same
// running containers. By default at 10 and 50 containers (5 per pod); `--pods P
// --containers C` runs one shape instead (containers spread over the pods in turn), and
// `--whole-host` lets statlet collect every cgroup of the host, as a node agent does.
//
// Each round measures both sides (the order alternates between rounds, so that noise from
// other work on the machine falls on both): per-call latency (median over --calls
// sequential calls) and the CPU time its processes spent answering them (containerd plus its
// shims; statlet's agent), from /proc/<pid>/stat. Printed: the median of the rounds and their
// spread [min–max]. The floor row is statlet's Version call over the same channel: gRPC's
// per-call cost with no collection. statlet collects afresh on every call here
// (--cri.max-age=0s), its worst case; the runtime client's periodic ListContainerStats is
// off so that containerd's CPU is the bench's alone. Both sides must answer the same
// container ids (the shape's, no more, no fewer).
//
// Exits non-zero when statlet is not faster per call than containerd (the figure is
// reported, the floor is only "faster"). `--json FILE` also writes every row there (for
// bench/run's results.json).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/e2e_stage.h"

namespace statlet::e2e {
namespace {

using Clock = std::chrono::steady_clock;

struct Figures {
  double median_ms = 0, cpu_ms_per_call = 0;
  std::set<std::string> ids;  // the containers of the last answer
};

uint64_t CpuOf(const std::vector<pid_t>& pids) {
  uint64_t sum = 0;
  for (pid_t p : pids) sum += ProcessCpuNs(p);
  return sum;
}

// `calls` timed calls of `call` (after two untimed ones: connections, caches and
// containerd's first-call rate state).
template <typename Call>
StatusOr<Figures> Measure(const std::vector<pid_t>& pids, int calls, Call&& call) {
  Figures f;
  for (int i = 0; i < 2; ++i) {
    if (Status s = call(f); !s.ok()) return s;
  }
  std::vector<double> ms;
  ms.reserve(static_cast<size_t>(calls));
  const uint64_t cpu_before = CpuOf(pids);
  for (int i = 0; i < calls; ++i) {
    auto t0 = Clock::now();
    Status s = call(f);
    auto t1 = Clock::now();
    if (!s.ok()) return s;
    ms.push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
  }
  f.cpu_ms_per_call = static_cast<double>(CpuOf(pids) - cpu_before) / 1e6 / calls;
  std::sort(ms.begin(), ms.end());
  f.median_ms = ms[ms.size() / 2];
  return f;
}

StatusOr<Figures> MeasureList(v1::RuntimeService::Stub* stub, const std::vector<pid_t>& pids, int calls) {
  return Measure(pids, calls, [&](Figures& f) -> Status {
    v1::ListContainerStatsResponse r;
    grpc::Status s = stub->ListContainerStats(CallContext().get(), v1::ListContainerStatsRequest(), &r);
    if (!s.ok()) return Unavailable("ListContainerStats: " + s.error_message());
    f.ids.clear();
    for (const auto& c : r.stats()) f.ids.insert(c.attributes().id());
    return Status::Ok();
  });
}

StatusOr<Figures> MeasureVersion(v1::RuntimeService::Stub* stub, const std::vector<pid_t>& pids, int calls) {
  return Measure(pids, calls, [&](Figures&) -> Status {
    v1::VersionResponse r;
    grpc::Status s = stub->Version(CallContext().get(), v1::VersionRequest(), &r);
    if (!s.ok()) return Unavailable("Version: " + s.error_message());
    return Status::Ok();
  });
}

// The median and range of one figure over the rounds.
struct Spread {
  double median = 0, min = 0, max = 0;
};
Spread SpreadOf(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v.front(), v.back()};
}

struct Shape {
  int pods = 0, containers = 0;
};

struct Options {
  int calls = 100;
  int rounds = 3;
  bool whole_host = false;
  std::string json;  // where the rows go as JSON too; empty: nowhere
  std::vector<Shape> shapes = {{2, 10}, {10, 50}};
};

int Run(const Options& opt) {
  StageOptions options;
  options.agent_binary = STATLET_E2E_AGENT;
  options.harness_script = STATLET_E2E_HARNESS;
  options.agent_flags = {"--cri.max-age=0s", "--runtime.stats-period=0s"};
  options.whole_host = opt.whole_host;
  auto stage = E2eStage::Start(options);
  if (!stage.ok()) {
    std::fprintf(stderr, "stage: %s\n", stage.status().ToString().c_str());
    return 1;
  }
  E2eStage& st = **stage;
  std::vector<Pod> pods;
  int running = 0;
  bool failed = false;
  std::ostringstream js;  // the shapes' JSON objects, comma-separated

  std::printf("calls per side and round %d, rounds %d, statlet collects %s\n", opt.calls, opt.rounds,
              opt.whole_host ? "the whole host" : "the stage's cgroups");
  std::printf("%-6s %-10s %-10s %-20s %26s %26s\n", "pods", "containers", "server", "call", "median ms [min-max]",
              "CPU ms/call [min-max]");
  for (const Shape& shape : opt.shapes) {
    while (static_cast<int>(pods.size()) < shape.pods) {
      auto pod = st.driver().RunPod({"bench-" + std::to_string(pods.size()), "e2e-bench", {}});
      if (!pod.ok()) {
        std::fprintf(stderr, "RunPod: %s\n", pod.status().ToString().c_str());
        return 1;
      }
      pods.push_back(*pod);
    }
    while (running < shape.containers) {
      auto id = st.driver().StartContainer(pods[static_cast<size_t>(running % shape.pods)],
                                           {"idle-" + std::to_string(running), {"sh", "-c", "exec sleep 2147483647"}});
      if (!id.ok()) {
        std::fprintf(stderr, "StartContainer: %s\n", id.status().ToString().c_str());
        return 1;
      }
      ++running;
    }
    std::vector<double> theirs_ms, theirs_cpu, ours_ms, ours_cpu, floor_ms, floor_cpu;
    for (int round = 0; round < opt.rounds; ++round) {
      StatusOr<Figures> theirs = Unavailable("not measured"), ours = theirs;
      if (round % 2 == 0) {
        theirs = MeasureList(st.containerd(), st.ContainerdPids(), opt.calls);
        ours = MeasureList(st.statlet(), {st.agent_pid()}, opt.calls);
      } else {
        ours = MeasureList(st.statlet(), {st.agent_pid()}, opt.calls);
        theirs = MeasureList(st.containerd(), st.ContainerdPids(), opt.calls);
      }
      auto floor = MeasureVersion(st.statlet(), {st.agent_pid()}, opt.calls);
      if (!theirs.ok() || !ours.ok() || !floor.ok()) {
        std::fprintf(stderr, "a call failed: %s %s %s\n", theirs.status().ToString().c_str(),
                     ours.status().ToString().c_str(), floor.status().ToString().c_str());
        return 1;
      }
      // Both sides must answer exactly the containers of the shape: an id only one side
      // lists (a container missed, a pod's sandbox or some other cgroup taken for one)
      // fails the run.
      bool differ = static_cast<int>(theirs->ids.size()) != shape.containers;
      for (const std::string& id : theirs->ids) {
        if (!ours->ids.count(id)) {
          std::fprintf(stderr, "  only containerd: %s\n", id.c_str());
          differ = true;
        }
      }
      for (const std::string& id : ours->ids) {
        if (!theirs->ids.count(id)) {
          std::fprintf(stderr, "  only statlet: %s\n", id.c_str());
          differ = true;
        }
      }
      if (differ) {
        std::fprintf(stderr, "the answers differ: containerd lists %zu containers, statlet %zu (want %d)\n",
                     theirs->ids.size(), ours->ids.size(), shape.containers);
        return 1;
      }
      theirs_ms.push_back(theirs->median_ms);
      theirs_cpu.push_back(theirs->cpu_ms_per_call);
      ours_ms.push_back(ours->median_ms);
      ours_cpu.push_back(ours->cpu_ms_per_call);
      floor_ms.push_back(floor->median_ms);
      floor_cpu.push_back(floor->cpu_ms_per_call);
    }
    std::ostringstream rows;
    auto row = [&](const char* server, const char* call, const std::vector<double>& ms,
                   const std::vector<double>& cpu) {
      Spread l = SpreadOf(ms), c = SpreadOf(cpu);
      std::printf("%-6d %-10d %-10s %-20s %8.3f [%7.3f-%7.3f] %8.3f [%7.3f-%7.3f]\n", shape.pods, shape.containers,
                  server, call, l.median, l.min, l.max, c.median, c.min, c.max);
      char buf[512];
      std::snprintf(buf, sizeof(buf),
                    "%s{\"side\": \"%s\", \"call\": \"%s\", \"p50_ms\": %.4f, \"p50_min_ms\": %.4f, "
                    "\"p50_max_ms\": %.4f, \"cpu_ms\": %.4f, \"cpu_min_ms\": %.4f, \"cpu_max_ms\": %.4f}",
                    rows.tellp() > 0 ? ", " : "", server, call, l.median, l.min, l.max, c.median, c.min, c.max);
      rows << buf;
    };
    row("containerd", "ListContainerStats", theirs_ms, theirs_cpu);
    row("statlet", "ListContainerStats", ours_ms, ours_cpu);
    row("statlet", "Version (gRPC floor)", floor_ms, floor_cpu);
    const Spread tl = SpreadOf(theirs_ms), ol = SpreadOf(ours_ms), tc = SpreadOf(theirs_cpu), oc = SpreadOf(ours_cpu);
    std::printf("%-6d %-10d containerd/statlet (medians): %.1fx latency, %.1fx CPU; both answered the %d containers\n",
                shape.pods, shape.containers, tl.median / ol.median, oc.median > 0 ? tc.median / oc.median : 0.0,
                shape.containers);
    if (ol.median >= tl.median) failed = true;
    char head[256];
    std::snprintf(head, sizeof(head),
                  "%s{\"pods\": %d, \"containers\": %d, \"latency_ratio\": %.3f, \"cpu_ratio\": %.3f, \"rows\": [",
                  js.tellp() > 0 ? ", " : "", shape.pods, shape.containers, tl.median / ol.median,
                  oc.median > 0 ? tc.median / oc.median : 0.0);
    js << head << rows.str() << "]}";
  }
  if (!opt.json.empty()) {
    std::ofstream(opt.json) << "{\"calls\": " << opt.calls << ", \"rounds\": " << opt.rounds
                            << ", \"whole_host\": " << (opt.whole_host ? "true" : "false") << ", \"shapes\": ["
                            << js.str() << "]}\n";
  }
  for (const Pod& p : pods) {
    if (Status s = st.driver().RemovePod(p); !s.ok()) std::fprintf(stderr, "%s\n", s.ToString().c_str());
  }
  st.Stop();
  return failed ? 1 : 0;
}

}  // namespace
}  // namespace statlet::e2e

int main(int argc, char** argv) {
  statlet::e2e::Options opt;
  int pods = 0, containers = 0;
  for (int i = 1; i < argc; ++i) {
    const bool has_value = i + 1 < argc;
    if (std::strcmp(argv[i], "--whole-host") == 0) {
      opt.whole_host = true;
    } else if (has_value && std::strcmp(argv[i], "--calls") == 0) {
      opt.calls = std::max(1, std::atoi(argv[++i]));
    } else if (has_value && std::strcmp(argv[i], "--rounds") == 0) {
      opt.rounds = std::max(1, std::atoi(argv[++i]));
    } else if (has_value && std::strcmp(argv[i], "--pods") == 0) {
      pods = std::max(1, std::atoi(argv[++i]));
    } else if (has_value && std::strcmp(argv[i], "--containers") == 0) {
      containers = std::max(1, std::atoi(argv[++i]));
    } else if (has_value && std::strcmp(argv[i], "--json") == 0) {
      opt.json = argv[++i];
    } else {
      std::fprintf(stderr,
                   "usage: %s [--calls N] [--rounds R] [--pods P [--containers C]] [--whole-host] [--json FILE]\n",
                   argv[0]);
      return 2;
    }
  }
  if (pods > 0) opt.shapes = {{pods, containers > 0 ? containers : pods}};
  return statlet::e2e::Run(opt);
}
