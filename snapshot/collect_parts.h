// The optional parts of a collection. Every collection reads the container cgroups' files
// the CRI stats calls answer with, process counts and pod network counters; a part costs
// more and only some callers return it, so a caller names the parts it needs and the
// Sampler collects the union of what the callers sharing one collection need (a cached
// snapshot serves only callers whose parts it holds).
#pragma once

#include <cstdint>

namespace statlet {

class CollectParts {
 public:
  // A scan of every container process: /proc/<pid>/fd entries and socket links, the first
  // process's RLIMIT_NOFILE. A readlink per open fd: at 1,000 containers it is most of a
  // collection. Needed by /metrics, ListPodSandboxMetrics and OTLP (file descriptor,
  // socket and ulimit families); not by the CRI stats calls, which carry no fd counts.
  static constexpr uint32_t kProcessFds = 1u << 0;
  // The cgroup files only the metric families carry (CgroupFileReader::part): hugetlb per
  // page size, v1 memory.soft_limit_in_bytes, pids.current, pids.events,
  // memory.events.local. On a v1 host with two huge page sizes that is 11 of a container's
  // 33 files. Needed by /metrics, ListPodSandboxMetrics and OTLP; the CRI stats messages
  // have no field for them (their thread counts come from the task lists).
  static constexpr uint32_t kCgroupDetail = 1u << 1;
  // The files of every reported cgroup that is not a container: pods, QoS tiers, slices,
  // the host's own cgroups. ListContainerStats answers for containers alone (a fifth of
  // the cgroups of a node of 4-container pods, a quarter at 30 containers); the pod calls,
  // /metrics and OTLP need them. Without this part pods are listed with their identity,
  // processes and network namespace, and no file values; the cgroups that are neither
  // pods nor containers (the root, kubepods, QoS tiers, the host's services) are not
  // listed at all, nor their process lists read: on a node they outnumber the pods.
  static constexpr uint32_t kNonContainerFiles = 1u << 2;
  // The files of the pods' sandbox (pause) containers, known as such from the runtime's
  // metadata. The container calls do not list sandboxes (a third of the container cgroups
  // of a node of 2-container pods); the pod calls, /metrics and OTLP report them. Without
  // this part a sandbox is listed with its identity, processes and network namespace, and
  // no file values; a collection without the runtime's metadata reads them all.
  static constexpr uint32_t kSandboxFiles = 1u << 3;

  constexpr CollectParts() = default;
  constexpr explicit CollectParts(uint32_t bits) : bits_(bits) {}
  static constexpr CollectParts All() {
    return CollectParts(kProcessFds | kCgroupDetail | kNonContainerFiles | kSandboxFiles);
  }
  static constexpr CollectParts None() { return CollectParts(0); }

  constexpr bool Has(uint32_t part) const { return (bits_ & part) != 0; }
  // Whether a collection of these parts reads the files of a cgroup (a container or not;
  // a container the runtime names as a pod's sandbox or not).
  constexpr bool ReadsFilesOf(bool container, bool sandbox = false) const {
    return container ? !sandbox || Has(kSandboxFiles) : Has(kNonContainerFiles);
  }
  // Whether a collection of these parts lists a cgroup (and reads its process lists).
  constexpr bool Lists(bool pod_or_container) const { return pod_or_container || Has(kNonContainerFiles); }
  // Whether a snapshot holding `this` can answer a caller needing `need`.
  constexpr bool Covers(CollectParts need) const { return (need.bits_ & ~bits_) == 0; }
  constexpr CollectParts operator|(CollectParts o) const { return CollectParts(bits_ | o.bits_); }
  constexpr bool operator==(const CollectParts&) const = default;
  constexpr uint32_t bits() const { return bits_; }

 private:
  uint32_t bits_ = 0;
};

}  // namespace statlet
