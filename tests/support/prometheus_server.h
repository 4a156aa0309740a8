// Debian's Prometheus server, run by a live test: one scrape job against a target, the
// server's own storage under the test's directory, instant queries over its HTTP API.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/support/child_process.h"

namespace statlet::testing {

struct PrometheusJob {
  std::string name;    // job_name, e.g. "cadvisor"
  std::string target;  // host:port
  std::string scrape_interval = "1s";
  std::map<std::string, std::string> labels = {};  // put on the target (e.g. a cluster label)
};

class PrometheusServer {
 public:
  // Starts /usr/bin/prometheus with its config, data and log in `dir` (which must exist)
  // and waits until it is ready; null (and `error` set) when it is not within 30 s.
  static std::unique_ptr<PrometheusServer> Start(const std::string& dir, const PrometheusJob& job, std::string* error);
  // The same with a whole configuration file (scrape jobs, rule_files…) written to
  // dir/prometheus.yml.
  static std::unique_ptr<PrometheusServer> StartWithConfig(const std::string& dir, const std::string& config,
                                                           std::string* error);
  ~PrometheusServer();

  int port() const { return port_; }
  // The `result` of an instant query (at `at`, seconds since the epoch; default now), or
  // null JSON when the query failed.
  nlohmann::json Query(const std::string& promql, std::optional<double> at = std::nullopt) const;
  // The server's log, for failure messages.
  std::string Log() const;
  void Stop();

 private:
  PrometheusServer(std::string dir, int port, std::unique_ptr<BinaryProcess> process)
      : dir_(std::move(dir)), port_(port), process_(std::move(process)) {}
  std::string dir_;
  int port_;
  std::unique_ptr<BinaryProcess> process_;
};

// Seconds since the epoch, as Prometheus stamps its samples.
double WallSeconds();

// A quantity (CPU seconds of a process or of cgroups…) read every `period` on a thread of
// its own with the wall clock beside it, so that its value at a Prometheus sample's
// timestamp, or its rate between two, can be read off afterwards.
class WallClockSeries {
 public:
  WallClockSeries(std::function<double()> read, std::chrono::milliseconds period);
  ~WallClockSeries();
  // The value at wall time t (seconds since the epoch), interpolated linearly.
  double At(double t);
  // The average rate over [from, to].
  double Rate(double from, double to) { return (At(to) - At(from)) / (to - from); }

 private:
  std::function<double()> read_;
  std::chrono::milliseconds period_;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::pair<double, double>> samples_;
  std::thread thread_;
};

// A decimal number of seconds as statlet writes it ("12.0345") in exact nanoseconds.
uint64_t DecimalSecondsToNanos(const std::string& v);

}  // namespace statlet::testing
