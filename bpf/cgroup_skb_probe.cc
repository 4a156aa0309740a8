// The "net" probe: bytes and packets each cgroup's sockets send and receive, whatever the
// network namespace (see cgroup_skb.bpf.c).
#include <bpf/libbpf.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "base/log.h"
#include "bpf/net_roots.h"
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
    root_fd_ = config.cgroup2_root_fd;
    for (std::string& rel : OutermostCgroupRoots(config.net_subtrees)) roots_.emplace_back().rel = std::move(rel);
    // A root not made yet (the runtime makes its pods' root with the first pod) is attached
    // at the first collection that finds it.
    for (Root& root : roots_) {
      if (int err = Attach(root); err != 0 && err != -ENOENT) {
        return Fail(err, ("attach cgroup_skb to /" + root.rel).c_str());
      }
      if (root.links.empty()) log::Warn("net probe: cgroup2 /" + root.rel + " is missing; attaching when it is made");
    }
    return Status::Ok();
  }

  void Collect(CollectContext& ctx) override {
    FollowRoots();
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
  // One attachment point: a pair of links (ingress, egress) on the cgroup of inode `ino`,
  // none while the cgroup is missing. A cgroup link attaches as BPF_F_ALLOW_MULTI (beside
  // other programs, running for every descendant) and goes with its fd: nothing stays
  // attached after statlet exits.
  struct Root {
    std::string rel;  // relative to the unified mount; "" is its root
    uint64_t ino = 0;
    std::vector<bpf_link*> links;
  };

  // Attaches to the root's cgroup; 0, or -errno (-ENOENT: not there).
  int Attach(Root& root) {
    int fd = openat(root_fd_, root.rel.empty() ? "." : root.rel.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return -errno;
    struct stat st;
    if (fstat(fd, &st) != 0) {
      int err = -errno;
      close(fd);
      return err;
    }
    for (bpf_program* prog : {skel_->progs.statlet_skb_ingress, skel_->progs.statlet_skb_egress}) {
      bpf_link* link = bpf_program__attach_cgroup(prog, fd);
      if (!link) {
        int err = -errno;
        close(fd);
        Detach(root);
        return err;
      }
      root.links.push_back(link);
    }
    close(fd);
    root.ino = st.st_ino;
    return 0;
  }
  static void Detach(Root& root) {
    for (bpf_link* link : root.links) bpf_link__destroy(link);
    root.links.clear();
    root.ino = 0;
  }

  // At each collection: a root made since is attached, one removed is let go (its links
  // hold the removed cgroup), one made again is attached again. A stat per root.
  void FollowRoots() {
    for (Root& root : roots_) {
      struct stat st;
      const bool exists = fstatat(root_fd_, root.rel.empty() ? "." : root.rel.c_str(), &st, 0) == 0;
      if (!root.links.empty() && exists && static_cast<uint64_t>(st.st_ino) == root.ino) continue;
      if (!root.links.empty()) Detach(root);
      if (!exists) continue;
      if (int err = Attach(root); err != 0 && err != -ENOENT) {
        log::Once(log::Level::kWarn, "net-attach /" + root.rel,
                  "net probe: cannot attach to cgroup2 /" + root.rel + ": " + LibbpfError(err, "attach").message());
      } else if (err == 0) {
        log::Info("net probe: attached to cgroup2 /" + root.rel);
      }
    }
  }

  Status Fail(int err, const char* what) {
    Status st = LibbpfError(err, what);
    Destroy();
    return st;
  }
  void Destroy() {
    for (Root& root : roots_) Detach(root);
    roots_.clear();
    statlet_cgroup_skb__destroy(skel_);
    skel_ = nullptr;
  }

  statlet_cgroup_skb* skel_ = nullptr;
  int root_fd_ = -1;  // the unified mount (BpfProbes owns it)
  std::vector<Root> roots_;
  uint32_t max_entries_ = 0;
};

}  // namespace

std::unique_ptr<Probe> NewCgroupSkbProbe(const ProbeSelection&) { return std::make_unique<CgroupSkbProbe>(); }

}  // namespace statlet::bpf
