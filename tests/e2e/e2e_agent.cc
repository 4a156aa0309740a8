// statlet_e2e_agent: the statlet daemon as the e2e stage runs it, with the CRI stats
// server and the runtime metadata client wired in beside /metrics:
//
//   statlet_e2e_agent --cri.listen=PATH --runtime.endpoint=unix:///…/containerd.sock
//                     [--runtime.refresh-period=200ms] [--runtime.stats-period=10s]
//                     [--cri.max-age=0s] [daemon flags…]
//
// Every other flag is the daemon's own (ParseDaemonOptions). Prints one line
// "ready port=<http port> cri=<socket>" on stdout once both servers answer and the first
// collection is done, then serves until SIGTERM/SIGINT.
#include <pthread.h>
#include <signal.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "base/log.h"
#include "collector/collector.h"
#include "collector/sampler.h"
#include "cri/cri_server.h"
#include "cri/runtime_client.h"
#include "exporters/daemon_options.h"
#include "exporters/metrics_http_server.h"

namespace {

// Takes "--name=value" or "--name value" out of args; false when absent.
bool TakeFlag(std::vector<std::string>* args, const std::string& name, std::string* value) {
  const std::string flag = "--" + name;
  for (size_t i = 0; i < args->size(); ++i) {
    const std::string& a = (*args)[i];
    if (a.rfind(flag + "=", 0) == 0) {
      *value = a.substr(flag.size() + 1);
      args->erase(args->begin() + i);
      return true;
    }
    if (a == flag && i + 1 < args->size()) {
      *value = (*args)[i + 1];
      args->erase(args->begin() + i, args->begin() + i + 2);
      return true;
    }
  }
  return false;
}

int Fail(const std::string& what) {
  std::fprintf(stderr, "statlet_e2e_agent: %s\n", what.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace statlet;
  std::vector<std::string> args(argv + 1, argv + argc);
  cri::CriServerOptions cri_options;
  cri::RuntimeClientOptions runtime_options;
  std::string value;
  if (!TakeFlag(&args, "cri.listen", &cri_options.listen_path)) return Fail("--cri.listen is required");
  if (!TakeFlag(&args, "runtime.endpoint", &runtime_options.endpoint)) return Fail("--runtime.endpoint is required");
  runtime_options.candidates.clear();  // never fall back to a system-wide runtime
  std::chrono::nanoseconds d;
  if (TakeFlag(&args, "runtime.refresh-period", &value)) {
    if (Status s = ParseDuration(value, &d); !s.ok()) return Fail(s.ToString());
    runtime_options.refresh_period = std::chrono::duration_cast<std::chrono::milliseconds>(d);
  }
  if (TakeFlag(&args, "runtime.stats-period", &value)) {
    if (Status s = ParseDuration(value, &d); !s.ok()) return Fail(s.ToString());
    runtime_options.stats_period = std::chrono::duration_cast<std::chrono::milliseconds>(d);
  }
  if (TakeFlag(&args, "cri.max-age", &value)) {
    if (Status s = ParseDuration(value, &d); !s.ok()) return Fail(s.ToString());
    cri_options.service.max_age = d;
  }
  DaemonOptions opts;
  if (Status s = ParseDaemonOptions(args, &opts); !s.ok()) return Fail(s.ToString());
  log::SetLevel(opts.log_level);
  log::SetFormat(opts.log_format);

  sigset_t stop_signals;
  sigemptyset(&stop_signals);
  sigaddset(&stop_signals, SIGTERM);
  sigaddset(&stop_signals, SIGINT);
  pthread_sigmask(SIG_BLOCK, &stop_signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  auto collector = Collector::Create(opts.collector);
  if (!collector.ok()) return Fail("collector: " + collector.status().ToString());
  cri::RuntimeClient runtime(runtime_options);
  // One synchronous round first, so that pods already running are named from the start.
  if (Status s = runtime.Refresh(); !s.ok()) return Fail("runtime: " + s.ToString());
  runtime.Start();
  Sampler sampler(std::move(*collector), &runtime, nullptr);
  if (auto first = sampler.Get(std::chrono::nanoseconds(0)); !first.ok()) {
    return Fail("first collection: " + first.status().ToString());
  }
  auto http = MetricsHttpServer::Create(opts.http, opts.encoder, &sampler);
  if (!http.ok()) return Fail(http.status().ToString());
  if (Status s = (*http)->Start(); !s.ok()) return Fail(s.ToString());
  (*http)->SetReady(true);
  auto cri_server = cri::CriServer::Start(&sampler, cri_options);
  if (!cri_server.ok()) return Fail(cri_server.status().ToString());

  std::printf("ready port=%d cri=%s\n", (*http)->port(), (*cri_server)->path().c_str());
  std::fflush(stdout);

  int sig = 0;
  sigwait(&stop_signals, &sig);
  (*cri_server)->Stop();
  (*http)->Stop();
  runtime.Stop();
  return 0;
}
