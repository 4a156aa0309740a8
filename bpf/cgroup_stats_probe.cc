// The cgroup_stats probe: the collector's CgroupFileSource over the stats iterator
// (cgroup_stats_iter.bpf.c). Its Collect() adds nothing to the probe values: the collector
// calls Refresh() at the start of each collection and Render() per cgroup and file.
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "base/log.h"
#include "bpf/probe_abi.h"  // before the skeleton, whose globals use its types
#include "bpf/cgroup_stats_iter.skel.h"
#include "bpf/cgroup_stats_iter_css.skel.h"
#include "bpf/cgroup_stats_render.h"
#include "bpf/cgroup_v1_walks.h"
#include "bpf/cgroup_walk.h"
#include "bpf/probe.h"
#include "collector/cgroup_file_source.h"

namespace statlet::bpf {
namespace {

static_assert(sizeof(statlet_cgroup_stats) % 8 == 0, "array map values are 8-byte aligned");

// Whether struct `type` of `btf` has a member named `member`.
bool HasMember(const struct btf* btf, const char* type, const char* member) {
  const int id = btf__find_by_name_kind(btf, type, BTF_KIND_STRUCT);
  if (id <= 0) return false;
  const struct btf_type* t = btf__type_by_id(btf, id);
  const struct btf_member* m = btf_members(t);
  for (int i = 0; i < btf_vlen(t); i++) {
    if (std::strcmp(btf__name_by_offset(btf, m[i].name_off), member) == 0) return true;
  }
  return false;
}

// What the loader needs to know of the running kernel's BTF.
struct KernelFacts {
  bool css_rstat_flush = false;     // 6.16+: the flush kfunc takes a css
  bool cgroup_rstat_flush = false;  // up to 6.15
  bool pids_events_limit = false;   // pids.events is one counter (up to 6.11)
  // The struct members the kernel's BTF has, of those asked (memory.stat's conditions).
  std::vector<std::pair<std::string, std::string>> members;
  bool Has(const char* type, const char* member) const {
    return std::find(members.begin(), members.end(), std::pair<std::string, std::string>(type, member)) !=
           members.end();
  }
};

KernelFacts ReadKernelFacts() {
  KernelFacts f;
  struct btf* btf = btf__load_vmlinux_btf();
  if (!btf) return f;
  f.css_rstat_flush = btf__find_by_name_kind(btf, "css_rstat_flush", BTF_KIND_FUNC) > 0;
  f.cgroup_rstat_flush = btf__find_by_name_kind(btf, "cgroup_rstat_flush", BTF_KIND_FUNC) > 0;
  f.pids_events_limit = HasMember(btf, "pids_cgroup", "events_limit");
  for (const auto& [type, member] : MemstatConditions()) {
    if (HasMember(btf, type, member)) f.members.emplace_back(type, member);
  }
  btf__free(btf);
  return f;
}

class CgroupStatsProbe final : public Probe, public CgroupFileSource {
 public:
  ~CgroupStatsProbe() override {
    walk_.reset();
    statlet_cgroup_stats_iter__destroy(skel_);
    statlet_cgroup_stats_iter_css__destroy(skel_css_);
  }
  const char* name() const override { return "cgroup_stats_iter"; }

  // The unified hierarchy's walk, then on a v1 or hybrid host the walks of the cpu, cpuacct
  // and memory hierarchies. Up when either part runs: a v1 host without a cgroup2 mount
  // (or whose kernel cannot flush rstat) still has its v1 files rendered.
  Status Start(const ProbeConfig& config) override {
    Status unified = config.cgroup2_root_fd >= 0 ? StartUnified(config) : Unavailable("no cgroup2 mount");
    if (!unified.ok()) {
      walk_.reset();
      statlet_cgroup_stats_iter__destroy(skel_);
      statlet_cgroup_stats_iter_css__destroy(skel_css_);
      skel_ = nullptr;
      skel_css_ = nullptr;
    }
    size_t v1_walks = 0;
    if (auto h = DetectHierarchies("/sys/fs/cgroup", "/proc"); h.ok()) v1_walks = v1_.Start(*h, config.max_cgroups);
    if (!unified.ok()) {
      if (v1_walks == 0) return unified;
      log::Debug("bpf cgroup_stats: the unified hierarchy's files are read from cgroupfs: " + unified.message());
    }
    return Status::Ok();
  }

  Status StartUnified(const ProbeConfig& config) {
    page_size_ = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    const KernelFacts kernel = ReadKernelFacts();
    if (!kernel.css_rstat_flush && !kernel.cgroup_rstat_flush) {
      return Unavailable("cgroup_stats: the kernel has no rstat flush kfunc (cgroup_rstat_flush, css_rstat_flush)");
    }
    // One object per flush kfunc flavour, from one source: same maps and globals.
    static_assert(sizeof(*skel_->bss) == sizeof(*skel_css_->bss));
    bpf_program* prog = nullptr;
    bpf_map* entries = nullptr;
    if (kernel.css_rstat_flush) {
      skel_css_ = statlet_cgroup_stats_iter_css__open_opts(ProbeOpenOpts());
      if (!skel_css_) return LibbpfError(errno, "open cgroup_stats_iter_css");
      bpf_map__set_max_entries(skel_css_->maps.entries, config.max_cgroups);
      if (int err = statlet_cgroup_stats_iter_css__load(skel_css_))
        return LibbpfError(err, "load cgroup_stats_iter_css");
      prog = skel_css_->progs.statlet_cgroup_stats;
      entries = skel_css_->maps.entries;
      bss_ = reinterpret_cast<Bss*>(skel_css_->bss);
    } else {
      skel_ = statlet_cgroup_stats_iter__open_opts(ProbeOpenOpts());
      if (!skel_) return LibbpfError(errno, "open cgroup_stats_iter");
      bpf_map__set_max_entries(skel_->maps.entries, config.max_cgroups);
      if (int err = statlet_cgroup_stats_iter__load(skel_)) return LibbpfError(err, "load cgroup_stats_iter");
      prog = skel_->progs.statlet_cgroup_stats;
      entries = skel_->maps.entries;
      bss_ = skel_->bss;
    }
    walk_ = std::make_unique<CgroupWalk>();
    if (Status st = walk_->Attach(prog, config.cgroup2_root_fd); !st.ok()) return st;
    if (Status st = entries_.Map(entries); !st.ok()) return st;
    // The first walk learns the memcg layout; memory.stat is read from the next one on.
    StatusOr<uint32_t> walked = walk_->Run();
    if (!walked.ok()) return walked.status();
    const char* why_not = "";
    const auto kernel_has = [&kernel](const char* type, const char* member) { return kernel.Has(type, member); };
    if (auto slots = ResolveMemstatSlots(bss_->setup, kernel_has, &why_not)) {
      slots_ = *slots;
      std::memcpy(bss_->state_slot, slots->state, sizeof(slots->state));
      std::memcpy(bss_->event_slot, slots->events, sizeof(slots->events));
      __atomic_store_n(&bss_->memstat_ready, 1, __ATOMIC_RELEASE);
    } else {
      memstat_unavailable_ = why_not;
      // A property of the kernel, not a fault: nothing to act on, so debug level.
      log::Debug(std::string("bpf cgroup_stats: memory.stat is read from cgroupfs: ") + why_not);
    }
    // pids.events became per-event arrays in 6.12; the iterator reads the older counter.
    pids_events_ = kernel.pids_events_limit;
    return Status::Ok();
  }

  void Collect(CollectContext&) override {}
  CgroupFileSource* file_source() override { return this; }
  // The next Refresh walks and maps again; until then nothing renders.
  void ReleaseMappings() override {
    index_.clear();
    entries_.Unmap();
    v1_.ReleaseMappings();
  }

  uint64_t LostEvents() const override {
    return unstored_.load(std::memory_order_relaxed) + failed_walks_.load(std::memory_order_relaxed);
  }

  // ---------------------------------------------------------------- CgroupFileSource
  int FileIndex(Hierarchy h, std::string_view file) const override {
    if (h != kUnified) {
      const int v1 = v1_.FileIndex(h, file);
      return v1 < 0 ? -1 : kV1Base + v1;
    }
    if (!walk_) return -1;
    for (int i = 0; i < static_cast<int>(IterFile::kCount); i++) {
      const IterFile f = static_cast<IterFile>(i);
      if (file != IterFileName(f)) continue;
      if (f == IterFile::kMemoryStat && !memstat_unavailable_.empty()) return -1;
      if (f == IterFile::kPidsEvents && !pids_events_) return -1;
      return i;
    }
    return -1;
  }

  Status Refresh(uint32_t hierarchies) override {
    index_.clear();
    // The v1 walks first: a failed unified walk leaves none of them stale. A failed v1 walk
    // leaves its hierarchy's files to cgroupfs for this collection.
    failed_walks_.fetch_add(v1_.Refresh(hierarchies), std::memory_order_relaxed);
    const bool unified = walk_ && (hierarchies & (1u << kUnified));
    StatusOr<uint32_t> walked = unified ? walk_->Run() : StatusOr<uint32_t>(0u);
    if (!walked.ok()) {
      failed_walks_.fetch_add(1, std::memory_order_relaxed);
      return walked.status();
    }
    const uint32_t stored = std::min(*walked, entries_.entries());
    if (Status st = entries_.Cover(stored); !st.ok()) {
      failed_walks_.fetch_add(1, std::memory_order_relaxed);
      return st;
    }
    index_.reserve(stored);
    for (uint32_t i = 0; i < stored; i++) index_.emplace(entries_.at<statlet_cgroup_stats>(i).cgroup_id, i);
    unstored_.store(*walked - stored + v1_.unstored(), std::memory_order_relaxed);
    return Status::Ok();
  }

  bool Render(uint64_t cgroup_id, int index, ReadBuffer* buf) const override {
    if (index >= kV1Base) return v1_.Render(cgroup_id, index - kV1Base, buf);
    auto it = index_.find(cgroup_id);
    if (it == index_.end() || index < 0 || index >= static_cast<int>(IterFile::kCount)) return false;
    const size_t n = RenderIterFile(static_cast<IterFile>(index), entries_.at<statlet_cgroup_stats>(it->second),
                                    page_size_, buf->data(), buf->capacity(), &slots_);
    if (n == 0) return false;
    buf->set_len(n);
    return true;
  }

 private:
  statlet_cgroup_stats_iter* skel_ = nullptr;          // up to 6.15
  statlet_cgroup_stats_iter_css* skel_css_ = nullptr;  // 6.16 on
  using Bss = std::remove_pointer_t<decltype(statlet_cgroup_stats_iter::bss)>;
  Bss* bss_ = nullptr;  // the loaded one's globals
  std::unique_ptr<CgroupWalk> walk_;
  MappedArray entries_;
  uint64_t page_size_ = 4096;
  std::string memstat_unavailable_;
  MemstatSlots slots_{};  // valid when memstat_unavailable_ is empty
  bool pids_events_ = false;
  std::unordered_map<uint64_t, uint32_t> index_;  // cgroup id -> entry of the last walk
  // The v1 hierarchies' walks; their file indices start at kV1Base.
  static constexpr int kV1Base = static_cast<int>(IterFile::kCount);
  CgroupV1Walks v1_;
  std::atomic<uint64_t> unstored_{0}, failed_walks_{0};
};

}  // namespace

std::unique_ptr<Probe> NewCgroupStatsProbe(const ProbeSelection&) { return std::make_unique<CgroupStatsProbe>(); }

}  // namespace statlet::bpf
