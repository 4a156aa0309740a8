// RateLimitedProxy: a TCP proxy of the tests' own between containerd and the registry, in
// containerd's network namespace, so that pulls take seconds and the tests can stop them:
//   * every byte from the registry to containerd passes one token bucket (a link of
//     `bytes_per_second`, shared by all connections);
//   * Pause() holds the registry's bytes (connections stay open, nothing reaches
//     containerd: a registry that stops sending mid-layer), Resume() lets them go;
//   * it counts the bytes it delivered and the requests it saw (the first line of each
//     HTTP request), so a test can tell how many times a blob was downloaded.
// One thread runs a poll loop over every connection; it enters the namespace once, so
// every socket it makes lives there.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "base/status.h"

namespace statlet::pulltest {

class RateLimitedProxy {
 public:
  // Listens on 127.0.0.1 (a free port) in the network namespace of `netns_pid` (0: this
  // process's) and forwards to 127.0.0.1:`upstream_port` there.
  static StatusOr<std::unique_ptr<RateLimitedProxy>> Start(pid_t netns_pid, int upstream_port,
                                                           uint64_t bytes_per_second);
  ~RateLimitedProxy();

  int port() const { return port_; }
  void SetRate(uint64_t bytes_per_second) { rate_ = bytes_per_second; }
  void Pause() { paused_ = true; }
  void Resume() { paused_ = false; }

  // Bytes delivered from the registry to clients since the start (or the last Reset).
  uint64_t delivered_bytes() const { return delivered_; }
  // When the last of those bytes was handed to a client's socket (steady clock): a pause
  // set while a send is under way takes effect after that send.
  std::chrono::steady_clock::time_point last_delivery() const {
    return std::chrono::steady_clock::time_point(std::chrono::steady_clock::duration(last_delivery_.load()));
  }
  // Connections open now.
  int open_connections() const { return open_; }
  // Connections open now whose latest request started with `prefix` (an idle keep-alive
  // connection of the same client does not count).
  int OpenConnectionsFor(const std::string& prefix) const;
  // How many requests started with `prefix` (e.g. "GET /v2/statlet/a/blobs/sha256:…").
  int CountRequests(const std::string& prefix) const;
  std::vector<std::string> Requests() const;
  void ResetCounters();
  // Closes every connection (idle keep-alive ones too) and waits until they are gone.
  void DropConnections();

 private:
  RateLimitedProxy() = default;
  void Run(int upstream_port, std::promise<Status>* ready);

  std::thread thread_;
  int port_ = 0;
  int wake_fd_ = -1;  // eventfd: stop
  std::atomic<bool> stop_{false};
  std::atomic<uint64_t> rate_{0};
  std::atomic<bool> paused_{false};
  std::atomic<bool> drop_{false};
  std::atomic<uint64_t> delivered_{0};
  std::atomic<std::chrono::steady_clock::rep> last_delivery_{0};
  std::atomic<int> open_{0};
  mutable std::mutex mu_;
  std::vector<std::string> requests_;       // guarded by mu_
  std::map<uint64_t, std::string> latest_;  // open connection -> its latest request (mu_)
};

}  // namespace statlet::pulltest
