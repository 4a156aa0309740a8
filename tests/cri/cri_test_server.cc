// Serves statlet's CRI service for the upstream-client tests, in its own process (the
// upstream proto and statlet's share package runtime.v1, so they cannot live in
// one binary). Sources: --fixture (FixtureSnapshot, tests/support/snapshot_builder.h) or --live SUBTREE (a real
// Collector + Sampler over that cgroup subtree). Prints "ready" once listening; exits on
// SIGTERM or when stdin closes.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstring>
#include <iostream>
#include <string>
#include <thread>

#include "collector/collector.h"
#include "collector/sampler.h"
#include "cri/cri_server.h"
#include "tests/support/fixed_snapshot_source.h"
#include "tests/support/snapshot_builder.h"

namespace {

int Usage() {
  std::cerr << "usage: cri_test_server --socket PATH (--fixture | --live SUBTREE) [--chunk N] [--max-age-ms N]\n";
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string socket, live;
  bool fixture = false;
  statlet::cri::CriServerOptions opts;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--socket") socket = next();
    else if (a == "--fixture") fixture = true;
    else if (a == "--live") live = next();
    else if (a == "--chunk") opts.service.stream_chunk = std::stoul(next());
    else if (a == "--max-age-ms") opts.service.max_age = std::chrono::milliseconds(std::stol(next()));
    else return Usage();
  }
  if (socket.empty() || fixture == !live.empty()) return Usage();
  opts.listen_path = socket;

  std::unique_ptr<statlet::SnapshotSource> source;
  if (fixture) {
    source = std::make_unique<statlet::testing::FixedSnapshotSource>(statlet::testing::FixtureSnapshot());
  } else {
    statlet::CollectorOptions co;
    co.subtrees = {live};
    auto collector = statlet::Collector::Create(co);
    if (!collector.ok()) {
      std::cerr << "collector: " << collector.status().ToString() << "\n";
      return 1;
    }
    source = std::make_unique<statlet::Sampler>(std::move(collector).value(), nullptr, nullptr);
  }
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  pthread_sigmask(SIG_BLOCK, &set, nullptr);  // before gRPC starts its threads

  auto server = statlet::cri::CriServer::Start(source.get(), opts);
  if (!server.ok()) {
    std::cerr << "start: " << server.status().ToString() << "\n";
    return 1;
  }
  std::cout << "ready" << std::endl;
  std::atomic<bool> done{false};
  std::thread stdin_watch([&] {
    char c;
    while (read(0, &c, 1) > 0) {
    }
    done = true;
    kill(getpid(), SIGTERM);
  });
  stdin_watch.detach();
  int sig = 0;
  sigwait(&set, &sig);
  (*server)->Stop();
  return 0;
}
