// Network counters per network namespace, read from /proc/<pid>/net/dev of one process
// inside it (no setns: procfs shows the namespace of the task). One kept fd per
// namespace; since a kept fd keeps the namespace alive, fds of namespaces no reported
// cgroup used in a collection are closed at its end.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>

#include "collector/kept_file.h"
#include "snapshot/snapshot.h"

namespace statlet {

class NetnsReader {
 public:
  explicit NetnsReader(std::string proc_root);
  ~NetnsReader();

  // Inode of /proc/<pid>/ns/net, or 0 when the process is gone or unreadable.
  uint64_t NetnsOf(uint32_t pid) const;
  // The host's namespace (that of pid 1, else our own).
  uint64_t host_netns() const { return host_netns_; }

  // Reads the counters of namespace `ino` through `pid` (used to open it the first time).
  // kGone when the namespace could not be read (the process left it); kError when the
  // content was (partly) malformed — the well-formed interfaces are still in *out.
  ReadOutcome Read(uint64_t ino, uint32_t pid, NetNamespaceStats* out);
  // Closes fds of namespaces not read since the previous call.
  void EndCollection();
  size_t open_namespaces() const { return entries_.size(); }

 private:
  struct Entry {
    int fd = -1;
    uint64_t generation = 0;
  };
  std::string proc_root_;
  uint64_t host_netns_ = 0;
  uint64_t generation_ = 1;
  std::unordered_map<uint64_t, Entry> entries_;
  ReadBuffer buf_;
};

}  // namespace statlet
