#include "tests/support/prometheus_server.h"

#include <httplib.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "tests/support/wait_for.h"

namespace statlet::testing {

std::unique_ptr<PrometheusServer> PrometheusServer::Start(const std::string& dir, const PrometheusJob& job,
                                                          std::string* error) {
  std::string labels;
  for (const auto& [name, value] : job.labels) labels += (labels.empty() ? "" : ", ") + name + ": '" + value + "'";
  return StartWithConfig(dir,
                         "global:\n  scrape_interval: " + job.scrape_interval +
                             "\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: " + job.name +
                             "\n    static_configs:\n      - targets: ['" + job.target + "']\n" +
                             (labels.empty() ? "" : "        labels: {" + labels + "}\n"),
                         error);
}

std::unique_ptr<PrometheusServer> PrometheusServer::StartWithConfig(const std::string& dir, const std::string& config,
                                                                    std::string* error) {
  const int port = FreeLoopbackPort();
  std::ofstream(dir + "/prometheus.yml") << config;
  auto process = std::make_unique<BinaryProcess>(
      std::vector<std::string>{"/usr/bin/prometheus", "--config.file=" + dir + "/prometheus.yml",
                               "--storage.tsdb.path=" + dir + "/data",
                               "--web.listen-address=127.0.0.1:" + std::to_string(port)},
      dir + "/prometheus.log");
  std::unique_ptr<PrometheusServer> server(new PrometheusServer(dir, port, std::move(process)));
  httplib::Client client("127.0.0.1", port);
  if (!WaitFor(
          [&] {
            auto r = client.Get("/-/ready");
            return r && r->status == 200;
          },
          std::chrono::milliseconds(30000))) {
    if (error) *error = "Prometheus not ready within 30 s:\n" + server->Log();
    return nullptr;
  }
  return server;
}

PrometheusServer::~PrometheusServer() { Stop(); }

void PrometheusServer::Stop() {
  if (process_) process_->Stop();
  process_.reset();
}

nlohmann::json PrometheusServer::Query(const std::string& promql, std::optional<double> at) const {
  httplib::Client client("127.0.0.1", port_);
  client.set_read_timeout(10, 0);
  httplib::Params params{{"query", promql}};
  if (at) {
    char t[64];
    std::snprintf(t, sizeof t, "%.3f", *at);
    params.emplace("time", t);
  }
  auto r = client.Get("/api/v1/query", params, httplib::Headers{});
  if (!r || r->status != 200) return nullptr;
  auto j = nlohmann::json::parse(r->body, nullptr, false);
  if (j.is_discarded() || j["status"] != "success") return nullptr;
  return j["data"]["result"];
}

std::string PrometheusServer::Log() const {
  std::ifstream in(dir_ + "/prometheus.log");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

double WallSeconds() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

WallClockSeries::WallClockSeries(std::function<double()> read, std::chrono::milliseconds period)
    : read_(std::move(read)), period_(period) {
  thread_ = std::thread([this] {
    while (!stop_) {
      const double v = read_();
      {
        std::lock_guard<std::mutex> lock(mu_);
        samples_.emplace_back(WallSeconds(), v);
      }
      std::this_thread::sleep_for(period_);  // the sampling period, not synchronisation
    }
  });
}

WallClockSeries::~WallClockSeries() {
  stop_ = true;
  thread_.join();
}

double WallClockSeries::At(double t) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 1; i < samples_.size(); ++i) {
    if (samples_[i].first >= t) {
      auto [t0, v0] = samples_[i - 1];
      auto [t1, v1] = samples_[i];
      return t1 <= t0 ? v1 : v0 + (v1 - v0) * (t - t0) / (t1 - t0);
    }
  }
  return samples_.empty() ? 0 : samples_.back().second;
}

uint64_t DecimalSecondsToNanos(const std::string& v) {
  const size_t dot = v.find('.');
  uint64_t ns = std::stoull(v.substr(0, dot)) * 1000000000ull;
  if (dot != std::string::npos) {
    std::string frac = v.substr(dot + 1);
    frac.resize(9, '0');
    ns += std::stoull(frac);
  }
  return ns;
}

}  // namespace statlet::testing
