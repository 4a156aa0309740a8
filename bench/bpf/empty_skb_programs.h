// The floor of the net probe's overhead: cgroup_skb ingress and egress programs that do
// nothing but let the packet pass, attached where the probe is (the unified root, as links:
// BPF_F_ALLOW_MULTI). What they cost is the kernel's cgroup-BPF dispatch around each packet
// alone, which no counting program can avoid.
#pragma once

namespace statlet::bench {

class EmptySkbPrograms {
 public:
  EmptySkbPrograms() = default;
  ~EmptySkbPrograms();
  EmptySkbPrograms(const EmptySkbPrograms&) = delete;
  EmptySkbPrograms& operator=(const EmptySkbPrograms&) = delete;

  // Loads both and attaches them to the cgroup2 root; false (with a message on stderr) when
  // the kernel refuses.
  bool Attach();

 private:
  int cgroup_fd_ = -1;
  int prog_fds_[2] = {-1, -1};  // ingress, egress
  int link_fds_[2] = {-1, -1};
};

}  // namespace statlet::bench
