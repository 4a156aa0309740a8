// `statlet` with no subcommand: the daemon. Collects at scrape time through the Sampler
// (single-flight, max-age reuse) and serves Prometheus /metrics until SIGTERM or SIGINT.
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "base/log.h"
#include "base/memory_trimmer.h"
#include "bpf/bpf_probes.h"
#include "cmd/commands.h"
#include "cmd/daemon_options.h"
#include "cmd/service_notify.h"
#include "collector/collector.h"
#include "collector/sampler.h"
#include "cri/daemon_hooks.h"
#include "cri/deferred_source.h"
#include "exporters/metrics_http_server.h"
#include "exporters/otlp/otlp_exporter.h"
#include "exporters/self_metrics.h"
#include "pulls/image_pulls.h"

#ifndef STATLET_VERSION_STRING
#define STATLET_VERSION_STRING "unknown"
#endif
#ifndef STATLET_REVISION_STRING
#define STATLET_REVISION_STRING "unknown"
#endif

namespace statlet {

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
    std::printf("statlet %s (revision %s)\n", STATLET_VERSION_STRING, STATLET_REVISION_STRING);
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

  // The runtime's metadata joins the snapshots; absent or down, stats are still served.
  std::unique_ptr<RuntimeClient> runtime = cri::StartRuntimeClient(opts.cri);
  // Image pulls (the CRI socket's ImageService, over the runtime's own pull).
  std::unique_ptr<pulls::ImagePulls> pulls;
  if (!opts.cri.listen.empty() && opts.pulls.enabled && opts.cri.runtime_endpoint != "none") {
    opts.pulls.pulls_only = opts.cri.proxy;
    auto started = pulls::ImagePulls::Start(opts.pulls, opts.cri.runtime_endpoint);
    if (!started.ok()) {
      log::Error("cannot start image pulls: " + started.status().ToString());
      return 1;
    }
    pulls = std::move(*started);
  }
  SelfMetrics self_metrics(STATLET_VERSION_STRING, STATLET_REVISION_STRING);
  // Proxy mode: the CRI socket is the kubelet's runtime, so it serves first (before the
  // eBPF programs load and the collector's first walk): passed calls need neither, and a
  // stats call that comes meanwhile waits for the Sampler.
  cri::DeferredSource deferred_source;
  StatusOr<std::unique_ptr<cri::CriServer>> cri_server = std::unique_ptr<cri::CriServer>();
  if (opts.cri.proxy) {
    cri_server = cri::StartCriServer(&deferred_source, opts.cri, opts.metrics, &self_metrics,
                                     pulls ? pulls->service() : nullptr, runtime.get());
    if (!cri_server.ok()) {
      log::Error("cannot start the CRI proxy: " + cri_server.status().ToString());
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
  auto probes = BpfProbes::Create(opts.bpf);
  if (!probes.ok()) {
    log::Error("eBPF probes (--bpf=on): " + probes.status().ToString());
    return 1;
  }
  opts.collector.file_source = (*probes)->FileSource();
  auto collector = Collector::Create(opts.collector);
  if (!collector.ok()) {
    log::Error("cannot start the collector: " + collector.status().ToString());
    return 1;
  }
  Sampler sampler(std::move(*collector), runtime.get(), probes->get());
  StopCriFirst stop_cri_first{&cri_server};
  // Freed memory goes back to the kernel within a period of a burst (large answers,
  // clients flooding the sockets), so the resident set follows what is in use; between
  // calls the daemon holds no snapshot that nobody can reuse (~2 KB a cgroup).
  MemoryTrimmer trimmer(std::chrono::milliseconds(250), 4 << 20);
  trimmer.SetRelease([&sampler] { return sampler.ReleaseStale(); });
  trimmer.Start();
  sampler.SetCollectionObserver([&self_metrics](const Snapshot& s) { self_metrics.ObserveCollection(s); });
  {
    MemoryQosPolicy qos = opts.memory_qos;
    if (long page = sysconf(_SC_PAGESIZE); page > 0) qos.page_size = static_cast<uint64_t>(page);
    sampler.SetMemoryQos(qos, opts.memory_high_stall);
  }
  deferred_source.Bind(&sampler);
  auto server = MetricsHttpServer::Create(opts.http, opts.metrics, &sampler, &self_metrics);
  if (!server.ok()) {
    log::Error("cannot configure the HTTP server: " + server.status().ToString());
    return 1;
  }
  // Image pulls: their per-node view on /imagepulls and their families on /metrics.
  if (pulls) {
    (*server)->AddFamilies(pulls->metrics());
    pulls::ImagePulls* p = pulls.get();
    (*server)->AddRoute("/imagepulls", [p] {
      return MetricsHttpServer::RouteBody{200, "application/json", *p->NodeObject()};
    });
  }
  if (Status s = (*server)->Start(); !s.ok()) {
    log::Error(s.ToString());
    return 1;
  }
  // A first collection opens the kept fds and makes /readyz answer 200.
  if (auto first = sampler.Get(std::chrono::nanoseconds(0)); first.ok()) {
    (*server)->SetReady(true);
    log::Info("first collection: " + std::to_string((*first)->cgroups.size()) + " cgroups");
  } else {
    log::Warn("first collection failed: " + first.status().ToString());
  }

  // CRI runtime.v1 stats on a unix socket, from the same Sampler.
  if (!opts.cri.proxy) {
    cri_server = cri::StartCriServer(&sampler, opts.cri, opts.metrics, &self_metrics,
                                     pulls ? pulls->service() : nullptr, runtime.get());
    if (!cri_server.ok()) {
      log::Error("cannot start the CRI stats service: " + cri_server.status().ToString());
      (*server)->Stop();
      return 1;
    }
    NotifyServiceManager("READY=1");
  }

  // OTLP push, on its own thread, from the same Sampler.
  std::unique_ptr<otlp::OtlpExporter> otlp_exporter;
  if (!opts.otlp.endpoint.empty()) {
    auto created = otlp::OtlpExporter::Create(opts.otlp, opts.metrics, &sampler, &self_metrics);
    if (!created.ok()) {
      log::Error("cannot start the OTLP exporter: " + created.status().ToString());
      if (*cri_server) (*cri_server)->Stop(std::chrono::milliseconds(1000));
      (*server)->Stop();
      return 1;
    }
    otlp_exporter = std::move(*created);
    otlp_exporter->Start();
    log::Info("otlp: exporting to " + opts.otlp.endpoint);
  }

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
  (*server)->Stop();
  log::Info("stopped");
  return 0;
}

}  // namespace statlet
