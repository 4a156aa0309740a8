#include "cri/daemon_hooks.h"

#include "cri/socket_path.h"

namespace statlet::cri {
namespace {

// "10s", "500ms", "2m", "0".
bool ParsePeriod(const std::string& v, std::chrono::milliseconds* out) {
  size_t digits = 0;
  while (digits < v.size() && v[digits] >= '0' && v[digits] <= '9') ++digits;
  if (digits == 0 || digits > 9) return false;
  uint64_t n = std::stoull(v.substr(0, digits));
  std::string unit = v.substr(digits);
  if (unit == "ms") *out = std::chrono::milliseconds(n);
  else if (unit == "s") *out = std::chrono::seconds(n);
  else if (unit == "m") *out = std::chrono::minutes(n);
  else if (unit.empty() && n == 0) *out = std::chrono::milliseconds(0);
  else return false;
  return true;
}

}  // namespace

Status ExtractCriDaemonOptions(std::vector<std::string>* args, CriDaemonOptions* out) {
  std::vector<std::string> rest;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    std::string name = a, value;
    bool inline_value = false;
    if (auto eq = a.find('='); a.rfind("--", 0) == 0 && eq != std::string::npos) {
      name = a.substr(0, eq);
      value = a.substr(eq + 1);
      inline_value = true;
    }
    if (name != "--cri.listen" && name != "--runtime.endpoint" && name != "--runtime.stats-period") {
      rest.push_back(a);
      continue;
    }
    if (!inline_value) {
      if (i + 1 >= args->size()) return InvalidArgument(name + " needs a value");
      value = (*args)[++i];
    }
    if (name == "--runtime.stats-period") {
      if (!ParsePeriod(value, &out->runtime_stats_period)) {
        return InvalidArgument("--runtime.stats-period: expected a duration like 10s, 500ms, 1m or 0, got \"" +
                               value + "\"");
      }
    } else if (name == "--cri.listen") {
      if (!value.empty()) {
        auto p = ParseUnixEndpoint(value);
        if (!p.ok()) return InvalidArgument("--cri.listen: " + p.status().message());
      }
      out->listen = value;
    } else {
      if (!value.empty() && value != "none") {
        auto p = ParseUnixEndpoint(value);
        if (!p.ok()) return InvalidArgument("--runtime.endpoint: " + p.status().message());
      }
      out->runtime_endpoint = value;
    }
  }
  *args = std::move(rest);
  return Status::Ok();
}

std::string CriDaemonUsage() {
  return std::string("CRI:\n") +
         "  --cri.listen PATH        serve CRI runtime.v1 stats on this unix socket (mode 0660;\n"
         "                           default " + kDefaultCriListenPath + "; \"\" disables)\n"
         "  --runtime.endpoint URL   the node runtime's CRI socket for pod/container names,\n"
         "                           unix:///... (default: auto-detect containerd, CRI-O;\n"
         "                           \"none\" disables)\n"
         "  --runtime.stats-period D how often to ask the runtime's ListContainerStats for\n"
         "                           container writable layers (default 10s; 0 never)\n";
}

std::unique_ptr<RuntimeClient> StartRuntimeClient(const CriDaemonOptions& o) {
  if (o.runtime_endpoint == "none") return nullptr;
  RuntimeClientOptions ro;
  ro.endpoint = o.runtime_endpoint;
  ro.stats_period = o.runtime_stats_period;
  auto client = std::make_unique<RuntimeClient>(ro);
  client->Start();
  return client;
}

StatusOr<std::unique_ptr<CriServer>> StartCriServer(SnapshotSource* source, const CriDaemonOptions& o) {
  if (o.listen.empty()) return std::unique_ptr<CriServer>();
  CriServerOptions so;
  so.listen_path = o.listen;
  return CriServer::Start(source, so);
}

}  // namespace statlet::cri
