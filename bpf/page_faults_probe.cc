// The "faults" probe: minor and major page faults per cgroup (see page_faults.bpf.c).
#include <bpf/libbpf.h>
#include <linux/perf_event.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>

#include "bpf/page_faults.skel.h"
#include "bpf/probe.h"

namespace statlet::bpf {
namespace {

int OpenMajorFaultEvent(int cpu) {
  perf_event_attr attr{};
  attr.size = sizeof(attr);
  attr.type = PERF_TYPE_SOFTWARE;
  attr.config = PERF_COUNT_SW_PAGE_FAULTS_MAJ;
  attr.sample_period = 1;  // run the program on every major fault
  return static_cast<int>(syscall(SYS_perf_event_open, &attr, -1 /* every task */, cpu, -1, PERF_FLAG_FD_CLOEXEC));
}

class PageFaultsProbe final : public Probe {
 public:
  ~PageFaultsProbe() override { Stop(); }
  const char* name() const override { return "faults"; }

  Status Start(const ProbeConfig& config) override {
    skel_ = statlet_page_faults__open();
    if (!skel_) return LibbpfError(errno, "open page_faults");
    max_entries_ = config.max_cgroups;
    bpf_map__set_max_entries(skel_->maps.faults, max_entries_);
    bpf_map__set_max_entries(skel_->maps.major_faults, max_entries_);
    if (int err = statlet_page_faults__load(skel_)) return Fail(err, "load page_faults");
    skel_->links.statlet_page_fault_user = bpf_program__attach(skel_->progs.statlet_page_fault_user);
    if (!skel_->links.statlet_page_fault_user) return Fail(errno, "attach tp_btf/page_fault_user");
    int attached = 0;
    for (int cpu = 0; cpu < PossibleCpus(); cpu++) {
      int fd = OpenMajorFaultEvent(cpu);
      if (fd < 0) {
        if (errno == ENODEV || errno == EINVAL) continue;  // CPU offline or absent
        return Fail(errno, "perf_event_open(PERF_COUNT_SW_PAGE_FAULTS_MAJ)");
      }
      bpf_link* link = bpf_program__attach_perf_event(skel_->progs.statlet_major_fault, fd);
      if (!link) {
        int err = errno;
        close(fd);
        return Fail(err, "attach perf_event major faults");
      }
      major_links_.push_back(link);  // the link closes the perf fd when destroyed
      attached++;
    }
    if (attached == 0) return Fail(ENODEV, "no CPU accepted the major fault event");
    return Status::Ok();
  }

  void Collect(CollectContext& ctx) override {
    // Majors first: minor = all user faults - major ones.
    std::unordered_map<uint64_t, uint64_t> majors;
    ScanCgroupMap(bpf_map__fd(skel_->maps.major_faults), sizeof(uint64_t), sizeof(uint64_t), max_entries_, ctx,
                  [&](uint64_t id, const uint8_t*, const uint8_t* values) { majors[id] = SumU64(values); });
    ScanCgroupMap(bpf_map__fd(skel_->maps.faults), sizeof(uint64_t), sizeof(uint64_t), max_entries_, ctx,
                  [&](uint64_t id, const uint8_t*, const uint8_t* values) {
                    uint64_t all = SumU64(values);
                    auto it = majors.find(id);
                    uint64_t major = it == majors.end() ? 0 : it->second;
                    BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
                    out.major_faults = major;
                    out.minor_faults = all > major ? all - major : 0;
                    if (it != majors.end()) majors.erase(it);
                  });
    for (const auto& [id, major] : majors) {  // majors seen, user faults pruned meanwhile
      BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
      out.major_faults = major;
      out.minor_faults = 0;
    }
    for (uint64_t id : ctx.pruner->live()) {  // no entry yet: no faults since the probe started
      BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
      if (!out.minor_faults) out.minor_faults = 0;
      if (!out.major_faults) out.major_faults = 0;
    }
  }

  uint64_t LostEvents() const override { return SumPerCpuArrayU64(bpf_map__fd(skel_->maps.lost)); }

 private:
  static uint64_t SumU64(const uint8_t* values) {
    uint64_t sum = 0;
    for (int cpu = 0; cpu < PossibleCpus(); cpu++) {
      uint64_t v;
      std::memcpy(&v, values + cpu * sizeof(uint64_t), sizeof(v));
      sum += v;
    }
    return sum;
  }

  Status Fail(int err, const char* what) {
    Status st = LibbpfError(err, what);
    Stop();
    return st;
  }

  void Stop() {
    for (bpf_link* l : major_links_) bpf_link__destroy(l);
    major_links_.clear();
    statlet_page_faults__destroy(skel_);  // also destroys skel_->links
    skel_ = nullptr;
  }

  statlet_page_faults* skel_ = nullptr;
  std::vector<bpf_link*> major_links_;
  uint32_t max_entries_ = 0;
};

}  // namespace

std::unique_ptr<Probe> NewPageFaultsProbe() { return std::make_unique<PageFaultsProbe>(); }

}  // namespace statlet::bpf
