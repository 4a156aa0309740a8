#include "collector/netns_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <charconv>
#include <cstring>

#include "collector/parse/cgroup_parsers.h"

namespace statlet {
namespace {

// "/proc/<pid>/<tail>" without heap allocation.
const char* PidPath(char (&buf)[96], const std::string& root, uint32_t pid, const char* tail) {
  size_t n = root.size() < 40 ? root.size() : 40;
  std::memcpy(buf, root.data(), n);
  buf[n++] = '/';
  auto r = std::to_chars(buf + n, buf + n + 12, pid);
  n = static_cast<size_t>(r.ptr - buf);
  buf[n++] = '/';
  size_t t = std::strlen(tail);
  std::memcpy(buf + n, tail, t + 1);
  return buf;
}

}  // namespace

NetnsReader::NetnsReader(std::string proc_root) : proc_root_(std::move(proc_root)) {
  struct stat st;
  if (::stat((proc_root_ + "/1/ns/net").c_str(), &st) == 0) host_netns_ = st.st_ino;
  else if (::stat((proc_root_ + "/self/ns/net").c_str(), &st) == 0) host_netns_ = st.st_ino;
}

NetnsReader::~NetnsReader() {
  for (auto& [ino, e] : entries_)
    if (e.fd >= 0) ::close(e.fd);
}

uint64_t NetnsReader::NetnsOf(uint32_t pid) const {
  char path[96];
  struct stat st;
  if (pid == 0 || ::stat(PidPath(path, proc_root_, pid, "ns/net"), &st) != 0) return 0;
  return st.st_ino;
}

ReadOutcome NetnsReader::Read(uint64_t ino, uint32_t pid, NetNamespaceStats* out) {
  Entry& e = entries_[ino];
  if (e.fd < 0) {
    char path[96];
    e.fd = ::open(PidPath(path, proc_root_, pid, "net/dev"), O_RDONLY | O_CLOEXEC);
    if (e.fd < 0) {
      entries_.erase(ino);
      return ReadOutcome::kGone;
    }
    // The pid could have left between NetnsOf and open: confirm the namespace.
    if (NetnsOf(pid) != ino) {
      ::close(e.fd);
      entries_.erase(ino);
      return ReadOutcome::kGone;
    }
  }
  e.generation = generation_;
  if (PreadWhole(e.fd, &buf_) != 0) {
    ::close(e.fd);
    entries_.erase(ino);
    return ReadOutcome::kGone;
  }
  out->netns_inode = ino;
  out->interfaces.clear();
  return parse::ParseNetDev(buf_.view(), &out->interfaces) ? ReadOutcome::kOk : ReadOutcome::kError;
}

void NetnsReader::EndCollection() {
  for (auto it = entries_.begin(); it != entries_.end();) {
    if (it->second.generation != generation_) {
      ::close(it->second.fd);
      it = entries_.erase(it);
    } else {
      ++it;
    }
  }
  ++generation_;
}

}  // namespace statlet
