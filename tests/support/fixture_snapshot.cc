#include "tests/support/snapshot_builder.h"

namespace statlet::testing {
namespace {

// Distinct values in every field the CRI carries; `seed` tells cgroups apart.
CgroupStats& Fill(CgroupStats& c, uint64_t seed) {
  c.populated = true;
  CpuStats& cpu = c.cpu;
  cpu.usage_ns = 12'345'678'901 + seed;  // 12.3 s: whole seconds truncate, ns do not
  cpu.user_ns = 8'000'000'000 + seed;
  cpu.system_ns = 4'345'678'901;
  cpu.per_cpu_ns = {6'000'000'000 + seed, 6'345'678'901};
  cpu.usage_nano_cores = 250'000'000 + seed;
  cpu.nr_periods = 1000 + seed;
  cpu.nr_throttled = 40 + seed;
  cpu.throttled_ns = 2'500'000'000 + seed;
  cpu.quota_us = 50000;
  cpu.period_us = 100000;
  cpu.shares = 512;
  cpu.weight = 20;
  cpu.psi.some = PsiLine{1.5, 2.5, 3.5, 700'000 + seed};
  cpu.psi.full = PsiLine{0.5, 0.25, 0.125, 300'000 + seed};
  MemoryStats& m = c.memory;
  m.usage_bytes = 300'000'000 + seed;
  m.max_usage_bytes = 400'000'000 + seed;
  m.working_set_bytes = 200'000'000 + seed;
  m.rss_bytes = 150'000'000 + seed;
  m.cache_bytes = 120'000'000 + seed;
  m.mapped_file_bytes = 10'000'000 + seed;
  m.swap_bytes = 5'000'000 + seed;
  m.swap_max_bytes = 50'000'000;
  m.max_bytes = 536'870'912;
  m.high_bytes = kUnlimited;
  m.failcnt = 7 + seed;
  m.pgfault = 123'456 + seed;
  m.pgmajfault = 789 + seed;
  m.inactive_file = 100'000'000;
  m.events.oom_kill = 2;
  m.events_local.oom_kill = 1;
  m.psi.some = PsiLine{4.0, 3.0, 2.0, 900'000 + seed};
  m.psi.full = PsiLine{1.0, 0.5, 0.25, 400'000 + seed};
  c.process.processes = 3 + seed;
  c.process.threads = 9 + seed;
  c.process.pids_max = 1024;
  IoDeviceStats d;
  d.major = 8;
  d.minor = 0;
  d.read_bytes = 4096 * (10 + seed);
  d.write_bytes = 4096 * (20 + seed);
  d.read_ios = 10 + seed;
  d.write_ios = 20 + seed;
  c.io.devices.push_back(d);
  c.io.psi.some = PsiLine{0.1, 0.2, 0.3, 50'000 + seed};
  return c;
}

std::shared_ptr<ContainerMetadata> PodMeta(std::shared_ptr<ContainerMetadata> m) {
  m->pod_sandbox_id = kSandboxA;
  m->pod_name = "web";
  m->pod_namespace = "prod";
  m->pod_uid = kPodAUid;
  m->pod_attempt = 1;
  m->pod_labels = {{"app", "web"}, {"io.kubernetes.pod.namespace", "prod"}};
  m->pod_annotations = {{"kubernetes.io/config.seen", "now"}};
  return m;
}

}  // namespace

Snapshot FixtureSnapshot() {
  SnapshotBuilder b(kTimestampNs, 42, 2);
  const std::string pod_a = "/kubepods/burstable/pod" + kPodAUid;
  const std::string pod_b = "/kubepods/besteffort/pod" + kPodBUid;

  Fill(b.Add("/", CgroupKind::kRoot), 0);

  auto sandbox = PodMeta(std::make_shared<ContainerMetadata>());
  sandbox->container_id = kSandboxA;
  sandbox->is_sandbox = true;
  sandbox->labels = sandbox->pod_labels;
  sandbox->annotations = sandbox->pod_annotations;
  sandbox->image = "registry.k8s.io/pause:3.9";
  sandbox->created_at_ns = 1'690'000'000'500'000'000;
  sandbox->started_at_ns = sandbox->created_at_ns;
  {
    CgroupStats& pa = Fill(b.AddPod(pod_a, kPodAUid), 100);
    pa.process.processes = 1 + 4 + 5;  // subtree counts: pause + nginx + sidecar
    pa.process.threads = 1 + 10 + 11;
    pa.netns_inode = kNetnsA;
    pa.id.meta = sandbox;
  }
  {
    CgroupStats& pause = Fill(b.AddContainer(pod_a, kSandboxA, kPodAUid), 200);
    pause.id.meta = sandbox;
    pause.process.processes = 1;
    pause.process.threads = 1;
    pause.netns_inode = kNetnsA;
  }
  {
    CgroupStats& nginx = Fill(b.AddContainer(pod_a, kNginx, kPodAUid), 1);
    auto nm = PodMeta(std::make_shared<ContainerMetadata>());
    nm->container_id = kNginx;
    nm->container_name = "nginx";
    nm->attempt = 2;
    nm->image = "docker.io/library/nginx:1.25";
    nm->labels = {{"app", "web"}, {"tier", "front"}};
    nm->annotations = {{"io.kubernetes.container.hash", "abc"}};
    nm->created_at_ns = 1'690'000'001'000'000'000;
    nm->started_at_ns = 1'690'000'001'750'000'000;
    nm->writable_layer.timestamp_ns = kTimestampNs - 5'000'000'000;
    nm->writable_layer.mountpoint = "/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs";
    nm->writable_layer.device = "/dev/vda1";
    nm->writable_layer.used_bytes = 123'456'789;
    nm->writable_layer.inodes_used = 4321;
    nm->writable_layer.capacity_bytes = 107'374'182'400;
    nm->writable_layer.inodes_total = 6'553'600;
    nm->writable_layer.inodes_free = 6'000'001;
    nginx.id.meta = nm;
    nginx.process.file_descriptors = 41;
    nginx.process.sockets = 7;
    nginx.process.max_open_files_soft = 1'048'576;
    nginx.memory.hugetlb.push_back({"2MB", 2'097'152, 4'194'304, 8'388'608, 2});
    nginx.memory.hugetlb.push_back({"1GB", 0, 0, kUnlimited, 0});
    nginx.netns_inode = kNetnsA;
  }
  {
    CgroupStats& side = Fill(b.AddContainer(pod_a, kSidecar, kPodAUid), 2);
    auto sm = PodMeta(std::make_shared<ContainerMetadata>());
    sm->container_id = kSidecar;
    sm->container_name = "sidecar";
    sm->image = "docker.io/library/busybox:1.36";
    sm->labels = {{"app", "web"}, {"tier", "side"}};
    side.id.meta = sm;
    side.netns_inode = kNetnsA;
  }
  Fill(b.AddPod(pod_b, kPodBUid), 300).host_network = true;
  {
    CgroupStats& plain = Fill(b.AddContainer(pod_b, kPlainC, kPodBUid), 3);
    plain.id.created_ns = 1'690'000'002'000'000'000;
    plain.host_network = true;
    plain.memory.max_bytes = kUnlimited;
    plain.memory.swap_bytes.reset();
    plain.memory.swap_max_bytes.reset();
    plain.cpu.psi = Psi{};
    plain.cpu.quota_us = kUnlimited;
  }
  Fill(b.Add("/docker/" + kBare, CgroupKind::kContainer), 4).id.container_id = kBare;

  b.AddNetns(kNetnsA, {{"lo", 1000, 10, 0, 0, 1000, 10, 0, 0},
                       {"eth0", 5'000'000, 4000, 3, 2, 7'000'000, 5000, 1, 4},
                       {"eth1", 600, 6, 0, 1, 800, 8, 0, 0}});
  return b.Build();
}

}  // namespace statlet::testing
