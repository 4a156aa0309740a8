// `statlet` with no subcommand: the daemon. Collects at scrape time through the Sampler
// (single-flight, max-age reuse) and serves Prometheus /metrics until SIGTERM or SIGINT.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/memory_trimmer.h"
#include "base/node_name.h"
#include "base/unix_socket.h"
#include "bpf/bpf_probes.h"
#include "cmd/build_info.h"
#include "cmd/commands.h"
#include "cmd/daemon_options.h"
#include "cmd/service_notify.h"
#include "cmd/startup_summary.h"
#include "collector/collector.h"
#include "collector/exit_records.h"
#include "collector/exit_watcher.h"
#include "collector/machine_source.h"
#include "collector/sampler.h"
#include "cri/daemon_hooks.h"
#include "cri/deferred_source.h"
#include "exporters/kubernetes_authorizer.h"
#include "exporters/metrics_http_server.h"
#include "exporters/otlp/otlp_exporter.h"
#include "exporters/self_metrics.h"
#include "kube/kubelet_settings.h"
#include "kube/pod_watch.h"
#include "metrics/container_oom_kills.h"
#include "metrics/exit_families.h"
#include "metrics/metric_selection.h"
#include "pulls/image_pulls.h"
#include "pulls/image_service.h"
#include "pulls/progress_urls.h"
#include "pulls/pull_progress_service.h"
#include "runtime/runtime_client.h"

namespace statlet {
namespace {

// The API server's reviews for --web.auth=kubernetes, for this node.
StatusOr<std::shared_ptr<HttpAuthorizer>> StartKubernetesAuth(DaemonOptions& opts) {
  auto node = ResolveNodeName(opts.kube_auth.node_name);
  if (!node.ok()) return InvalidArgument("web.auth.node-name: " + node.status().message());
  opts.kube_auth.node_name = *node;
  auto authorizer = KubernetesAuthorizer::Create(opts.kube_auth);
  if (!authorizer.ok()) return authorizer.status();
  log::Info("web auth: bearer tokens reviewed by the API server (" + opts.kube_auth.api.url +
            "), requests authorized for nodes/" + *node + " as the kubelet's");
  if (!opts.http.web.tls()) {
    log::Warn(
        "web auth: bearer tokens arrive in plain HTTP; serve TLS (tls_server_config in --web.config.file) "
        "unless a TLS proxy fronts statlet");
  }
  return std::shared_ptr<HttpAuthorizer>(std::move(*authorizer));
}

// The CRI socket can be served: checked before anything is loaded or collected, so a second
// instance stops at once and says which flag to change.
Status CheckCriListen(const std::string& listen) {
  if (listen.empty()) return Status::Ok();
  auto path = ParseUnixEndpoint(listen);
  if (!path.ok()) return InvalidArgument("--cri.listen=" + listen + ": " + path.status().message());
  if (SocketIsLive(*path)) {
    return Unavailable("cannot serve the CRI socket " + *path + ": another process (another statlet?) accepts " +
                       "connections on it; stop it, or give this one another path with --cri.listen");
  }
  struct stat st;
  if (lstat(path->c_str(), &st) == 0 && !S_ISSOCK(st.st_mode)) {
    return InvalidArgument("cannot serve the CRI socket " + *path + ": it exists and is not a socket; remove it, " +
                           "or choose another path with --cri.listen");
  }
  return Status::Ok();
}

// Why image pulls are off, in the flags that turned them off; "" when they are on.
std::string PullsOffReason(const DaemonOptions& o) {
  if (o.cri.listen.empty()) return "--cri.listen=\"\": no CRI socket";
  if (!o.pulls.enabled) return "--pull.enabled=false";
  if (o.cri.runtime_endpoint == "none") return "--runtime.endpoint=none";
  return "";
}

std::string DescribeRuntime(const cri::CriDaemonOptions& o, const RuntimeClient* runtime) {
  if (runtime == nullptr) return "none (--runtime.endpoint=none)";
  RuntimeClientStatus st = runtime->status();
  const std::string asked = o.runtime_endpoint.empty() ? std::string("auto-detected") : o.runtime_endpoint;
  switch (st.state) {
    case RuntimeState::kUp: return st.runtime_name + " " + st.runtime_version + " at " + st.endpoint;
    case RuntimeState::kAbsent: return asked + ": none found yet, still looking (ids from cgroup paths meanwhile)";
    case RuntimeState::kDown: return st.endpoint + " unavailable (" + st.last_error + "), reconnecting";
    default: return asked + " (connecting)";
  }
}

}  // namespace

int RunDaemonCommand(int argc, char** argv) {
  // Scrape bodies are megabytes, built on whichever HTTP thread asks: with glibc's defaults
  // every thread grows an arena of its own and freed bodies stay resident. Two arenas and
  // a fixed mmap threshold (large buffers go back to the kernel when freed) keep the RSS
  // near what is live.
  mallopt(M_ARENA_MAX, 2);
  mallopt(M_MMAP_THRESHOLD, 512 * 1024);
  DaemonOptions opts;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (Status s = ParseDaemonOptions(args, &opts); !s.ok()) {
    std::fprintf(stderr, "statlet: %s\n", s.message().c_str());
    return 2;
  }
  if (opts.help) {
    std::fputs(DaemonUsage().c_str(), stdout);
    return 0;
  }
  if (opts.version) {
    std::printf("statlet %s (revision %s)\n", StatletVersion(), StatletRevision());
    return 0;
  }
  log::SetLevel(opts.log_level);
  log::SetFormat(opts.log_format);

  // Block the stop signals before any thread starts, so that every thread inherits the mask
  // and only sigwait() below receives them.
  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);  // a scraper hanging up must not kill the daemon

  if (Status s = CheckCriListen(opts.cri.listen); !s.ok()) {
    log::Error(s.message());
    return 1;
  }

  // The runtime's metadata joins the snapshots; absent or down, stats are still served.
  std::unique_ptr<RuntimeClient> runtime = cri::StartRuntimeClient(opts.cri);
  // Image pulls (the CRI socket's ImageService, over the runtime's own pull), their
  // per-node view on /imagepulls and their families on /metrics (and in OTLP, below).
  std::unique_ptr<pulls::ImagePulls> pulls;
  if (!opts.cri.listen.empty() && opts.pulls.enabled && opts.cri.runtime_endpoint != "none") {
    opts.pulls.pulls_only = opts.cri.proxy;
    auto started = pulls::ImagePulls::Start(opts.pulls, opts.cri.runtime_endpoint, runtime.get());
    if (!started.ok()) {
      log::Error("cannot start image pulls: " + started.status().message());
      return 1;
    }
    pulls = std::move(*started);
  }
  SelfMetrics self_metrics(StatletVersion(), StatletRevision());
  // Proxy mode: the CRI socket is the kubelet's runtime, so it serves first (before the
  // eBPF programs load and the collector's first walk): passed calls need neither, and a
  // stats call that comes meanwhile waits for the Sampler.
  cri::DeferredSource deferred_source;
  StatusOr<std::unique_ptr<cri::CriServer>> cri_server = std::unique_ptr<cri::CriServer>();
  if (opts.cri.proxy) {
    // What statlet answers itself besides the stats calls: its pulls and their progress.
    std::vector<std::string> local_methods;
    if (pulls) {
      local_methods = pulls::PullsOnlyMethods();
      if (pulls->progress_service() != nullptr) local_methods.push_back(pulls::kImagePullProgressMethod);
    }
    cri_server =
        cri::StartCriServer(&deferred_source, opts.cri, opts.metrics, &self_metrics, pulls ? pulls->service() : nullptr,
                            runtime.get(), pulls ? pulls->progress_service() : nullptr, local_methods);
    if (!cri_server.ok()) {
      log::Error("cannot start the CRI proxy: " + cri_server.status().message());
      return 1;
    }
    NotifyServiceManager("READY=1");
  }
  // Whatever ends the daemon, the CRI server stops before the Sampler it reads goes.
  struct StopCriFirst {
    StatusOr<std::unique_ptr<cri::CriServer>>* server;
    ~StopCriFirst() {
      if (server->ok() && **server) (**server)->Stop(std::chrono::milliseconds(0));
    }
  };

  // Optional eBPF probes: in auto mode a probe that cannot load is skipped with a log line
  // and reported down by statlet_bpf_probe_up; with --bpf=off every probe reports down.
  // Loaded before the collector, which takes part of its files from the cgroup_stats probe.
  // The net probe counts the pods' sockets: under the subtrees the collector reports.
  opts.bpf.net_subtrees = opts.collector.subtrees;
  opts.collector.host_network_interfaces = opts.metrics.host_network_interfaces;
  auto probes = BpfProbes::Create(opts.bpf);
  if (!probes.ok()) {
    log::Error("eBPF probes (--bpf=on): " + probes.status().message() + "; use --bpf=auto to run without them");
    return 1;
  }
  opts.collector.file_source = (*probes)->FileSource();
  auto collector = Collector::Create(opts.collector);
  if (!collector.ok()) {
    log::Error("cannot start the collector: " + collector.status().message());
    return 1;
  }
  const std::string cgroup_mode = (*collector)->CgroupMode();
  // The machine's facts, read now and on a slow refresh (collector/machine_source.h); not
  // read at all when no machine family is served, the topology only for cpu_topology.
  std::unique_ptr<MachineSource> machine;
  if (const metrics::ReadNeeds needs = metrics::ReadNeedsOf(opts.metrics.selection); needs.machine) {
    MachineReadOptions mo;
    mo.topology = needs.machine_topology;
    machine = std::make_unique<MachineSource>(std::move(mo));
    if (!machine->Current()->error.empty()) log::Warn("machine facts: " + machine->Current()->error);
  }
  // Exit records: the watcher stops (its destructor) before the records it fills go, and
  // both outlive the Sampler and the edges that read them.
  ExitRecords exit_records({.retention_ns = opts.exits.retention.count(),
                            .max_records = opts.exits.max_records,
                            .max_bytes = opts.exits.max_bytes});
  metrics::ExitFamilies exit_families(&exit_records);
  std::unique_ptr<ExitWatcher> exit_watcher;
  if (opts.exits.retention.count() > 0) {
    ExitWatcherOptions wo;
    wo.cgroup_mount = opts.collector.cgroup_mount;
    wo.proc_root = opts.collector.proc_root;
    wo.subtrees = opts.collector.subtrees;
    wo.hugepages_dir = opts.collector.hugepages_dir;
    wo.realtime = opts.exits.realtime;
    auto started = ExitWatcher::Start(wo, &exit_records);
    if (started.ok()) {
      exit_watcher = std::move(*started);
    } else {
      log::Warn("exit records off: " + started.status().message());
    }
  }
  // OOM kills per container name across restarts, fed by every collection (declared before
  // the Sampler: it outlives every collection); names come from the runtime, so a node
  // without one serves no such family, and a selection without the family costs nothing.
  const bool oom_kills_named =
      runtime != nullptr && opts.metrics.selection.ServesExtra(metrics::kContainerOomKillsFamily);
  metrics::ContainerOomKills oom_kills_by_name({.served = oom_kills_named});
  Sampler sampler(std::move(*collector), runtime.get(), probes->get());
  sampler.SetMachine(machine.get());
  StopCriFirst stop_cri_first{&cri_server};
  // Freed memory goes back to the kernel within a period of a burst (large answers,
  // clients flooding the sockets), so the resident set follows what is in use; between
  // calls the daemon holds no snapshot that nobody can reuse (~2 KB a cgroup).
  MemoryTrimmer trimmer(std::chrono::milliseconds(250), 4 << 20);
  trimmer.SetRelease([&sampler] { return sampler.ReleaseStale(); });
  trimmer.Start();
  if (exit_watcher) sampler.SetExitRecords(&exit_records);
  sampler.SetCollectionObserver(
      [&self_metrics, &oom_kills_by_name, oom_kills_named, watcher = exit_watcher.get()](const Snapshot& s) {
        self_metrics.ObserveCollection(s);
        if (oom_kills_named) oom_kills_by_name.Observe(s);
        if (watcher != nullptr) {
          const ExitWatcherStats w = watcher->stats();
          self_metrics.SetExitWatcher(w.realtime, w.nice, w.missed);
        }
      });
  // Memory QoS: the kubelet's settings and version, and this node's pods from the API server.
  std::unique_ptr<kube::PodWatch> pod_watch;
  if (!opts.memory_qos_api.url.empty()) {
    auto node = ResolveNodeName(opts.memory_qos_api.node_name, true);
    if (!node.ok()) {
      log::Error("--memory-qos.apiserver: " + node.status().ToString());
      return 1;
    }
    kube::PodWatchOptions po;
    po.api.url = opts.memory_qos_api.url;
    po.api.token_file = opts.memory_qos_api.token_file;
    po.api.ca_file = opts.memory_qos_api.ca_file;
    po.node_name = *node;
    auto created = kube::PodWatch::Create(std::move(po));
    if (!created.ok()) {
      log::Error("--memory-qos.apiserver: " + created.status().ToString());
      return 1;
    }
    pod_watch = std::move(*created);
    pod_watch->Start();
    log::Info("memory qos: pods of node " + *node + " from " + pod_watch->State().name);
  }
  const long page = sysconf(_SC_PAGESIZE);
  kube::KubeletSettings kubelet_settings(opts.memory_qos, page > 0 ? static_cast<uint64_t>(page) : 4096);
  {
    Sampler::MemoryQosSources qos;
    qos.settings = &kubelet_settings;
    qos.pods = pod_watch.get();
    if (struct utsname u; uname(&u) == 0) qos.kernel_release = u.release;
    // As the v1.36 kubelet warns: before 5.9 a task can hang at memory.high.
    if (KernelOlderThan(qos.kernel_release, 5, 9)) {
      log::Warn("memory qos: kernel " + qos.kernel_release +
                " is older than 5.9, where a task throttled at memory.high can hang "
                "(statlet_node_memory_qos_livelock_risk is 1 while some pod has a memory.high)");
    }
    sampler.SetMemoryQos(std::move(qos), opts.memory_high_stall);
  }
  if (opts.web_auth_kubernetes) {
    auto authorizer = StartKubernetesAuth(opts);
    if (!authorizer.ok()) {
      log::Error("--web.auth=kubernetes: " + authorizer.status().ToString());
      return 1;
    }
    opts.http.authorizer = std::move(*authorizer);
  }
  deferred_source.Bind(&sampler);
  auto server = MetricsHttpServer::Create(opts.http, opts.metrics, &sampler, &self_metrics);
  if (!server.ok()) {
    log::Error("cannot configure the HTTP server: " + server.status().message());
    return 1;
  }
  if (exit_watcher) (*server)->AddFamilies(&exit_families);
  if (oom_kills_named) (*server)->AddFamilies(&oom_kills_by_name);
  // Image pulls: their per-node view on /imagepulls and their families on /metrics.
  if (pulls) {
    (*server)->AddFamilies(pulls->metrics());
    pulls::ImagePulls* p = pulls.get();
    (*server)->AddRoute("/imagepulls", [p] {
      return MetricsHttpServer::RouteBody{200, "application/json", *p->NodeObject()};
    });
    // KEP-5334: the URLs ImagePullProgress answers open their streams here.
    pulls::ProgressUrls* urls = p->progress_urls();
    (*server)->AddStreamRoute(pulls::kProgressPathPrefix, [urls](const std::string& token) {
      pulls::ProgressUrls::Opened o = urls->Open(token);
      return MetricsHttpServer::StreamAnswer{o.status, o.stream ? "application/x-ndjson" : "text/plain",
                                             std::move(o.text), std::move(o.stream)};
    });
  } else {
    // Not a bare 404: the route exists, this configuration turned it off.
    const std::string body = "image pulls are off on this statlet (" + PullsOffReason(opts) +
                             "); /imagepulls lists the pulls made through its CRI socket (docs/image-pulls.md)\n";
    (*server)->AddRoute("/imagepulls", [body] { return MetricsHttpServer::RouteBody{404, "text/plain", body}; });
  }
  if (Status s = (*server)->Start(); !s.ok()) {
    log::Error(s.message());
    return 1;
  }
  if (pulls) pulls->progress_urls()->SetBase((*server)->BaseUrl());
  // A first collection opens the kept fds and makes /readyz answer 200.
  size_t first_cgroups = 0;
  if (auto first = sampler.Get(std::chrono::nanoseconds(0)); first.ok()) {
    (*server)->SetReady(true);
    first_cgroups = (*first)->cgroups.size();
  } else {
    log::Warn("first collection failed: " + first.status().message() + "; /readyz answers 503 until one succeeds");
  }

  // CRI runtime.v1 stats on a unix socket, from the same Sampler.
  if (!opts.cri.proxy) {
    cri_server =
        cri::StartCriServer(&sampler, opts.cri, opts.metrics, &self_metrics, pulls ? pulls->service() : nullptr,
                            runtime.get(), pulls ? pulls->progress_service() : nullptr);
    if (!cri_server.ok()) {
      log::Error("cannot start the CRI stats service: " + cri_server.status().message());
      (*server)->Stop();
      return 1;
    }
    NotifyServiceManager("READY=1");
  }

  // OTLP push, on its own thread, from the same Sampler; the pull families on the node's
  // resource.
  std::unique_ptr<otlp::OtlpExporter> otlp_exporter;
  if (!opts.otlp.endpoint.empty()) {
    auto created = otlp::OtlpExporter::Create(opts.otlp, opts.metrics, &sampler, &self_metrics);
    if (!created.ok()) {
      log::Error("cannot start the OTLP exporter: " + created.status().message());
      if (*cri_server) (*cri_server)->Stop(std::chrono::milliseconds(1000));
      (*server)->Stop();
      return 1;
    }
    otlp_exporter = std::move(*created);
    if (pulls) otlp_exporter->AddFamilies(pulls->metrics());
    if (exit_watcher) otlp_exporter->AddFamilies(&exit_families);
    if (oom_kills_named) otlp_exporter->AddFamilies(&oom_kills_by_name);
    otlp_exporter->Start();
  }

  StartupFacts facts;
  facts.version = StatletVersion();
  facts.revision = StatletRevision();
  facts.cgroup_mode = cgroup_mode;
  facts.cgroup_mount = opts.collector.cgroup_mount;
  facts.cgroups = first_cgroups;
  facts.runtime = DescribeRuntime(opts.cri, runtime.get());
  facts.bpf_mode = opts.bpf.mode;
  facts.probes = (*probes)->ProbeStatus();
  facts.http = (*server)->MetricsUrl();
  facts.health = (*server)->HealthUrl();
  if (*cri_server) facts.cri = "unix://" + (*cri_server)->path();
  facts.pulls = pulls ? "on" : "off (" + PullsOffReason(opts) + ")";
  facts.otlp = opts.otlp.endpoint;
  log::Info(StartupSummary(facts));

  int sig = 0;
  sigwait(&stop_signals, &sig);
  log::Info(std::string("received ") + (sig == SIGTERM ? "SIGTERM" : "SIGINT") + ", shutting down");
  NotifyServiceManager("STOPPING=1");
  if (otlp_exporter) otlp_exporter->Stop();  // aborts a request in flight
  if (pulls) pulls->Stop();                  // pull calls end before the server waits for its calls
  // Within Kubernetes' grace period whatever the clients do: calls still running after a
  // second are cancelled, HTTP answers in flight get a second too, a runtime call in
  // flight is cancelled.
  if (*cri_server) (*cri_server)->Stop(std::chrono::milliseconds(1000));
  if (runtime) runtime->Stop();
  if (pod_watch) pod_watch->Stop();
  (*server)->Stop();
  log::Info("stopped");
  return 0;
}

}  // namespace statlet
