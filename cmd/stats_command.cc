// statlet stats: a one-shot view of every tracked cgroup, like `crictl stats`, that works
// on a bare host. Two samples `--interval` apart give CPU %.
#include <sys/utsname.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "base/duration.h"
#include "base/human_bytes.h"
#include "base/log.h"
#include "cmd/commands.h"
#include "cmd/cri_stats_view.h"
#include "cmd/flag_parser.h"
#include "cmd/snapshot_json.h"
#include "cmd/structured_output.h"
#include "cmd/subtree_check.h"
#include "collector/collector.h"
#include "collector/memory_qos_rules.h"
#include "collector/sampler.h"
#include "kube/kubelet_settings.h"
#include "metrics/snapshot_samples.h"

namespace statlet {
namespace {

constexpr const char* kStatsUsage = R"(Usage: statlet stats [flags]

One-shot statistics of every container and cgroup on this host.

Flags:
  -o, --output FORMAT     table (default), json or yaml (every snapshot field, raw counters
                          in nanoseconds, bytes and counts; a limit that is "max" is null)
      --collector.subtree PATH, --cgroup PATH
                          only this cgroup subtree (relative to the hierarchy root, e.g.
                          /kubepods.slice); repeatable
      --interval DURATION sampling window for CPU % (default 1s; 0 = one sample, no CPU %)
      --collector.include-empty
                          also list cgroups without processes
      --collector.cgroup-root DIR
                          where the cgroup hierarchies are mounted (default /sys/fs/cgroup)
      --collector.proc-root DIR
                          procfs mount (default /proc)
      --memory-qos.kubelet-config FILE
                          the kubelet's configuration file the Memory QoS view is judged
                          by (default /var/lib/kubelet/config.yaml; "" none)
      --memory-qos.kubelet-version VERSION
                          the kubelet's version (e.g. v1.36.2); unknown: no expected knobs
  -h, --help              this text

The table: CPU % of one CPU over the interval, WORKING SET (memory usage less inactive
file pages, what the kubelet evicts by), RX and TX TOTAL (bytes since the network
namespace was made), PIDS (processes and threads).

Reading a CRI endpoint instead (statlet's socket or a runtime's), like crictl stats:
      --cri.endpoint URL  unix:///PATH of the CRI socket to read
      --pods              pod sandboxes (crictl statsp) instead of containers
  -o, --output FORMAT     table (default), json or yaml
      --id ID             a container (with --pods: a pod) id or prefix
      --pod POD_ID        containers of this pod sandbox id or prefix
      --label KEY=VALUE   only items with this label; repeatable
      --timeout SECONDS   deadline of each call (default 10)

Old spellings, still accepted with a notice: --cgroup.mount (--collector.cgroup-root),
--proc.root (--collector.proc-root), --all (--collector.include-empty).
)";

std::string DisplayName(const CgroupStats& c) {
  if (c.id.meta) {
    if (c.id.kind == CgroupKind::kPod) return c.id.meta->pod_namespace + "/" + c.id.meta->pod_name;
    if (!c.id.meta->container_name.empty()) return c.id.meta->container_name;
  }
  if (!c.id.container_id.empty()) return c.id.container_id.substr(0, 13);
  if (c.id.kind == CgroupKind::kPod) return "pod" + c.id.pod_uid;
  return c.id.cgroup_path;
}

void PrintTable(const Snapshot& s) {
  std::printf("%-24s %-9s %7s %11s %10s %10s %6s  %s\n", "NAME", "KIND", "CPU %", "WORKING SET", "RX TOTAL", "TX TOTAL",
              "PIDS", "CGROUP");
  for (const auto& c : s.cgroups) {
    std::string cpu = "-";
    if (c.cpu.usage_nano_cores) {
      char b[16];
      std::snprintf(b, sizeof b, "%.2f", static_cast<double>(*c.cpu.usage_nano_cores) / 1e7);
      cpu = b;
    }
    std::string mem = c.memory.working_set_bytes ? HumanBytes(static_cast<double>(*c.memory.working_set_bytes)) : "-";
    std::string rx = "-", tx = "-";
    if (c.host_network) rx = tx = "host";
    if (const NetNamespaceStats* ns = s.Netns(c)) {
      static const metrics::SampleRules kRules;  // the interfaces container_network_* counts
      uint64_t r = 0, t = 0;
      for (const auto& i : ns->interfaces)
        if (metrics::CountsInterface(kRules, i.name)) {
          r += i.rx_bytes;
          t += i.tx_bytes;
        }
      rx = HumanBytes(static_cast<double>(r));
      tx = HumanBytes(static_cast<double>(t));
    }
    std::string pids = c.process.pids_current ? std::to_string(*c.process.pids_current)
                       : c.process.processes  ? std::to_string(*c.process.processes)
                                              : "-";
    std::string name = DisplayName(c);
    if (name.size() > 24) name = "…" + name.substr(name.size() - 23);
    std::printf("%-24s %-9s %7s %11s %10s %10s %6s  %s\n", name.c_str(), CgroupKindName(c.id.kind), cpu.c_str(),
                mem.c_str(), rx.c_str(), tx.c_str(), pids.c_str(), c.id.cgroup_path.c_str());
  }
}

}  // namespace

int RunStatsCommand(int argc, char** argv) {
  // --- CRI: with --cri.endpoint, read a CRI endpoint instead (cmd/cri_stats_view.h) ---
  if (WantsCriStatsView(argc, argv)) return RunCriStatsCommand(argc, argv);
  // --- end CRI ---
  CollectorOptions opts;
  kube::MemoryQosFlags qos_flags;
  std::string output = "table";
  std::chrono::nanoseconds interval = std::chrono::seconds(1);
  FlagParser flags(argc, argv, "statlet stats");
  while (flags.Next()) {
    if (flags.Is("-h") || flags.Is("--help")) {
      std::fputs(kStatsUsage, stdout);
      return 0;
    } else if (flags.Is("--output") || flags.Is("-o")) {
      output = flags.Value();
    } else if (flags.Is("--collector.subtree") || flags.Is("--cgroup")) {
      opts.subtrees.push_back(flags.Value());
    } else if (flags.Is("--interval")) {
      if (Status s = ParseDuration(flags.Value(), &interval); !s.ok()) {
        return flags.Fail("--interval: " + s.message() + " (e.g. 1s, 500ms; 0 for one sample)");
      }
    } else if (flags.Is("--collector.include-empty", {"--all"})) {
      opts.include_empty = true;
    } else if (flags.Is("--collector.cgroup-root", {"--cgroup.mount"})) {
      opts.cgroup_mount = flags.Value();
    } else if (flags.Is("--collector.proc-root", {"--proc.root"})) {
      opts.proc_root = flags.Value();
    } else if (flags.Is("--memory-qos.kubelet-config")) {
      qos_flags.kubelet_config = flags.Value();
    } else if (flags.Is("--memory-qos.kubelet-version")) {
      qos_flags.kubelet_version = flags.Value();
      if (!KubeletMinorVersion(qos_flags.kubelet_version)) return flags.Fail("--memory-qos.kubelet-version: not v1.N");
    } else {
      return flags.Unknown();
    }
  }
  if (flags.failed()) return 2;
  if (output != "table" && output != "json" && output != "yaml") {
    std::fprintf(stderr, "statlet stats: --output %s: expected table, json or yaml\n", output.c_str());
    return 2;
  }
  if (Status s = CheckCgroupSubtrees(opts, "statlet stats"); !s.ok()) {
    std::fprintf(stderr, "statlet stats: %s\n", s.message().c_str());
    return 1;
  }
  auto collector = Collector::Create(opts);
  if (!collector.ok()) {
    std::fprintf(stderr, "statlet stats: %s\n", collector.status().message().c_str());
    return 1;
  }
  Sampler sampler(std::move(*collector), nullptr, nullptr);
  // The Memory QoS view as this host's kubelet would be judged (no runtime, no API server:
  // requests only where the QoS class implies them).
  const long page = sysconf(_SC_PAGESIZE);
  kube::KubeletSettings settings(qos_flags, page > 0 ? static_cast<uint64_t>(page) : 4096, /*log=*/false);
  {
    Sampler::MemoryQosSources qos;
    qos.settings = &settings;
    if (struct utsname u; uname(&u) == 0) qos.kernel_release = u.release;
    sampler.SetMemoryQos(std::move(qos), MemoryHighStallOptions());
  }
  auto snap = sampler.Get(std::chrono::nanoseconds(0));
  if (snap.ok() && interval.count() > 0) {
    std::this_thread::sleep_for(interval);  // the sampling window the user asked for
    snap = sampler.Get(std::chrono::nanoseconds(0));
  }
  if (!snap.ok()) {
    std::fprintf(stderr, "statlet stats: %s\n", snap.status().message().c_str());
    return 1;
  }
  if (output == "json" || output == "yaml") {
    std::string j = SnapshotToJson(**snap, 2);
    if (output == "yaml") j = JsonAsYaml(j);
    std::fwrite(j.data(), 1, j.size(), stdout);
    std::fputc('\n', stdout);
  } else {
    PrintTable(**snap);
  }
  return 0;
}

}  // namespace statlet
