// The least a proxy process can be: bytes copied between a caller's unix-socket connection
// and one of its own to the runtime, nothing parsed. bench_proxy puts it beside statlet
// (`--relay`) to measure what one more process hop costs by itself on the machine.
//
//   byte_relay LISTEN_SOCKET RUNTIME_SOCKET
//
// One thread, one epoll set (level-triggered). Every accepted connection gets its own
// connection to RUNTIME_SOCKET; what one end sends is written to the other as soon as it
// is read. When a write cannot take everything, the rest waits in that direction's buffer
// and the reading end is not read again until it is gone. The pair closes when either end
// closes or fails (gRPC's HTTP/2 does not half-close a connection). Ends with SIGTERM.
#include <errno.h>
#include <fcntl.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

constexpr size_t kChunk = 64 * 1024;

// One end of a relayed pair; `pending` holds what was read from the peer and not yet
// written to this end.
struct End {
  int fd = -1;
  End* peer = nullptr;
  std::vector<char> pending;
  size_t sent = 0;  // of `pending`
};

bool Address(const std::string& path, sockaddr_un* addr) {
  std::memset(addr, 0, sizeof *addr);
  addr->sun_family = AF_UNIX;
  if (path.size() >= sizeof addr->sun_path) return false;
  std::memcpy(addr->sun_path, path.data(), path.size());
  return true;
}

int Connect(const std::string& path) {
  sockaddr_un addr;
  if (!Address(path, &addr)) return -1;
  const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

class Relay {
 public:
  Relay(int listener, std::string runtime) : listener_(listener), runtime_(std::move(runtime)) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    Watch(listener_, EPOLLIN, EPOLL_CTL_ADD);
  }

  int Run() {
    epoll_event events[64];
    for (;;) {
      const int n = epoll_wait(epoll_, events, 64, -1);
      if (n < 0) {
        if (errno == EINTR) continue;
        std::perror("byte_relay: epoll_wait");
        return 1;
      }
      // New connections after the batch: an fd closed in it and reused by an accept would
      // take a stale event of the batch.
      bool accept = false;
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listener_) {
          accept = true;
          continue;
        }
        auto it = ends_.find(fd);
        if (it == ends_.end()) continue;  // closed earlier in this batch
        End* end = it->second.get();
        bool ok = true;
        if (events[i].events & EPOLLOUT) ok = Flush(end);
        if (ok && (events[i].events & (EPOLLIN | EPOLLHUP | EPOLLERR))) ok = Pump(end);
        // A hung-up or failed end is reported on every wait: once read, the pair is done
        // (waiting for its peer to drain would spin).
        if (events[i].events & (EPOLLHUP | EPOLLERR)) ok = false;
        if (!ok) ClosePair(end);
      }
      if (accept) Accept();
    }
  }

 private:
  void Watch(int fd, uint32_t events, int op) {
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = fd;
    epoll_ctl(epoll_, op, fd, &ev);
  }
  // An end is read while its peer has nothing pending, and written while it has.
  void Update(End* end) {
    uint32_t events = 0;
    if (end->peer->pending.empty()) events |= EPOLLIN;
    if (!end->pending.empty()) events |= EPOLLOUT;
    Watch(end->fd, events, EPOLL_CTL_MOD);
  }

  void Accept() {
    const int caller = accept4(listener_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (caller < 0) return;
    const int runtime = Connect(runtime_);
    if (runtime < 0) {
      close(caller);
      return;
    }
    auto a = std::make_unique<End>(), b = std::make_unique<End>();
    a->fd = caller;
    b->fd = runtime;
    a->peer = b.get();
    b->peer = a.get();
    Watch(caller, EPOLLIN, EPOLL_CTL_ADD);
    Watch(runtime, EPOLLIN, EPOLL_CTL_ADD);
    ends_[caller] = std::move(a);
    ends_[runtime] = std::move(b);
  }

  // Writes what `end` has pending; false when the end failed.
  bool Flush(End* end) {
    while (end->sent < end->pending.size()) {
      const ssize_t w = send(end->fd, end->pending.data() + end->sent, end->pending.size() - end->sent, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) break;
        return false;
      }
      end->sent += static_cast<size_t>(w);
    }
    if (end->sent == end->pending.size()) {
      end->pending.clear();
      end->sent = 0;
    }
    Update(end);
    Update(end->peer);
    return true;
  }

  // Reads what `end` has and writes it to its peer; false when the pair is done.
  bool Pump(End* end) {
    // An event of this batch, reported before the peer's writes backed up: read later.
    if (!end->peer->pending.empty()) return true;
    char buf[kChunk];
    const ssize_t r = recv(end->fd, buf, sizeof buf, 0);
    if (r == 0) return false;
    if (r < 0) return errno == EAGAIN || errno == EINTR;
    End* to = end->peer;
    size_t off = 0;
    while (off < static_cast<size_t>(r)) {
      const ssize_t w = send(to->fd, buf + off, static_cast<size_t>(r) - off, MSG_NOSIGNAL);
      if (w < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN) break;
        return false;
      }
      off += static_cast<size_t>(w);
    }
    if (off < static_cast<size_t>(r)) {
      to->pending.assign(buf + off, buf + r);
      to->sent = 0;
      Update(to);
      Update(end);
    }
    return true;
  }

  void ClosePair(End* end) {
    const int a = end->fd, b = end->peer->fd;
    for (int fd : {a, b}) {
      epoll_ctl(epoll_, EPOLL_CTL_DEL, fd, nullptr);
      close(fd);
      ends_.erase(fd);
    }
  }

  int listener_;
  std::string runtime_;
  int epoll_ = -1;
  std::unordered_map<int, std::unique_ptr<End>> ends_;
};

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: byte_relay LISTEN_SOCKET RUNTIME_SOCKET\n");
    return 2;
  }
  std::signal(SIGPIPE, SIG_IGN);
  sockaddr_un addr;
  if (!Address(argv[1], &addr)) {
    std::fprintf(stderr, "byte_relay: socket path too long\n");
    return 2;
  }
  unlink(argv[1]);
  const int listener = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      listen(listener, 128) != 0) {
    std::perror("byte_relay: listen");
    return 1;
  }
  return Relay(listener, argv[2]).Run();
}
