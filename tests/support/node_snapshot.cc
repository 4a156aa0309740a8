#include "tests/support/snapshot_builder.h"

#include <algorithm>
#include <cstdio>
#include <string>

namespace statlet::testing {
namespace {

std::string Hex64(size_t seed) {
  char buf[65];
  for (int i = 0; i < 64; ++i) buf[i] = "0123456789abcdef"[(seed * 2654435761u + i * 40503u) % 16];
  buf[64] = 0;
  return buf;
}

void FillCgroup(CgroupStats* c, size_t seed, uint32_t cpus) {
  uint64_t k = seed + 1;
  c->populated = true;
  c->cpu.usage_ns = 1'234'567'891 * k;
  c->cpu.user_ns = 1'000'000'000 * k;
  c->cpu.system_ns = 234'567'891 * k;
  for (uint32_t i = 0; i < cpus; ++i) c->cpu.per_cpu_ns.push_back(*c->cpu.usage_ns / cpus + i);
  c->cpu.nr_periods = 1000 * k;
  c->cpu.nr_throttled = 10 * k;
  c->cpu.throttled_ns = 5'000'000 * k;
  c->cpu.quota_us = seed % 2 ? 50000 : kUnlimited;
  c->cpu.period_us = 100000;
  c->cpu.shares = 1024;
  c->cpu.weight = 100;
  c->cpu.psi.some = PsiLine{1.5, 0.75, 0.25, 123456 * k};
  c->cpu.psi.full = PsiLine{0.5, 0.25, 0.05, 23456 * k};
  MemoryStats& m = c->memory;
  m.usage_bytes = 100'000'000 + k * 4096;
  m.max_usage_bytes = 200'000'000 + k * 4096;
  m.working_set_bytes = 80'000'000 + k * 4096;
  m.rss_bytes = 50'000'000;
  m.cache_bytes = 30'000'000;
  m.mapped_file_bytes = 1'000'000;
  m.swap_bytes = 0;
  m.failcnt = 3;
  m.pgfault = 100000 * k;
  m.pgmajfault = 12 * k;
  m.pgscan_direct = 10;
  m.pgscan_kswapd = 20;
  m.pgsteal_direct = 5;
  m.pgsteal_kswapd = 15;
  m.workingset_refault_anon = 1;
  m.workingset_refault_file = 2;
  m.min_bytes = 0;
  m.low_bytes = 0;
  m.high_bytes = kUnlimited;
  m.max_bytes = seed % 3 ? 512ull << 20 : kUnlimited;
  m.swap_max_bytes = kUnlimited;
  m.events = MemoryEvents{0, 2, 1, 0, 0, 0};
  m.events_local = MemoryEvents{0, 1, 1, 0, 0, 0};
  m.psi.some = PsiLine{0.1, 0.2, 0.3, 999 * k};
  m.psi.full = PsiLine{0, 0, 0, 99 * k};
  c->process.processes = 3;
  c->process.threads = 7;
  c->process.pids_current = 7;
  c->process.pids_max = seed % 2 ? 1024 : kUnlimited;
  c->process.pids_events_max = 0;
  IoDeviceStats d;
  d.major = 8;
  d.minor = 0;
  d.read_bytes = 4096 * k;
  d.write_bytes = 8192 * k;
  d.read_ios = k;
  d.write_ios = 2 * k;
  c->io.devices.push_back(d);
  c->io.psi.some = PsiLine{0, 0, 0, 10 * k};
  c->io.psi.full = PsiLine{0, 0, 0, 5 * k};
}

void FillBpf(BpfCgroupStats* b, size_t seed) {
  uint64_t k = seed + 1;
  b->minor_faults = 5000 * k;
  b->major_faults = 3 * k;
  b->oom_kills = seed % 4 == 0 ? 1 : 0;
  b->tcp_retransmits = 17 * k;
  b->net_rx_bytes = 150'000 * k;
  b->net_rx_packets = 120 * k;
  b->net_tx_bytes = 90'000 * k;
  b->net_tx_packets = 80 * k;
  b->tcp_drops = 0;
  if (seed % 2) {
    b->tcp_drop_reasons = {{"NO_SOCKET", 2 * k}, {"TCP_INVALID_SEQUENCE", k}};
    b->tcp_drops = 3 * k;
  }
  // 27 log2 microsecond buckets as the runqlat probe fills them; waits mostly 4..64 us.
  b->runq_latency_log2_us.assign(27, 0);
  uint64_t sum_ns = 0;
  for (size_t i = 1; i < 7; ++i) {
    b->runq_latency_log2_us[i] = (10 * k) << (i < 4 ? i : 7 - i);
    sum_ns += b->runq_latency_log2_us[i] * (uint64_t{3} << i) * 500;  // bucket midpoints
  }
  b->runq_latency_log2_us[26] = seed % 3 == 0 ? 1 : 0;  // the open-ended last bucket
  sum_ns += b->runq_latency_log2_us[26] * 70'000'000'000;
  b->runq_latency_sum_ns = sum_ns;
}

}  // namespace

Snapshot MakeNodeSnapshot(const SnapshotShape& shape) {
  SnapshotBuilder b(1'700'000'000'123'456'789, shape.sequence, shape.num_cpus);
  size_t seed = 0;
  // Every cgroup's values, told apart by the order it was added in.
  auto fill = [&](CgroupStats& c) -> CgroupStats& {
    c.id.cgroup_id = 1000 + seed;
    c.id.created_ns = 1'600'000'000'000'000'000 + static_cast<int64_t>(seed);
    if (shape.with_bpf) FillBpf(&c.bpf, seed);
    FillCgroup(&c, seed++, shape.num_cpus);
    return c;
  };
  fill(b.Add("/", CgroupKind::kRoot)).netns_inode = 4026531840;
  b.AddNetns(4026531840, {{"lo", 100, 1, 0, 0, 100, 1, 0, 0}, {"eth0", 5000, 50, 0, 1, 6000, 60, 0, 0}});
  fill(b.Add("/kubepods", CgroupKind::kKubepods));
  fill(b.Add("/kubepods/burstable", CgroupKind::kQos));
  for (size_t p = 0; p < shape.pods; ++p) {
    char uid[64];
    std::snprintf(uid, sizeof uid, "%08zx-1111-2222-3333-%012zx", p, p);
    std::string pod_path = std::string("/kubepods/burstable/pod") + uid;
    uint64_t netns = 4026532000 + p;
    b.AddNetns(netns, {{"lo", 10, 1, 0, 0, 10, 1, 0, 0}, {"eth0", 1000 * (p + 1), 10, 0, 0, 2000, 20, 0, 0}});
    auto sandbox_meta = std::make_shared<ContainerMetadata>();
    sandbox_meta->pod_name = "web-" + std::to_string(p);
    sandbox_meta->pod_namespace = "default";
    sandbox_meta->pod_uid = uid;
    sandbox_meta->is_sandbox = true;
    sandbox_meta->container_id = Hex64(p * 100);
    {
      CgroupStats& pod = fill(b.AddPod(pod_path, uid));
      if (shape.with_metadata) pod.id.meta = sandbox_meta;
    }
    std::vector<std::pair<std::string, std::shared_ptr<ContainerMetadata>>> children;
    children.emplace_back(sandbox_meta->container_id, sandbox_meta);
    for (size_t c = 0; c < shape.containers_per_pod; ++c) {
      auto m = std::make_shared<ContainerMetadata>(*sandbox_meta);
      m->is_sandbox = false;
      m->container_id = Hex64(p * 100 + c + 1);
      m->container_name = "app-" + std::to_string(c);
      m->image = "registry.example/app:1." + std::to_string(c);
      m->started_at_ns = 1'650'000'000'000'000'000;
      children.emplace_back(m->container_id, m);
    }
    std::sort(children.begin(), children.end());
    for (auto& [id, m] : children) {
      CgroupStats& c = fill(b.AddContainer(pod_path, id, uid));
      c.netns_inode = netns;
      if (shape.with_metadata) c.id.meta = m;
    }
  }
  Snapshot s = b.Build();
  s.monotonic_ns = 1'000'000;
  s.read_errors.push_back({"memory.stat", "parse", 2});
  if (shape.with_bpf) {
    for (const char* probe : {"cpu", "runqlat", "faults", "oom", "tcp"}) {
      s.bpf_probes.push_back({probe, std::string(probe) != "tcp", std::string(probe) == "tcp" ? "attach failed" : "",
                              std::string(probe) == "oom" ? 4u : 0u});
    }
    s.runtime = SourceState{"unix:///run/containerd/containerd.sock", true, "containerd v1.6.20", 0};
    // Kills of containers of the snapshot (newest last), one in a cgroup that is gone and
    // one the Sampler could not resolve.
    int64_t t = s.timestamp_ns - 60'000'000'000;
    uint32_t pid = 4000;
    for (const auto& c : s.cgroups) {
      if (c.id.kind != CgroupKind::kContainer || (c.id.meta && c.id.meta->is_sandbox)) continue;
      OomEvent e;
      e.timestamp_ns = t += 1'250'000'000;
      e.pid = ++pid;
      e.comm = "alloc-" + std::to_string(pid);
      e.cgroup_id = c.id.cgroup_id;
      e.cgroup_path = c.id.cgroup_path;
      e.constraint_memcg = true;
      e.cgroup = std::make_shared<const Identity>(c.id);
      s.recent_ooms.push_back(std::move(e));
    }
    OomEvent gone;
    gone.timestamp_ns = t += 1'000'000'000;
    gone.pid = ++pid;
    gone.comm = "java";
    gone.cgroup_id = 99999;
    gone.cgroup_path = "/kubepods/besteffort/podgone/0123";
    Identity gone_id;
    gone_id.cgroup_path = gone.cgroup_path;
    gone_id.cgroup_id = gone.cgroup_id;
    gone_id.kind = CgroupKind::kContainer;
    gone_id.container_id = "0123";
    gone.cgroup = std::make_shared<const Identity>(gone_id);
    s.recent_ooms.push_back(gone);
    OomEvent unresolved;
    unresolved.timestamp_ns = t += 1'000'000'000;
    unresolved.pid = ++pid;
    unresolved.comm = "stress";
    unresolved.cgroup_id = 123456;
    s.recent_ooms.push_back(unresolved);
  }
  s.collection.duration_ns = 1'500'000;
  s.collection.cgroups_tracked = s.cgroups.size();
  s.collection.cgroups_reported = s.cgroups.size();
  return s;
}

size_t CountSamples(const std::string& text) {
  size_t n = 0, pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    if (end > pos && text[pos] != '#') ++n;
    pos = end + 1;
  }
  return n;
}

}  // namespace statlet::testing
