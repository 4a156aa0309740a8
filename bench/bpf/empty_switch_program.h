// The floor of the scheduler probes' overhead: a program that does nothing, attached where
// they are (tp_btf/sched_switch). What it costs is the tracepoint and BPF dispatch alone,
// which no program body can avoid.
#pragma once

namespace statlet::bench {

class EmptySwitchProgram {
 public:
  EmptySwitchProgram() = default;
  ~EmptySwitchProgram();
  EmptySwitchProgram(const EmptySwitchProgram&) = delete;
  EmptySwitchProgram& operator=(const EmptySwitchProgram&) = delete;

  // Loads and attaches; false (with a message on stderr) when the kernel refuses.
  bool Attach();

 private:
  int prog_fd_ = -1;
  int link_fd_ = -1;
};

}  // namespace statlet::bench
