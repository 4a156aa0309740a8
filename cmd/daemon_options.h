// Options of the statlet daemon: Prometheus-exporter style flags (--web.listen-address …)
// layered over an optional YAML file (--config.file) over defaults. Flags win over the file.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "base/duration.h"
#include "base/log.h"
#include "base/status.h"
#include "bpf/bpf_probes.h"
#include "collector/collector.h"
#include "collector/exit_records.h"
#include "collector/exit_watcher.h"
#include "collector/memory_high_stall.h"
#include "cri/cri_daemon_options.h"
#include "exporters/kubernetes_authorizer.h"
#include "exporters/metrics_http_server.h"
#include "exporters/otlp/otlp_options.h"
#include "kube/kubelet_settings.h"
#include "metrics/snapshot_samples.h"
#include "pulls/image_pulls.h"

namespace statlet {

struct DaemonOptions {
  HttpServerOptions http;
  // The value rules of every edge (/metrics, CRI metrics, OTLP).
  metrics::SampleRules metrics;
  // --metrics.enable / --metrics.disable / --metrics.drop-labels as given; parsing makes
  // metrics.selection of them and leaves the files nothing served needs out of collector.
  struct MetricsSelectFlags {
    std::vector<std::string> enable, disable, drop_labels;
  } metrics_select;
  // The daemon scans container processes for fds and sockets by default, as cAdvisor does.
  CollectorOptions collector = [] {
    CollectorOptions c;
    c.process_fds = true;
    return c;
  }();
  // Exit records (collector/exit_watcher.h): retention 0 turns them off.
  struct Exits {
    std::chrono::nanoseconds retention = std::chrono::minutes(2);
    size_t max_records = ExitRecordOptions().max_records;
    size_t max_bytes = ExitRecordOptions().max_bytes;
    bool realtime = ExitWatcherOptions().realtime;
  } exits;
  // Memory QoS view: the kubelet's settings (kube/kubelet_settings.h), this node's pods from
  // the API server (kube/pod_watch.h; url empty: off), the memory.high stall detector.
  kube::MemoryQosFlags memory_qos;
  struct MemoryQosApiServer {
    std::string url;  // "in-cluster", https://host:port; "" off
    std::string token_file, ca_file, node_name;
  } memory_qos_api;
  MemoryHighStallOptions memory_high_stall;
  cri::CriDaemonOptions cri;
  pulls::ImagePullOptions pulls;
  otlp::OtlpOptions otlp;
  BpfOptions bpf;
  std::string web_config_file;
  // --web.auth=kubernetes: requests to the main address are reviewed by the API server
  // (node_name empty: resolved at start).
  bool web_auth_kubernetes = false;
  KubernetesAuthOptions kube_auth;
  std::string config_file;
  log::Level log_level = log::Level::kInfo;
  log::Format log_format = log::Format::kLogfmt;
  bool help = false;
  bool version = false;
};

// Parses flags (args excludes the program name). Loads --config.file and --web.config.file.
Status ParseDaemonOptions(const std::vector<std::string>& args, DaemonOptions* out);
// Applies a YAML config document (the --config.file format) onto *out.
Status ApplyConfigYaml(const std::string& yaml_text, DaemonOptions* out);

// The --help text: every option, its default and what it does.
std::string DaemonUsage();

}  // namespace statlet
