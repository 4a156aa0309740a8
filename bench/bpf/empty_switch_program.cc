#include "bench/bpf/empty_switch_program.h"

#include <bpf/bpf.h>
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <linux/bpf.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace statlet::bench {

EmptySwitchProgram::~EmptySwitchProgram() {
  if (link_fd_ >= 0) close(link_fd_);
  if (prog_fd_ >= 0) close(prog_fd_);
}

bool EmptySwitchProgram::Attach() {
  // A BTF-typed raw tracepoint program is tied to the tracepoint's typedef in vmlinux BTF.
  btf* vmlinux = btf__load_vmlinux_btf();
  if (!vmlinux) {
    std::fprintf(stderr, "vmlinux BTF: %s\n", std::strerror(errno));
    return false;
  }
  const int btf_id = btf__find_by_name_kind(vmlinux, "btf_trace_sched_switch", BTF_KIND_TYPEDEF);
  btf__free(vmlinux);
  if (btf_id < 0) {
    std::fprintf(stderr, "btf_trace_sched_switch not in vmlinux BTF\n");
    return false;
  }
  const bpf_insn insns[] = {
      {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .src_reg = 0, .off = 0, .imm = 0},
      {.code = BPF_JMP | BPF_EXIT, .dst_reg = 0, .src_reg = 0, .off = 0, .imm = 0},
  };
  LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = BPF_TRACE_RAW_TP,
              .attach_btf_id = static_cast<__u32>(btf_id));
  prog_fd_ = bpf_prog_load(BPF_PROG_TYPE_TRACING, "statlet_floor", "GPL", insns, 2, &opts);
  if (prog_fd_ < 0) {
    std::fprintf(stderr, "load empty sched_switch program: %s\n", std::strerror(errno));
    return false;
  }
  link_fd_ = bpf_raw_tracepoint_open(nullptr, prog_fd_);
  if (link_fd_ < 0) {
    std::fprintf(stderr, "attach empty sched_switch program: %s\n", std::strerror(errno));
    return false;
  }
  return true;
}

}  // namespace statlet::bench
