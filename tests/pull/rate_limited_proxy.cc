#include "tests/pull/rate_limited_proxy.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <future>
#include <list>

namespace statlet::pulltest {
namespace {

using Clock = std::chrono::steady_clock;

// Bytes held from the registry per connection before the proxy stops reading from it.
constexpr size_t kMaxHeld = 256 * 1024;

struct Conn {
  uint64_t id = 0;
  int client = -1, upstream = -1;
  std::string to_upstream;   // request bytes not yet written
  std::string to_client;     // registry bytes not yet released
  std::string request_line;  // the request being read, up to its first line
  bool in_headers = false;   // inside a request's header block
  bool client_eof = false, upstream_eof = false;
};

int ConnectUpstream(int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    close(fd);
    return -1;
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
  return fd;
}

}  // namespace

StatusOr<std::unique_ptr<RateLimitedProxy>> RateLimitedProxy::Start(pid_t netns_pid, int upstream_port,
                                                                    uint64_t bytes_per_second) {
  std::unique_ptr<RateLimitedProxy> p(new RateLimitedProxy());
  p->rate_ = bytes_per_second;
  p->wake_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (p->wake_fd_ < 0) return ErrnoStatus(errno, "eventfd");
  std::promise<Status> ready;  // set once by the thread, before Start returns
  std::future<Status> started = ready.get_future();
  RateLimitedProxy* self = p.get();
  p->thread_ = std::thread([self, netns_pid, upstream_port, &ready] {
    // Everything this thread creates lives in the target namespace.
    if (netns_pid > 0) {
      std::string ns = "/proc/" + std::to_string(netns_pid) + "/ns/net";
      int fd = open(ns.c_str(), O_RDONLY | O_CLOEXEC);
      if (fd < 0 || setns(fd, CLONE_NEWNET) != 0) {
        Status s = ErrnoStatus(errno, "setns " + ns);
        if (fd >= 0) close(fd);
        ready.set_value(s);
        return;
      }
      close(fd);
    }
    self->Run(upstream_port, &ready);
  });
  Status s = started.get();
  if (!s.ok()) return s;
  return p;
}

RateLimitedProxy::~RateLimitedProxy() {
  stop_ = true;
  if (wake_fd_ >= 0) {
    uint64_t one = 1;
    (void)!write(wake_fd_, &one, sizeof one);
  }
  if (thread_.joinable()) thread_.join();
  if (wake_fd_ >= 0) close(wake_fd_);
}

int RateLimitedProxy::CountRequests(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int>(
      std::count_if(requests_.begin(), requests_.end(), [&](const std::string& r) { return r.rfind(prefix, 0) == 0; }));
}

int RateLimitedProxy::OpenConnectionsFor(const std::string& prefix) const {
  std::lock_guard<std::mutex> lock(mu_);
  int n = 0;
  for (const auto& [id, r] : latest_) n += r.rfind(prefix, 0) == 0 ? 1 : 0;
  return n;
}

std::vector<std::string> RateLimitedProxy::Requests() const {
  std::lock_guard<std::mutex> lock(mu_);
  return requests_;
}

void RateLimitedProxy::DropConnections() {
  drop_ = true;
  uint64_t one = 1;
  (void)!write(wake_fd_, &one, sizeof one);
  for (int i = 0; i < 500 && drop_; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // the loop clears the flag within one turn
  }
}

void RateLimitedProxy::ResetCounters() {
  std::lock_guard<std::mutex> lock(mu_);
  requests_.clear();
  delivered_ = 0;
}

void RateLimitedProxy::Run(int upstream_port, std::promise<Status>* ready) {
  int listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  if (listener < 0 || bind(listener, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 || listen(listener, 64) != 0 ||
      getsockname(listener, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
    Status s = ErrnoStatus(errno, "proxy listener");
    if (listener >= 0) close(listener);
    ready->set_value(s);
    return;
  }
  port_ = ntohs(a.sin_port);
  ready->set_value(Status::Ok());  // `ready` is not touched again

  std::list<Conn> conns;
  uint64_t next_id = 0;
  double tokens = 0;
  auto last = Clock::now();
  std::vector<pollfd> fds;
  std::vector<Conn*> owners;
  char buf[64 * 1024];
  while (!stop_) {
    // Refill the bucket; at most a tenth of a second's worth is kept (the burst).
    const auto now = Clock::now();
    const double rate = static_cast<double>(rate_.load());
    tokens = std::min(tokens + rate * std::chrono::duration<double>(now - last).count(), std::max(rate / 10, 16384.0));
    last = now;
    fds.clear();
    owners.clear();
    fds.push_back({wake_fd_, POLLIN, 0});
    owners.push_back(nullptr);
    fds.push_back({listener, POLLIN, 0});
    owners.push_back(nullptr);
    bool throttled = false;
    for (Conn& c : conns) {
      short cev = 0, uev = 0;
      if (!c.client_eof && c.to_upstream.size() < kMaxHeld) cev |= POLLIN;
      if (!c.to_client.empty()) {
        if (paused_ || tokens < 1) {
          throttled = true;
        } else {
          cev |= POLLOUT;
        }
      }
      if (!c.upstream_eof && c.to_client.size() < kMaxHeld) uev |= POLLIN;
      if (!c.to_upstream.empty()) uev |= POLLOUT;
      fds.push_back({c.client, cev, 0});
      owners.push_back(&c);
      fds.push_back({c.upstream, uev, 0});
      owners.push_back(&c);
    }
    // While bytes wait for tokens, wake often enough to keep the rate smooth.
    int n = poll(fds.data(), fds.size(), throttled ? 5 : 200);
    if (n < 0 && errno != EINTR) break;
    if (fds[1].revents & POLLIN) {
      for (;;) {
        int cfd = accept4(listener, nullptr, nullptr, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (cfd < 0) break;
        int ufd = ConnectUpstream(upstream_port);
        if (ufd < 0) {
          close(cfd);
          continue;
        }
        conns.push_back(Conn{++next_id, cfd, ufd, {}, {}, {}, false, false, false});
        ++open_;
      }
    }
    for (size_t i = 2; i < fds.size(); i += 2) {
      Conn& c = *owners[i];
      const short cre = fds[i].revents, ure = fds[i + 1].revents;
      if (cre & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t r = read(c.client, buf, sizeof buf);
        if (r > 0) {
          c.to_upstream.append(buf, static_cast<size_t>(r));
          // Record each request's first line (requests of a pull carry no body).
          for (ssize_t k = 0; k < r; ++k) {
            char ch = buf[k];
            if (!c.in_headers) {
              if (ch == '\n') {
                if (!c.request_line.empty() && c.request_line.back() == '\r') c.request_line.pop_back();
                if (!c.request_line.empty()) {
                  std::lock_guard<std::mutex> lock(mu_);
                  requests_.push_back(c.request_line);
                  latest_[c.id] = c.request_line;
                  c.in_headers = true;
                }
                c.request_line.clear();
              } else if (c.request_line.size() < 1024) {
                c.request_line += ch;
              }
            } else {
              // The header block ends with an empty line.
              c.request_line += ch;
              if (c.request_line.size() >= 4 && c.request_line.compare(c.request_line.size() - 4, 4, "\r\n\r\n") == 0) {
                c.in_headers = false;
                c.request_line.clear();
              } else if (c.request_line.size() > 4) {
                c.request_line.erase(0, c.request_line.size() - 4);
              }
            }
          }
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
          c.client_eof = true;
        }
      }
      if ((ure & POLLOUT) && !c.to_upstream.empty()) {
        ssize_t w = send(c.upstream, c.to_upstream.data(), c.to_upstream.size(), MSG_NOSIGNAL);
        if (w > 0) c.to_upstream.erase(0, static_cast<size_t>(w));
        if (w < 0 && errno != EAGAIN) c.upstream_eof = c.client_eof = true;
      }
      if (ure & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t r = read(c.upstream, buf, sizeof buf);
        if (r > 0) {
          c.to_client.append(buf, static_cast<size_t>(r));
        } else if (r == 0 || (errno != EAGAIN && errno != EINTR)) {
          c.upstream_eof = true;
        }
      }
      if ((cre & POLLOUT) && !c.to_client.empty() && !paused_ && tokens >= 1) {
        size_t allowed = std::min(c.to_client.size(), static_cast<size_t>(tokens));
        ssize_t w = send(c.client, c.to_client.data(), allowed, MSG_NOSIGNAL);
        if (w > 0) {
          c.to_client.erase(0, static_cast<size_t>(w));
          tokens -= static_cast<double>(w);
          delivered_ += static_cast<uint64_t>(w);
          last_delivery_ = std::chrono::steady_clock::now().time_since_epoch().count();
        } else if (w < 0 && errno != EAGAIN) {
          c.client_eof = true;
        }
      }
    }
    if (fds[0].revents & POLLIN) {
      uint64_t v;
      (void)!read(wake_fd_, &v, sizeof v);
    }
    const bool drop = drop_;
    // A connection ends when the client is gone, or the registry is done and all its
    // bytes were delivered.
    for (auto it = conns.begin(); it != conns.end();) {
      bool done = drop || it->client_eof || (it->upstream_eof && it->to_client.empty());
      if (done) {
        close(it->client);
        close(it->upstream);
        {
          std::lock_guard<std::mutex> lock(mu_);
          latest_.erase(it->id);
        }
        it = conns.erase(it);
        --open_;
      } else {
        ++it;
      }
    }
    if (drop) drop_ = false;
  }
  for (Conn& c : conns) {
    close(c.client);
    close(c.upstream);
  }
  open_ = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    latest_.clear();
  }
  close(listener);
}

}  // namespace statlet::pulltest
