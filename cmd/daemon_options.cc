#include "cmd/daemon_options.h"

#include "base/unix_socket.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <sstream>

namespace statlet {
namespace {

using std::chrono::nanoseconds;
using std::chrono::seconds;

Status ParseUint(const std::string& name, const std::string& text, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || text[0] == '-') {
    return InvalidArgument(name + ": expected a non-negative integer, got \"" + text + "\"");
  }
  *out = v;
  return Status::Ok();
}

Status ParseBool(const std::string& name, const std::string& text, bool* out) {
  if (text == "true" || text == "1") *out = true;
  else if (text == "false" || text == "0") *out = false;
  else return InvalidArgument(name + ": expected true or false, got \"" + text + "\"");
  return Status::Ok();
}

Status ParseSeconds(const std::string& name, const std::string& text, seconds* out) {
  nanoseconds ns;
  if (Status s = ParseDuration(text, &ns); !s.ok()) return InvalidArgument(name + ": " + s.message());
  *out = std::chrono::duration_cast<seconds>(ns);
  if (*out < seconds(1)) return InvalidArgument(name + ": must be at least 1s");
  return Status::Ok();
}

// A real number in [lo, hi].
Status ParseReal(const std::string& name, const std::string& text, double lo, double hi, double* out) {
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || errno != 0 || !(v >= lo && v <= hi)) {
    return InvalidArgument(name + ": expected a number in [" + std::to_string(lo) + ", " + std::to_string(hi) +
                           "], got \"" + text + "\"");
  }
  *out = v;
  return Status::Ok();
}

// One option: its flag name (without "--"), YAML path (section.key), help and setter.
struct Option {
  const char* flag;
  const char* yaml;
  const char* def;
  const char* help;
  bool is_bool;
  std::function<Status(DaemonOptions*, const std::string&)> set;
};

const std::vector<Option>& Options() {
  static const auto* opts = new std::vector<Option>{
      {"web.listen-address", "web.listen_address", ":10340",
       "Address to listen on for /metrics, /healthz and /readyz (host:port, :port).", false,
       [](DaemonOptions* o, const std::string& v) {
         std::string h;
         int p;
         if (Status s = ParseListenAddress(v, &h, &p); !s.ok()) return s;
         o->http.listen_address = v;
         return Status::Ok();
       }},
      {"web.telemetry-path", "web.telemetry_path", "/metrics", "Path under which to expose metrics.", false,
       [](DaemonOptions* o, const std::string& v) {
         if (v.empty() || v[0] != '/') return InvalidArgument("web.telemetry-path must start with '/'");
         o->http.telemetry_path = v;
         return Status::Ok();
       }},
      {"web.config.file", "web.config_file", "",
       "Exporter-toolkit web config (TLS cert/key/client CA, basic_auth_users, headers).", false,
       [](DaemonOptions* o, const std::string& v) {
         o->web_config_file = v;
         return Status::Ok();
       }},
      {"web.health-listen-address", "web.health_listen_address", "",
       "Also serve /healthz and /readyz on this address, in plain HTTP without auth, for probes (bind it to "
       "loopback, e.g. 127.0.0.1:10341); empty: no such address.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         if (!v.empty()) {
           std::string h;
           int p;
           if (Status s = ParseListenAddress(v, &h, &p); !s.ok()) return s;
         }
         o->http.health_listen_address = v;
         return Status::Ok();
       }},
      {"web.max-connections", "web.max_connections", "512",
       "Open connections at most; more are answered 503 and closed. Idle and slow connections cost a socket "
       "each, never a thread.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("web.max-connections", v, &n); !s.ok()) return s;
         if (n == 0 || n > 65536) return InvalidArgument("web.max-connections must be 1..65536");
         o->http.max_connections = n;
         return Status::Ok();
       }},
      {"web.max-connections-per-address", "web.max_connections_per_address", "64",
       "Open connections from one client address at most; more are answered 503 and closed.", false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("web.max-connections-per-address", v, &n); !s.ok()) return s;
         if (n == 0 || n > 65536) return InvalidArgument("web.max-connections-per-address must be 1..65536");
         o->http.max_connections_per_address = n;
         return Status::Ok();
       }},
      {"web.listen-backlog", "web.listen_backlog", "128", "Connections waiting to be accepted at most.", false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("web.listen-backlog", v, &n); !s.ok()) return s;
         if (n == 0 || n > 4096) return InvalidArgument("web.listen-backlog must be 1..4096");
         o->http.listen_backlog = static_cast<int>(n);
         return Status::Ok();
       }},
      {"web.read-timeout", "web.read_timeout", "10s",
       "A whole request (line, headers, body) must arrive within this of its first byte; else 408 and close.", false,
       [](DaemonOptions* o, const std::string& v) { return ParseSeconds("web.read-timeout", v, &o->http.read_timeout); }},
      {"web.write-timeout", "web.write_timeout", "30s", "Timeout for writing a whole response.", false,
       [](DaemonOptions* o, const std::string& v) {
         return ParseSeconds("web.write-timeout", v, &o->http.write_timeout);
       }},
      {"web.idle-timeout", "web.idle_timeout", "5s",
       "How long a connection may wait before (the next) request begins; then it is closed.", false,
       [](DaemonOptions* o, const std::string& v) {
         return ParseSeconds("web.idle-timeout", v, &o->http.keep_alive_timeout);
       }},
      {"web.max-header-bytes", "web.max_header_bytes", "16384",
       "Largest request line and header block accepted (else 431 and close).", false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("web.max-header-bytes", v, &n); !s.ok()) return s;
         if (n < 1024 || n > (1u << 20)) return InvalidArgument("web.max-header-bytes must be 1024..1048576");
         o->http.max_header_bytes = n;
         return Status::Ok();
       }},
      {"web.max-request-bytes", "web.max_request_bytes", "65536",
       "Largest request body accepted (read and dropped; else 413 and close).", false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("web.max-request-bytes", v, &n); !s.ok()) return s;
         o->http.max_request_bytes = n;
         return Status::Ok();
       }},
      {"web.gzip-level", "web.gzip_level", "1", "zlib level (1..9) when a scraper accepts gzip.", false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("web.gzip-level", v, &n); !s.ok()) return s;
         if (n < 1 || n > 9) return InvalidArgument("web.gzip-level must be 1..9");
         o->http.gzip_level = static_cast<int>(n);
         return Status::Ok();
       }},
      {"log.level", "log.level", "info", "Only log messages with the given severity or above: debug, info, warn, error.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         if (!log::ParseLevel(v, &o->log_level)) return InvalidArgument("log.level: expected debug|info|warn|error");
         return Status::Ok();
       }},
      {"log.format", "log.format", "logfmt", "Output format of log messages: logfmt or json.", false,
       [](DaemonOptions* o, const std::string& v) {
         if (!log::ParseFormat(v, &o->log_format)) return InvalidArgument("log.format: expected logfmt|json");
         return Status::Ok();
       }},
      {"collector.max-age", "collector.max_age", "0s",
       "Serve a snapshot younger than this instead of collecting again (0: collect per scrape; concurrent "
       "scrapes always share one collection).",
       false,
       [](DaemonOptions* o, const std::string& v) {
         if (Status s = ParseDuration(v, &o->http.max_age); !s.ok()) return InvalidArgument("collector.max-age: " + s.message());
         return Status::Ok();
       }},
      {"collector.cgroup-root", "collector.cgroup_root", "/sys/fs/cgroup", "Where the cgroup hierarchies are mounted.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         o->collector.cgroup_mount = v;
         return Status::Ok();
       }},
      {"collector.proc-root", "collector.proc_root", "/proc", "Mount point of procfs.", false,
       [](DaemonOptions* o, const std::string& v) {
         o->collector.proc_root = v;
         return Status::Ok();
       }},
      {"collector.subtree", "collector.subtrees", "",
       "Only report cgroups under this path (relative to the hierarchy root); repeatable. Default: all.", false,
       [](DaemonOptions* o, const std::string& v) {
         if (v.empty() || v[0] != '/') return InvalidArgument("collector.subtree must start with '/'");
         o->collector.subtrees.push_back(v);
         return Status::Ok();
       }},
      {"collector.include-empty", "collector.include_empty", "false",
       "Also report cgroups with no processes that are not Kubernetes or runtime cgroups.", true,
       [](DaemonOptions* o, const std::string& v) {
         return ParseBool("collector.include-empty", v, &o->collector.include_empty);
       }},
      {"collector.network", "collector.network", "true", "Read network counters of each pod's namespace.", true,
       [](DaemonOptions* o, const std::string& v) { return ParseBool("collector.network", v, &o->collector.network); }},
      {"collector.process-fds", "collector.process_fds", "true",
       "Count open file descriptors and sockets of every container process (/proc/<pid>/fd) and read the "
       "first process's open-files ulimit, as cAdvisor's process metrics.",
       true,
       [](DaemonOptions* o, const std::string& v) {
         return ParseBool("collector.process-fds", v, &o->collector.process_fds);
       }},
      {"collector.max-kept-files", "collector.max_kept_files", "4096",
       "Cgroup files kept open between collections, at most (each costs ~5 KiB of kernel memory charged to "
       "statlet's cgroup; the rest are opened and closed on every collection, up to ~8x the read cost).",
       false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("collector.max-kept-files", v, &n); !s.ok()) return s;
         o->collector.max_kept_files = static_cast<size_t>(n);
         return Status::Ok();
       }},
      {"collector.read-threads", "collector.read_threads", "2",
       "Threads reading cgroup files in a collection, the collecting one included (at most the CPUs statlet may "
       "run on; 1: one thread). Two take ~25-33% off a large collection's latency for 9-33% more CPU.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("collector.read-threads", v, &n); !s.ok()) return s;
         if (n == 0 || n > 64) return InvalidArgument("collector.read-threads must be between 1 and 64");
         o->collector.read_threads = static_cast<size_t>(n);
         return Status::Ok();
       }},
      {"collector.watch-limits", "collector.watch_limits", "true",
       "Serve the cgroup files only a write of their own changes (memory, CPU and pids limits) from memory "
       "between inotify events instead of reading them on every collection.",
       true,
       [](DaemonOptions* o, const std::string& v) {
         return ParseBool("collector.watch-limits", v, &o->collector.watch_limits);
       }},
      {"collector.per-cpu", "collector.per_cpu", "false",
       "Expose container_cpu_usage_seconds_total per CPU (cpu=\"cpuNN\") instead of cpu=\"total\", as cAdvisor's "
       "percpu metrics.",
       true,
       [](DaemonOptions* o, const std::string& v) { return ParseBool("collector.per-cpu", v, &o->metrics.per_cpu); }},
      {"memory-qos.formula", "memory_qos.formula", "v1.27",
       "Memory QoS (KEP-2570) formula for the expected memory.high: v1.27 (floor[(request + factor x (limit or "
       "node allocatable - request)) / page] x page) or v1.22 (factor x limit, only above the request).",
       false,
       [](DaemonOptions* o, const std::string& v) {
         if (!ParseMemoryHighFormula(v, &o->memory_qos.formula)) {
           return InvalidArgument("memory-qos.formula: expected v1.27|v1.22, got \"" + v + "\"");
         }
         return Status::Ok();
       }},
      {"memory-qos.throttling-factor", "memory_qos.throttling_factor", "0.9",
       "The kubelet's memoryThrottlingFactor used for the expected memory.high (0 < factor <= 1).", false,
       [](DaemonOptions* o, const std::string& v) {
         double f;
         if (Status s = ParseReal("memory-qos.throttling-factor", v, 0, 1, &f); !s.ok()) return s;
         if (f <= 0) return InvalidArgument("memory-qos.throttling-factor must be above 0");
         o->memory_qos.throttling_factor = f;
         return Status::Ok();
       }},
      {"memory-qos.stall-detector", "memory_qos.stall_detector", "true",
       "Flag containers livelocked at memory.high (statlet_container_memory_high_stalled, a log line on entry and "
       "exit).",
       true,
       [](DaemonOptions* o, const std::string& v) {
         return ParseBool("memory-qos.stall-detector", v, &o->memory_high_stall.enabled);
       }},
      {"memory-qos.stall-psi-full", "memory_qos.stall_psi_full", "40",
       "memory.pressure full avg10 (percent) at or above which a container at memory.high counts as stalled.", false,
       [](DaemonOptions* o, const std::string& v) {
         return ParseReal("memory-qos.stall-psi-full", v, 0, 100, &o->memory_high_stall.psi_full_avg10_percent);
       }},
      {"memory-qos.stall-usage-margin", "memory_qos.stall_usage_margin", "0.05",
       "Usage counts as at memory.high from memory.high x (1 - margin) up.", false,
       [](DaemonOptions* o, const std::string& v) {
         return ParseReal("memory-qos.stall-usage-margin", v, 0, 1, &o->memory_high_stall.usage_margin_ratio);
       }},
      {"memory-qos.stall-dwell", "memory_qos.stall_dwell", "10s",
       "How long a container must stay stalled at memory.high before it is flagged (judged at each collection).",
       false,
       [](DaemonOptions* o, const std::string& v) {
         if (Status s = ParseDuration(v, &o->memory_high_stall.dwell); !s.ok()) {
           return InvalidArgument("memory-qos.stall-dwell: " + s.message());
         }
         return Status::Ok();
       }},
      {"metrics.max-cgroups", "metrics.max_cgroups", "0",
       "Cardinality cap: expose at most this many cgroups (0: no cap); the rest are counted in "
       "statlet_cardinality_dropped_total.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("metrics.max-cgroups", v, &n); !s.ok()) return s;
         o->metrics.max_cgroups = n;
         return Status::Ok();
       }},
      {"metrics.ignored-interfaces", "metrics.ignored_interfaces", "lo,veth,docker,nerdctl",
       "Interfaces left out of container_network_* on every edge: comma-separated name prefixes "
       "(case-insensitive), as cAdvisor's; \"\" counts every interface.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         o->metrics.ignored_interface_prefixes.clear();
         std::stringstream in(v);
         for (std::string prefix; std::getline(in, prefix, ',');) {
           if (!prefix.empty()) o->metrics.ignored_interface_prefixes.push_back(prefix);
         }
         return Status::Ok();
       }},
      {"metrics.max-interfaces", "metrics.max_interfaces", "0",
       "Cardinality cap on interfaces per network namespace (0: no cap).", false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("metrics.max-interfaces", v, &n); !s.ok()) return s;
         o->metrics.max_interfaces = n;
         return Status::Ok();
       }},
      {"cri.listen", "cri.listen", cri::kDefaultCriListenPath,
       "Serve CRI runtime.v1 stats on this unix socket (mode 0660); \"\" disables.", false,
       [](DaemonOptions* o, const std::string& v) {
         if (!v.empty()) {
           auto p = ParseUnixEndpoint(v);
           if (!p.ok()) return InvalidArgument("cri.listen: " + p.status().message());
         }
         o->cri.listen = v;
         return Status::Ok();
       }},
      {"cri.max-age", "cri.max_age", "1s",
       "CRI calls are answered from a snapshot younger than this (concurrent calls share one collection).",
       false,
       [](DaemonOptions* o, const std::string& v) {
         if (Status s = ParseDuration(v, &o->cri.max_age); !s.ok()) return InvalidArgument("cri.max-age: " + s.message());
         return Status::Ok();
       }},
      {"cri.max-message-bytes", "cri.max_message_bytes", "16777216",
       "A unary ListPodSandboxMetrics answer larger than this is refused with RESOURCE_EXHAUSTED (the kubelet "
       "accepts 16 MiB); StreamPodSandboxMetrics has no such limit. In proxy mode also the largest message "
       "passed either way.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n = 0;
         if (Status s = ParseUint("cri.max-message-bytes", v, &n); !s.ok()) return s;
         if (n == 0) return InvalidArgument("cri.max-message-bytes must be > 0");
         o->cri.max_unary_metrics_bytes = n;
         return Status::Ok();
       }},
      {"cri.proxy", "cri.proxy", "false",
       "Proxy mode: the CRI socket is the node's container runtime endpoint for the kubelet. Stats calls and "
       "PullImage are answered by statlet; every other runtime.v1 call passes to --runtime.endpoint (which must "
       "be set) unchanged (docs/cri.md).",
       true, [](DaemonOptions* o, const std::string& v) { return ParseBool("cri.proxy", v, &o->cri.proxy); }},
      {"cri.proxy-max-calls", "cri.proxy_max_calls", "4096",
       "Proxy mode: calls passed to the runtime in flight at once; more are answered RESOURCE_EXHAUSTED.", false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n = 0;
         if (Status s = ParseUint("cri.proxy-max-calls", v, &n); !s.ok()) return s;
         if (n == 0 || n > 65536) return InvalidArgument("cri.proxy-max-calls must be 1..65536");
         o->cri.proxy_max_calls = static_cast<int>(n);
         return Status::Ok();
       }},
      {"runtime.endpoint", "runtime.endpoint", "",
       "The node runtime's CRI socket (unix:///...) for pod and container names; empty: auto-detect containerd "
       "and CRI-O; \"none\" disables.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         if (!v.empty() && v != "none") {
           auto p = ParseUnixEndpoint(v);
           if (!p.ok()) return InvalidArgument("runtime.endpoint: " + p.status().message());
         }
         o->cri.runtime_endpoint = v;
         return Status::Ok();
       }},
      {"runtime.refresh-period", "runtime.refresh_period", "2s",
       "How often the runtime's pod and container list is refreshed (never per scrape).", false,
       [](DaemonOptions* o, const std::string& v) {
         nanoseconds d;
         if (Status s = ParseDuration(v, &d); !s.ok()) return InvalidArgument("runtime.refresh-period: " + s.message());
         if (d < std::chrono::milliseconds(10)) return InvalidArgument("runtime.refresh-period must be at least 10ms");
         o->cri.runtime_refresh_period = std::chrono::duration_cast<std::chrono::milliseconds>(d);
         return Status::Ok();
       }},
      {"runtime.stats-period", "runtime.stats_period", "10s",
       "How often the runtime's ListContainerStats is asked for container writable layers (0: never).", false,
       [](DaemonOptions* o, const std::string& v) {
         nanoseconds d;
         if (Status s = ParseDuration(v, &d); !s.ok()) return InvalidArgument("runtime.stats-period: " + s.message());
         o->cri.runtime_stats_period = std::chrono::duration_cast<std::chrono::milliseconds>(d);
         return Status::Ok();
       }},
      {"pull.enabled", "pull.enabled", "true",
       "Serve image pulls on the CRI socket: PullImage, PullImageWithProgress (KEP-3542) and PullImageProgress "
       "through one runtime pull per image, the other image calls passed to the runtime. Off: every image call "
       "answers UNIMPLEMENTED.",
       true, [](DaemonOptions* o, const std::string& v) { return ParseBool("pull.enabled", v, &o->pulls.enabled); }},
      {"pull.containerd-endpoint", "pull.containerd_endpoint", "",
       "containerd's socket, whose content service shows pull progress; empty: the runtime endpoint.", false,
       [](DaemonOptions* o, const std::string& v) {
         if (!v.empty()) {
           auto p = ParseUnixEndpoint(v);
           if (!p.ok()) return InvalidArgument("pull.containerd-endpoint: " + p.status().message());
         }
         o->pulls.containerd_endpoint = v;
         return Status::Ok();
       }},
      {"pull.containerd-namespace", "pull.containerd_namespace", "k8s.io",
       "containerd namespace of the CRI plugin's images.", false,
       [](DaemonOptions* o, const std::string& v) {
         if (v.empty()) return InvalidArgument("pull.containerd-namespace must not be empty");
         o->pulls.containerd_namespace = v;
         return Status::Ok();
       }},
      {"pull.no-progress-timeout", "pull.no_progress_timeout", "0s",
       "Cancel a pull when no byte arrived for this long (whole seconds): for PullImage, PullImageProgress, "
       "PullImageWithProgress calls that do not set their own, and pulls no client follows any more. 0: never.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         nanoseconds d;
         if (Status s = ParseDuration(v, &d); !s.ok()) return InvalidArgument("pull.no-progress-timeout: " + s.message());
         if (d.count() % 1000000000 != 0) return InvalidArgument("pull.no-progress-timeout: whole seconds only");
         o->pulls.no_progress_timeout = std::chrono::duration_cast<seconds>(d);
         return Status::Ok();
       }},
      {"pull.poll-interval", "pull.poll_interval", "250ms",
       "How often the content store is asked for the progress of all pulls in flight (one poll for all).", false,
       [](DaemonOptions* o, const std::string& v) {
         nanoseconds d;
         if (Status s = ParseDuration(v, &d); !s.ok()) return InvalidArgument("pull.poll-interval: " + s.message());
         if (d < std::chrono::milliseconds(50) || d > seconds(10)) {
           return InvalidArgument("pull.poll-interval must be 50ms..10s");
         }
         o->pulls.poll_interval = std::chrono::duration_cast<std::chrono::milliseconds>(d);
         return Status::Ok();
       }},
      {"pull.keep-abandoned", "pull.keep_abandoned", "true",
       "When the last client of a pull leaves, let the pull finish (the bytes are not wasted) instead of "
       "cancelling it.",
       true,
       [](DaemonOptions* o, const std::string& v) {
         return ParseBool("pull.keep-abandoned", v, &o->pulls.keep_abandoned);
       }},
      {"pull.max-pulls", "pull.max_pulls", "32", "Different images pulled at once; more answer RESOURCE_EXHAUSTED.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("pull.max-pulls", v, &n); !s.ok()) return s;
         if (n == 0 || n > 1024) return InvalidArgument("pull.max-pulls must be 1..1024");
         o->pulls.max_pulls = n;
         return Status::Ok();
       }},
      {"pull.max-clients", "pull.max_clients", "256",
       "Pull calls followed at once (all images); more answer RESOURCE_EXHAUSTED.", false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("pull.max-clients", v, &n); !s.ok()) return s;
         if (n == 0 || n > 65536) return InvalidArgument("pull.max-clients must be 1..65536");
         o->pulls.max_subscribers = n;
         return Status::Ok();
       }},
      {"pull.status-period", "pull.status_period", "5s",
       "How often this node's NodeImagePulls object (pulls in flight and recently finished) is rebuilt, served "
       "on /imagepulls and, with --pull.apiserver, applied: 1s..1m.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         nanoseconds d;
         if (Status s = ParseDuration(v, &d); !s.ok()) return InvalidArgument("pull.status-period: " + s.message());
         if (d < seconds(1) || d > seconds(60) || d.count() % 1000000000 != 0) {
           return InvalidArgument("pull.status-period must be whole seconds in 1s..1m");
         }
         o->pulls.status_period = std::chrono::duration_cast<seconds>(d);
         return Status::Ok();
       }},
      {"pull.node-name", "pull.node_name", "",
       "Name of this node's NodeImagePulls object; empty: $NODE_NAME, else the host name.", false,
       [](DaemonOptions* o, const std::string& v) {
         o->pulls.node_name = v;
         return Status::Ok();
       }},
      {"pull.apiserver", "pull.apiserver", "",
       "Server-side-apply the NodeImagePulls object to the Kubernetes API server (rate limited to one write per "
       "status period, only on change or every minute): \"in-cluster\" (the service account's host, token and "
       "CA) or https://host:port; empty: off.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         if (!v.empty() && v != "in-cluster" && v.rfind("https://", 0) != 0 && v.rfind("http://", 0) != 0) {
           return InvalidArgument("pull.apiserver: expected \"in-cluster\" or https://host:port");
         }
         o->pulls.apiserver = v;
         return Status::Ok();
       }},
      {"pull.apiserver-token-file", "pull.apiserver_token_file", "",
       "Bearer token for --pull.apiserver, read before each write; empty: the service account's.", false,
       [](DaemonOptions* o, const std::string& v) {
         o->pulls.apiserver_token_file = v;
         return Status::Ok();
       }},
      {"pull.apiserver-ca-file", "pull.apiserver_ca_file", "",
       "CA bundle the API server's certificate is checked against; empty: the service account's.", false,
       [](DaemonOptions* o, const std::string& v) {
         o->pulls.apiserver_ca_file = v;
         return Status::Ok();
       }},
      {"otlp.endpoint", "otlp.endpoint", "",
       "Push metrics to this OTLP receiver (http://host:port, https://host:port); empty: no OTLP export. "
       "Environment: OTEL_EXPORTER_OTLP_ENDPOINT (base URL; OTLP/HTTP appends v1/metrics), "
       "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT (used as it is).",
       false,
       [](DaemonOptions* o, const std::string& v) {
         o->otlp.endpoint = v;
         o->otlp.endpoint_is_full_url = false;
         return Status::Ok();
       }},
      {"otlp.protocol", "otlp.protocol", "http/protobuf",
       "OTLP transport: grpc or http/protobuf (OTEL_EXPORTER_OTLP_PROTOCOL).", false,
       [](DaemonOptions* o, const std::string& v) { return otlp::ParseProtocol(v, &o->otlp.protocol); }},
      {"otlp.headers", "otlp.headers", "",
       "Headers (gRPC metadata) of every OTLP request: key=value,... with percent-encoded values "
       "(OTEL_EXPORTER_OTLP_HEADERS).",
       false,
       [](DaemonOptions* o, const std::string& v) {
         o->otlp.headers.clear();
         if (Status s = otlp::ParseKeyValueList(v, &o->otlp.headers); !s.ok()) return InvalidArgument("otlp.headers: " + s.message());
         return Status::Ok();
       }},
      {"otlp.timeout", "otlp.timeout", "10s", "Deadline of one OTLP request (OTEL_EXPORTER_OTLP_TIMEOUT, in ms).",
       false,
       [](DaemonOptions* o, const std::string& v) {
         nanoseconds d;
         if (Status s = ParseDuration(v, &d); !s.ok()) return InvalidArgument("otlp.timeout: " + s.message());
         o->otlp.timeout = std::chrono::duration_cast<std::chrono::milliseconds>(d);
         return Status::Ok();
       }},
      {"otlp.compression", "otlp.compression", "none",
       "gzip or none (OTEL_EXPORTER_OTLP_COMPRESSION).", false,
       [](DaemonOptions* o, const std::string& v) {
         if (v != "gzip" && v != "none") return InvalidArgument("otlp.compression: expected gzip or none");
         o->otlp.gzip = v == "gzip";
         return Status::Ok();
       }},
      {"otlp.interval", "otlp.interval", "60s",
       "Time between two exports, +-10 % jitter (OTEL_METRIC_EXPORT_INTERVAL, in ms).", false,
       [](DaemonOptions* o, const std::string& v) {
         nanoseconds d;
         if (Status s = ParseDuration(v, &d); !s.ok()) return InvalidArgument("otlp.interval: " + s.message());
         if (d < std::chrono::milliseconds(100)) return InvalidArgument("otlp.interval must be at least 100ms");
         o->otlp.interval = std::chrono::duration_cast<std::chrono::milliseconds>(d);
         return Status::Ok();
       }},
      {"otlp.ca-file", "otlp.ca_file", "",
       "CA bundle an https receiver's certificate is checked against; empty: the system's "
       "(OTEL_EXPORTER_OTLP_CERTIFICATE).",
       false,
       [](DaemonOptions* o, const std::string& v) {
         o->otlp.ca_file = v;
         return Status::Ok();
       }},
      {"otlp.insecure", "otlp.insecure", "false",
       "Plain text to an endpoint without a scheme (OTEL_EXPORTER_OTLP_INSECURE).", true,
       [](DaemonOptions* o, const std::string& v) { return ParseBool("otlp.insecure", v, &o->otlp.insecure); }},
      {"otlp.max-request-bytes", "otlp.max_request_bytes", "4194304",
       "An export is split into requests of at most this many serialized bytes (gRPC's default receive cap).", false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("otlp.max-request-bytes", v, &n); !s.ok()) return s;
         if (n < 4096) return InvalidArgument("otlp.max-request-bytes must be at least 4096");
         o->otlp.max_request_bytes = n;
         return Status::Ok();
       }},
      {"otlp.max-queue-bytes", "otlp.max_queue_bytes", "67108864",
       "Batches waiting to be sent at most (serialized bytes); the oldest are dropped and counted in "
       "statlet_otlp_dropped_batches_total.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("otlp.max-queue-bytes", v, &n); !s.ok()) return s;
         o->otlp.max_queue_bytes = n;
         return Status::Ok();
       }},
      {"otlp.resource-attributes", "otlp.resource_attributes", "",
       "Attributes added to every resource: key=value,... (OTEL_RESOURCE_ATTRIBUTES).", false,
       [](DaemonOptions* o, const std::string& v) {
         o->otlp.resource_attributes.clear();
         if (Status s = otlp::ParseKeyValueList(v, &o->otlp.resource_attributes); !s.ok()) {
           return InvalidArgument("otlp.resource-attributes: " + s.message());
         }
         return Status::Ok();
       }},
      {"otlp.service-name", "otlp.service_name", "statlet", "service.name of every resource (OTEL_SERVICE_NAME).",
       false,
       [](DaemonOptions* o, const std::string& v) {
         o->otlp.service_name = v;
         return Status::Ok();
       }},
      {"otlp.node-name", "otlp.node_name", "", "k8s.node.name of every resource; empty: $NODE_NAME.", false,
       [](DaemonOptions* o, const std::string& v) {
         o->otlp.node_name = v;
         return Status::Ok();
       }},
      {"bpf", "bpf.mode", "auto",
       "eBPF probes: auto (load what loads, skip the rest with one log line), on (fail unless all load), off.",
       false,
       [](DaemonOptions* o, const std::string& v) {
         if (!ParseBpfMode(v, &o->bpf.mode)) return InvalidArgument("bpf: expected auto, on or off");
         return Status::Ok();
       }},
      {"bpf.probes", "bpf.probes", "",
       "Probes to load (cpu, runqlat, faults, oom, tcp, cgroup_stats); repeatable or comma-separated. Default: "
       "cpu,oom,tcp,cgroup_stats (runqlat and faults run on every context switch: name them to load them).", false,
       [](DaemonOptions* o, const std::string& v) {
         size_t start = 0;
         while (start <= v.size()) {
           size_t comma = v.find(',', start);
           std::string name = v.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
           const auto& known = BpfProbes::ProbeNames();
           if (std::find(known.begin(), known.end(), name) == known.end()) {
             return InvalidArgument("bpf.probes: unknown probe \"" + name + "\"");
           }
           o->bpf.probes.push_back(name);
           if (comma == std::string::npos) break;
           start = comma + 1;
         }
         return Status::Ok();
       }},
      {"bpf.max-cgroups", "bpf.max_cgroups", "4096",
       "Entries of each per-cgroup eBPF map (kernel memory is preallocated for them).", false,
       [](DaemonOptions* o, const std::string& v) {
         uint64_t n;
         if (Status s = ParseUint("bpf.max-cgroups", v, &n); !s.ok()) return s;
         if (n == 0 || n > (1u << 20)) return InvalidArgument("bpf.max-cgroups must be 1..1048576");
         o->bpf.max_cgroups = static_cast<uint32_t>(n);
         return Status::Ok();
       }},
  };
  return *opts;
}

const Option* FindOption(const std::string& flag) {
  for (const Option& o : Options()) {
    if (flag == o.flag) return &o;
  }
  return nullptr;
}

Status ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return ErrnoStatus(errno, "open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return Status::Ok();
}

}  // namespace

Status ApplyConfigYaml(const std::string& yaml_text, DaemonOptions* out) {
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (root.IsNull()) return Status::Ok();
    if (!root.IsMap())
      return InvalidArgument(
          "config: expected a mapping of sections (web, log, collector, metrics, cri, runtime, pull, otlp, bpf)");
    for (const auto& section : root) {
      std::string sname = section.first.as<std::string>();
      if (!section.second.IsMap()) return InvalidArgument("config: section " + sname + " must be a mapping");
      for (const auto& kv : section.second) {
        std::string key = sname + "." + kv.first.as<std::string>();
        const Option* opt = nullptr;
        for (const Option& o : Options()) {
          if (key == o.yaml) opt = &o;
        }
        if (opt == nullptr) return InvalidArgument("config: unknown key " + key);
        if (kv.second.IsSequence()) {
          for (const auto& item : kv.second) {
            if (Status s = opt->set(out, item.as<std::string>()); !s.ok())
              return InvalidArgument("config: " + s.message());
          }
        } else if (Status s = opt->set(out, kv.second.as<std::string>()); !s.ok()) {
          return InvalidArgument("config: " + s.message());
        }
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("config: ") + e.what());
  }
  return Status::Ok();
}

Status ParseDaemonOptions(const std::vector<std::string>& args, DaemonOptions* out) {
  // Split "--name=value", "--name value", "--bool", "--no-bool" first, so the config file
  // can be applied before the flags that override it.
  std::vector<std::pair<const Option*, std::string>> flags;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out->help = true;
      continue;
    }
    if (a == "--version") {
      out->version = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) return InvalidArgument("unexpected argument \"" + a + "\" (see --help)");
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (name == "config.file") {
      if (!has_value) {
        if (i + 1 >= args.size()) return InvalidArgument("--config.file needs a value");
        value = args[++i];
      }
      out->config_file = value;
      continue;
    }
    const Option* opt = FindOption(name);
    if (opt == nullptr && name.rfind("no-", 0) == 0) {
      opt = FindOption(name.substr(3));
      if (opt == nullptr || !opt->is_bool || has_value) return InvalidArgument("unknown flag --" + name);
      flags.emplace_back(opt, "false");
      continue;
    }
    if (opt == nullptr) return InvalidArgument("unknown flag --" + name + " (see --help)");
    if (!has_value) {
      if (opt->is_bool) {
        value = "true";
      } else {
        if (i + 1 >= args.size()) return InvalidArgument("--" + name + " needs a value");
        value = args[++i];
      }
    }
    flags.emplace_back(opt, value);
  }
  if (out->help || out->version) return Status::Ok();
  // The standard OTEL_* variables sit under the file and the flags.
  if (Status s = otlp::ApplyEnvironment([](const char* name) { return std::getenv(name); }, &out->otlp); !s.ok()) {
    return s;
  }
  if (!out->config_file.empty()) {
    std::string text;
    if (Status s = ReadFile(out->config_file, &text); !s.ok()) return s;
    if (Status s = ApplyConfigYaml(text, out); !s.ok()) return InvalidArgument(out->config_file + ": " + s.message());
  }
  bool subtree_flags = false, probe_flags = false;
  for (const auto& [opt, value] : flags) {
    if (std::string_view(opt->flag) == "bpf.probes" && !probe_flags) {
      out->bpf.probes.clear();  // flags replace the file's list
      probe_flags = true;
    }
    if (std::string_view(opt->flag) == "collector.subtree" && !subtree_flags) {
      out->collector.subtrees.clear();  // flags replace the file's list
      subtree_flags = true;
    }
    if (Status s = opt->set(out, value); !s.ok()) return s;
  }
  if (out->cri.proxy) {
    if (out->cri.listen.empty()) return InvalidArgument("cri.proxy needs a CRI socket (--cri.listen)");
    if (out->cri.runtime_endpoint.empty() || out->cri.runtime_endpoint == "none") {
      return InvalidArgument("cri.proxy needs the runtime's socket (--runtime.endpoint unix:///...)");
    }
  }
  if (!out->web_config_file.empty()) {
    auto web = LoadWebConfig(out->web_config_file);
    if (!web.ok()) return web.status();
    out->http.web = std::move(*web);
  }
  return Status::Ok();
}

std::string DaemonUsage() {
  std::string s =
      "usage: statlet [flags]\n"
      "       statlet stats [flags]\n"
      "       statlet top [flags]\n"
      "       statlet pull [flags] IMAGE\n\n"
      "Measures every container and cgroup on this host. Serves Prometheus /metrics (text format\n"
      "0.0.4 or OpenMetrics 1.0, negotiated by Accept, gzip when the scraper accepts it), /healthz\n"
      "(process up), /readyz (first collection done), and CRI runtime.v1 stats on a unix socket.\n"
      "Collection runs when asked (a scrape, a CRI call); concurrent callers share one collection.\n"
      "`statlet stats --help` describes the one-shot view, `statlet top --help` the live view,\n"
      "`statlet pull --help` image pulls with progress through the CRI socket's image service\n"
      "(docs/image-pulls.md).\n\n"
      "Flags (--name=value or --name value; booleans also as --name / --no-name):\n"
      "  -h, --help\n      Show this help.\n"
      "  --version\n      Print the version.\n"
      "  --config.file=\"\"\n      YAML file with the options below, grouped by section, e.g.\n"
      "      web: {listen_address: \":10340\"}  collector: {max_age: 2s, subtrees: [/kubepods]}\n"
      "      Flags given on the command line win over the file.\n";
  for (const Option& o : Options()) {
    s += "  --";
    s += o.flag;
    if (!o.is_bool) {
      s += "=\"";
      s += o.def;
      s += "\"";
    } else {
      s += " (default ";
      s += o.def;
      s += ")";
    }
    s += "\n      ";
    s += o.help;
    s += "\n      config file key: ";
    s += o.yaml;
    s += "\n";
  }
  s += "\nSignals: SIGTERM or SIGINT stop the daemon gracefully (in-flight scrapes finish).\n";
  return s;
}

}  // namespace statlet
