#include "metrics/device_names.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <string_view>

namespace statlet::metrics {

std::string BlockDeviceName(uint32_t major, uint32_t minor) {
  char path[64];
  std::snprintf(path, sizeof path, "/sys/dev/block/%u:%u/uevent", major, minor);
  std::string fallback = std::to_string(major) + ":" + std::to_string(minor);
  int fd = ::open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return fallback;
  char buf[1024];
  ssize_t n = ::read(fd, buf, sizeof buf - 1);
  ::close(fd);
  if (n <= 0) return fallback;
  std::string_view text(buf, static_cast<size_t>(n));
  size_t pos = text.find("DEVNAME=");
  if (pos == std::string_view::npos) return fallback;
  std::string_view name = text.substr(pos + 8);
  name = name.substr(0, name.find('\n'));
  if (name.empty()) return fallback;
  return "/dev/" + std::string(name);
}

const std::string& DeviceNames::Name(uint32_t major, uint32_t minor) {
  const uint64_t key = (uint64_t{major} << 32) | minor;
  auto it = names_.find(key);
  if (it != names_.end()) return it->second;
  return names_.emplace(key, namer_(major, minor)).first->second;
}

}  // namespace statlet::metrics
