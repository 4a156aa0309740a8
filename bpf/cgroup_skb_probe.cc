// The "net" probe: bytes and packets each cgroup's sockets send and receive, whatever the
// network namespace (see cgroup_skb.bpf.c).
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <vector>

#include "bpf/probe.h"
#include "bpf/probe_abi.h"
#include "bpf/cgroup_skb.skel.h"

namespace statlet::bpf {
namespace {

class CgroupSkbProbe final : public Probe {
 public:
  ~CgroupSkbProbe() override { Destroy(); }
  const char* name() const override { return "net"; }

  Status Start(const ProbeConfig& config) override {
    if (config.cgroup2_root_fd < 0) return Unavailable("no cgroup2 mount to attach cgroup_skb to");
    skel_ = statlet_cgroup_skb__open_opts(ProbeOpenOpts());
    if (!skel_) return LibbpfError(errno, "open cgroup_skb");
    max_entries_ = config.max_cgroups;
    bpf_map__set_max_entries(skel_->maps.traffic, max_entries_);
    if (int err = statlet_cgroup_skb__load(skel_)) return Fail(err, "load cgroup_skb");
    // One pair of links per subtree. A cgroup link attaches as BPF_F_ALLOW_MULTI (beside
    // other programs, running for every descendant) and goes with its fd: nothing stays
    // attached after statlet exits.
    std::vector<std::string> roots = config.net_subtrees;
    if (roots.empty()) roots.push_back("/");
    for (const std::string& root : roots) {
      std::string rel = root;
      while (!rel.empty() && rel.front() == '/') rel.erase(0, 1);
      int fd = openat(config.cgroup2_root_fd, rel.empty() ? "." : rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
      if (fd < 0) return Fail(-errno, ("open cgroup2 " + root).c_str());
      for (bpf_program* prog : {skel_->progs.statlet_skb_ingress, skel_->progs.statlet_skb_egress}) {
        bpf_link* link = bpf_program__attach_cgroup(prog, fd);
        if (!link) {
          int err = -errno;
          close(fd);
          return Fail(err, ("attach cgroup_skb to " + root).c_str());
        }
        links_.push_back(link);
      }
      close(fd);
    }
    return Status::Ok();
  }

  void Collect(CollectContext& ctx) override {
    const size_t stride = PerCpuStride(sizeof(statlet_net_counters));
    const bool whole = ScanCgroupMap(bpf_map__fd(skel_->maps.traffic), sizeof(uint64_t), sizeof(statlet_net_counters),
                                     max_entries_, ctx, [&](uint64_t id, const uint8_t*, const uint8_t* values) {
                                       statlet_net_counters sum{};
                                       for (int cpu = 0; cpu < PossibleCpus(); cpu++) {
                                         statlet_net_counters c;
                                         std::memcpy(&c, values + cpu * stride, sizeof(c));
                                         sum.rx_bytes += c.rx_bytes;
                                         sum.rx_packets += c.rx_packets;
                                         sum.tx_bytes += c.tx_bytes;
                                         sum.tx_packets += c.tx_packets;
                                       }
                                       BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
                                       out.net_rx_bytes = sum.rx_bytes;
                                       out.net_rx_packets = sum.rx_packets;
                                       out.net_tx_bytes = sum.tx_bytes;
                                       out.net_tx_packets = sum.tx_packets;
                                     });
    if (!whole) return;
    // A live cgroup without an entry has sent and received nothing since the probe started.
    for (uint64_t id : ctx.pruner->live()) {
      BpfCgroupStats& out = (*ctx.by_cgroup_id)[id];
      if (!out.net_tx_bytes) out.net_rx_bytes = out.net_rx_packets = out.net_tx_bytes = out.net_tx_packets = 0;
    }
  }

  uint64_t LostEvents() const override { return SumPerCpuArrayU64(bpf_map__fd(skel_->maps.lost)); }

 private:
  Status Fail(int err, const char* what) {
    Status st = LibbpfError(err, what);
    Destroy();
    return st;
  }
  void Destroy() {
    for (bpf_link* link : links_) bpf_link__destroy(link);
    links_.clear();
    statlet_cgroup_skb__destroy(skel_);
    skel_ = nullptr;
  }

  statlet_cgroup_skb* skel_ = nullptr;
  std::vector<bpf_link*> links_;
  uint32_t max_entries_ = 0;
};

}  // namespace

std::unique_ptr<Probe> NewCgroupSkbProbe(const ProbeSelection&) { return std::make_unique<CgroupSkbProbe>(); }

}  // namespace statlet::bpf
