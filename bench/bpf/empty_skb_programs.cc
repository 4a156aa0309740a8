#include "bench/bpf/empty_skb_programs.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "bpf/cgroup_pruner.h"

namespace statlet::bench {

EmptySkbPrograms::~EmptySkbPrograms() {
  for (int fd : link_fds_) {
    if (fd >= 0) close(fd);
  }
  for (int fd : prog_fds_) {
    if (fd >= 0) close(fd);
  }
  if (cgroup_fd_ >= 0) close(cgroup_fd_);
}

bool EmptySkbPrograms::Attach() {
  cgroup_fd_ = bpf::OpenCgroup2Root("");
  if (cgroup_fd_ < 0) {
    std::fprintf(stderr, "no cgroup2 mount to attach the empty cgroup_skb programs to\n");
    return false;
  }
  // r0 = 1 (let the packet pass); exit.
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 1},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  const bpf_attach_type types[2] = {BPF_CGROUP_INET_INGRESS, BPF_CGROUP_INET_EGRESS};
  for (int i = 0; i < 2; i++) {
    LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = types[i]);
    prog_fds_[i] =
        bpf_prog_load(BPF_PROG_TYPE_CGROUP_SKB, i == 0 ? "floor_ingress" : "floor_egress", "GPL", insns, 2, &opts);
    if (prog_fds_[i] < 0) {
      std::fprintf(stderr, "load empty cgroup_skb program: %s\n", std::strerror(errno));
      return false;
    }
    link_fds_[i] = bpf_link_create(prog_fds_[i], cgroup_fd_, types[i], nullptr);
    if (link_fds_[i] < 0) {
      std::fprintf(stderr, "attach empty cgroup_skb program: %s\n", std::strerror(errno));
      return false;
    }
  }
  return true;
}

}  // namespace statlet::bench
