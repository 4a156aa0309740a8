// The daemon's CRI settings (--cri.*, --runtime.*): plain values, so that the daemon's
// option code (cmd/) takes them without the generated runtime.v1 headers that the server
// itself needs (cri/daemon_hooks.h starts it).
//
// The flags that set CriDaemonOptions are declared in cmd/options_cri.cc (--cri.*) and
// cmd/options_runtime.cc (--runtime.*).
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace statlet::cri {

// Where `--cri.listen` points by default.
inline constexpr char kDefaultCriListenPath[] = "/run/statlet/cri.sock";

struct CriDaemonOptions {
  std::string listen = kDefaultCriListenPath;
  std::string runtime_endpoint;  // empty: auto-detect; "none": no runtime client
  std::chrono::milliseconds runtime_stats_period{10000};
  std::chrono::milliseconds runtime_refresh_period{2000};
  std::chrono::nanoseconds max_age = std::chrono::seconds(1);  // snapshot reuse for CRI calls
  size_t max_unary_metrics_bytes = size_t{16} << 20;           // see CriServiceOptions
  // Proxy mode (cri/proxy_router.h): the socket passes every call statlet does not answer
  // to runtime_endpoint.
  bool proxy = false;
  int proxy_max_calls = 4096;
};

}  // namespace statlet::cri
