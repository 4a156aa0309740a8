#include "bpf/cgroup_v1_walks.h"

#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <string>
#include <unordered_map>

#include "base/log.h"
#include "bpf/probe_abi.h"  // before the skeleton, whose globals use its types
#include "bpf/cgroup_v1_iter.skel.h"
#include "bpf/cgroup_stats_render.h"
#include "bpf/cgroup_walk.h"
#include "bpf/percpu_map.h"
#include "bpf/probe.h"

namespace statlet::bpf {
namespace {

static_assert(sizeof(statlet_cgroup_v1_stats) % 8 == 0, "array map values are 8-byte aligned");

constexpr int kFiles = static_cast<int>(V1IterFile::kCount);

// The hierarchy whose directories hold file `f`.
Hierarchy HierarchyOf(V1IterFile f) {
  switch (f) {
    case V1IterFile::kCpuStat: return kV1Cpu;
    case V1IterFile::kCpuacctUsagePercpu:
    case V1IterFile::kCpuacctUsageUser:
    case V1IterFile::kCpuacctUsageSys: return kV1Cpuacct;
    default: return kV1Memory;
  }
}

}  // namespace

struct CgroupV1Walks::Walk {
  ~Walk() {
    walk.reset();  // the link before the object it runs
    statlet_cgroup_v1_iter__destroy(skel);
    if (root_fd >= 0) close(root_fd);
  }
  std::string mount;
  uint32_t hierarchies = 0;  // bit h: this mount is hierarchy h
  int root_fd = -1;
  statlet_cgroup_v1_iter* skel = nullptr;
  std::unique_ptr<CgroupWalk> walk;
  MappedArray entries, cpu_usage;
  uint32_t cpus = 0;  // per-CPU values per entry in cpu_usage (0: no cpuacct here)
  bool fresh = false;
  std::unordered_map<uint64_t, uint32_t> index;  // cgroup id -> entry of the last walk

  Status Start(uint32_t max_cgroups) {
    root_fd = open(mount.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (root_fd < 0) return ErrnoStatus(errno, "open " + mount);
    const int possible = PossibleCpus();
    if (possible <= 0 || possible > STATLET_ITER_MAX_CPUS) return Unavailable("unsupported number of CPUs");
    skel = statlet_cgroup_v1_iter__open_opts(ProbeOpenOpts());
    if (!skel) return LibbpfError(errno, "open cgroup_v1_iter");
    skel->rodata->nr_cpus = static_cast<__u32>(possible);
    bpf_map__set_max_entries(skel->maps.entries, max_cgroups);
    if (hierarchies & (1u << kV1Cpuacct)) {
      cpus = static_cast<uint32_t>(possible);
      bpf_map__set_max_entries(skel->maps.cpu_usage, max_cgroups * cpus);
    }
    if (int err = statlet_cgroup_v1_iter__load(skel)) return LibbpfError(err, "load cgroup_v1_iter");
    walk = std::make_unique<CgroupWalk>();
    if (Status st = walk->Attach(skel->progs.statlet_cgroup_v1, root_fd); !st.ok()) return st;
    if (Status st = entries.Map(skel->maps.entries); !st.ok()) return st;
    if (Status st = cpu_usage.Map(skel->maps.cpu_usage); !st.ok()) return st;
    return Run(nullptr);
  }

  Status Run(uint64_t* unstored) {
    index.clear();
    fresh = false;
    StatusOr<uint32_t> walked = walk->Run();
    if (!walked.ok()) return walked.status();
    const uint32_t stored = std::min(*walked, entries.entries());
    if (unstored) *unstored += *walked - stored;
    if (Status st = entries.Cover(stored); !st.ok()) return st;
    if (cpus > 0) {
      if (Status st = cpu_usage.Cover(stored * cpus); !st.ok()) return st;
    }
    index.reserve(stored);
    for (uint32_t i = 0; i < stored; i++) index.emplace(entries.at<statlet_cgroup_v1_stats>(i).cgroup_id, i);
    fresh = true;
    return Status::Ok();
  }
};

CgroupV1Walks::CgroupV1Walks() = default;
CgroupV1Walks::~CgroupV1Walks() = default;

size_t CgroupV1Walks::Start(const CgroupHierarchies& h, uint32_t max_cgroups) {
  if (long page = sysconf(_SC_PAGESIZE); page > 0) page_size_ = static_cast<uint64_t>(page);
  for (Hierarchy hh : {kV1Cpu, kV1Cpuacct, kV1Memory}) {
    if (!h.has(hh)) continue;
    auto same = std::find_if(walks_.begin(), walks_.end(), [&](const auto& w) { return w->mount == h.mount[hh]; });
    if (same != walks_.end()) {
      (*same)->hierarchies |= 1u << hh;
      continue;
    }
    auto w = std::make_unique<Walk>();
    w->mount = h.mount[hh];
    w->hierarchies = 1u << hh;
    walks_.push_back(std::move(w));
  }
  for (auto it = walks_.begin(); it != walks_.end();) {
    if (Status st = (*it)->Start(max_cgroups); !st.ok()) {
      log::Debug("bpf cgroup_stats: the files of " + (*it)->mount + " are read from cgroupfs: " + st.message());
      it = walks_.erase(it);
    } else {
      ++it;
    }
  }
  return walks_.size();
}

int CgroupV1Walks::FileIndex(Hierarchy h, std::string_view file) const {
  for (size_t w = 0; w < walks_.size(); w++) {
    if (!(walks_[w]->hierarchies & (1u << h))) continue;
    for (int f = 0; f < kFiles; f++) {
      const V1IterFile vf = static_cast<V1IterFile>(f);
      if (HierarchyOf(vf) == h && file == V1IterFileName(vf)) return static_cast<int>(w) * kFiles + f;
    }
  }
  return -1;
}

uint64_t CgroupV1Walks::Refresh(uint32_t hierarchies) {
  uint64_t failed = 0;
  unstored_ = 0;
  for (auto& w : walks_) {
    if (!(w->hierarchies & hierarchies)) {
      w->fresh = false;
      continue;
    }
    if (!w->Run(&unstored_).ok()) failed++;
  }
  return failed;
}

void CgroupV1Walks::ReleaseMappings() {
  for (auto& w : walks_) {
    w->fresh = false;
    w->index.clear();
    w->entries.Unmap();
    w->cpu_usage.Unmap();
  }
}

bool CgroupV1Walks::Render(uint64_t cgroup_id, int index, ReadBuffer* buf) const {
  if (index < 0 || static_cast<size_t>(index / kFiles) >= walks_.size()) return false;
  const Walk& w = *walks_[static_cast<size_t>(index / kFiles)];
  if (!w.fresh) return false;
  auto it = w.index.find(cgroup_id);
  if (it == w.index.end()) return false;
  const auto& e = w.entries.at<statlet_cgroup_v1_stats>(it->second);
  const uint64_t* per_cpu =
      w.cpus > 0 ? &w.cpu_usage.at<uint64_t>(0) + static_cast<size_t>(it->second) * w.cpus : nullptr;
  const size_t n = RenderV1IterFile(static_cast<V1IterFile>(index % kFiles), e, per_cpu, w.cpus, page_size_,
                                    buf->data(), buf->capacity());
  if (n == 0) return false;
  buf->set_len(n);
  return true;
}

}  // namespace statlet::bpf
