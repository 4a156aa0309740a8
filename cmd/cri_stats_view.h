// `statlet stats --cri.endpoint unix:///…`: reads any CRI endpoint (statlet's or a
// runtime's) like `crictl stats` / `crictl statsp` and prints a table, JSON or YAML.
// statlet's additions (kernel/user CPU, processes, network) show when the endpoint
// sends them.
#pragma once

#include <chrono>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>

#include "base/status.h"

namespace runtime::v1 {
class NetworkUsage;
}  // namespace runtime::v1

namespace statlet {

// Bytes over every interface a CRI NetworkUsage lists: its default interface and the others.
struct NetworkTotals {
  uint64_t rx_bytes = 0;
  uint64_t tx_bytes = 0;
};
NetworkTotals SumNetworkUsage(const runtime::v1::NetworkUsage& n);

struct CriStatsViewOptions {
  std::string endpoint;          // unix:///path
  bool pods = false;             // pod sandboxes (statsp) instead of containers
  std::string output = "table";  // table | json | yaml
  std::string id;                // container (or pod with --pods) id or prefix
  std::string pod;               // pod sandbox id or prefix (containers)
  std::map<std::string, std::string> labels;
  std::chrono::milliseconds timeout{10000};
};

// True when the arguments ask for the CRI view (carry --cri.endpoint).
bool WantsCriStatsView(int argc, char** argv);
// Parses the arguments after "stats".
StatusOr<CriStatsViewOptions> ParseCriStatsViewArgs(int argc, char** argv);
// Returns the process exit code: 0 ok, 1 call failed, 2 bad usage.
int RunCriStatsView(const CriStatsViewOptions& options, std::ostream& out, std::ostream& err);
// Parse + run, for cmd/stats_command.cc.
int RunCriStatsCommand(int argc, char** argv);

}  // namespace statlet
