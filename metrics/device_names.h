// The `device` label of a block device: "/dev/<name>" as the kernel names it in
// /sys/dev/block/<major>:<minor>/uevent (what cAdvisor and the kubernetes-mixin's device
// selectors expect), else "<major>:<minor>" — never "", so two unnamed devices never share a
// series.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <unordered_map>

namespace statlet::metrics {

// The rule itself, read from sysfs on every call.
std::string BlockDeviceName(uint32_t major, uint32_t minor);

// A cache of names for one edge (not thread-safe; each edge keeps its own). Names are
// looked up once per device for the edge's lifetime: the references stay valid.
class DeviceNames {
 public:
  using Namer = std::function<std::string(uint32_t major, uint32_t minor)>;
  explicit DeviceNames(Namer namer = BlockDeviceName) : namer_(std::move(namer)) {}
  const std::string& Name(uint32_t major, uint32_t minor);

 private:
  Namer namer_;
  std::unordered_map<uint64_t, std::string> names_;
};

}  // namespace statlet::metrics
