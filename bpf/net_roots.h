// The cgroups the net probe attaches to (bpf/cgroup_skb_probe.cc). A cgroup_skb program
// attached with BPF_F_ALLOW_MULTI runs for every descendant of its cgroup, once per
// attachment: a root that lies under another one would count each of its packets twice.
#pragma once

#include <string>
#include <vector>

namespace statlet::bpf {

// The roots relative to the unified mount, without leading, trailing or doubled slashes ("" is
// the mount's root), each once, in their order, leaving out every one that lies under
// another; no roots: the mount's root alone.
std::vector<std::string> OutermostCgroupRoots(const std::vector<std::string>& roots);

}  // namespace statlet::bpf
