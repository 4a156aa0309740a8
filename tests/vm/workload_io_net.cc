// IO and network workloads: O_DIRECT transfers of known sizes on a block device, dirty
// page cache of a known size on a file system, and one TCP stream of a known payload
// between network namespaces.
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "tests/vm/workload.h"

namespace statlet::vmtest {
namespace {

// Full transfer of len bytes at offset; a short direct transfer is an error here.
bool DirectTransfer(int fd, bool write, char* buf, size_t len, off_t offset) {
  ssize_t n = write ? ::pwrite(fd, buf, len, offset) : ::pread(fd, buf, len, offset);
  return n == static_cast<ssize_t>(len);
}

}  // namespace

int RunDirectIo(const Flags& f) {
  std::string dev = f.Get("dev", "/dev/ram0");
  uint64_t bs = f.GetBytes("bs", 1 << 20);
  int writes = std::atoi(f.Get("writes", "0").c_str());
  int reads = std::atoi(f.Get("reads", "0").c_str());
  void* mem = nullptr;
  if (::posix_memalign(&mem, 4096, bs) != 0) return Fail("posix_memalign");
  auto* buf = static_cast<char*>(mem);
  std::memset(buf, 0x5a, bs);
  int fd = ::open(dev.c_str(), O_RDWR | O_DIRECT | O_CLOEXEC);
  if (fd < 0) return Fail("open O_DIRECT");
  for (int i = 0; i < writes; ++i)
    if (!DirectTransfer(fd, true, buf, bs, static_cast<off_t>(i * bs))) return Fail("pwrite");
  for (int i = 0; i < reads; ++i)
    if (!DirectTransfer(fd, false, buf, bs, static_cast<off_t>(i * bs))) return Fail("pread");
  ::close(fd);
  std::string report = "write_bytes=" + std::to_string(writes * bs) + "\nwrite_ios=" + std::to_string(writes) +
                       "\nread_bytes=" + std::to_string(reads * bs) + "\nread_ios=" + std::to_string(reads) + "\n";
  if (!WriteReport(f.Get("report"), report)) return Fail("report");
  PauseForever();
}

// Buffered writes of a known size and no sync: the pages stay dirty, charged to this
// cgroup (memory.stat file_dirty), for as long as the kernel's writeback leaves them.
int RunDirty(const Flags& f) {
  const std::string path = f.Get("path");
  const uint64_t bytes = f.GetBytes("bytes", 1 << 20);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Fail("open");
  std::vector<char> buf(1 << 20, 'd');
  for (uint64_t done = 0; done < bytes;) {
    const size_t chunk = static_cast<size_t>(std::min<uint64_t>(buf.size(), bytes - done));
    ssize_t n = ::write(fd, buf.data(), chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Fail("write");
    done += static_cast<uint64_t>(n);
  }
  ::close(fd);
  if (!WriteReport(f.Get("report"), "bytes=" + std::to_string(bytes) + "\n")) return Fail("report");
  PauseForever();
}

int RunRecv(const Flags& f) {
  int port = std::atoi(f.Get("port", "5000").c_str());
  int ls = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (ls < 0) return Fail("socket");
  int one = 1;
  ::setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  addr.sin_addr.s_addr = htonl(INADDR_ANY);
  if (::bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return Fail("bind");
  if (::listen(ls, 1) != 0) return Fail("listen");
  if (!WriteReport(f.Get("ready"), "listening=1\n")) return Fail("ready");
  int c = ::accept4(ls, nullptr, nullptr, SOCK_CLOEXEC);
  if (c < 0) return Fail("accept");
  std::vector<char> buf(1 << 16);
  uint64_t total = 0;
  for (;;) {
    ssize_t n = ::read(c, buf.data(), buf.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail("read");
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
  }
  ::close(c);
  if (!WriteReport(f.Get("report"), "bytes=" + std::to_string(total) + "\n")) return Fail("report");
  PauseForever();
}

int RunSend(const Flags& f) {
  std::string host = f.Get("host", "127.0.0.1");
  int port = std::atoi(f.Get("port", "5000").c_str());
  uint64_t bytes = f.GetBytes("bytes", 1 << 20);
  int s = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (s < 0) return Fail("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (::inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) return Fail("inet_pton");
  if (::connect(s, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) return Fail("connect");
  std::vector<char> buf(1 << 16, 'x');
  uint64_t sent = 0;
  while (sent < bytes) {
    size_t chunk = static_cast<size_t>(std::min<uint64_t>(buf.size(), bytes - sent));
    ssize_t n = ::write(s, buf.data(), chunk);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Fail("write");
    sent += static_cast<uint64_t>(n);
  }
  // Half-close and wait for the peer's close: every byte has then arrived.
  ::shutdown(s, SHUT_WR);
  while (::read(s, buf.data(), buf.size()) > 0) {
  }
  ::close(s);
  if (!WriteReport(f.Get("report"), "bytes=" + std::to_string(sent) + "\n")) return Fail("report");
  return 0;
}

}  // namespace statlet::vmtest
