// Image pulls through statlet against a real containerd, registry and rate-limiting proxy
// (tests/pull's stage), measuring what the image-pull issue's closing note asks:
//   1. time to the first progress report (and to the first one with the image's total);
//   2. the cost of progress reporting on pull time: the same image pulled by containerd's
//      own PullImage (the floor) and by statlet's PullImageWithProgress (detailed reports,
//      every second, the content store polled every 250 ms), alternating in rounds, on the
//      rate-limited link and on an unthrottled one (where containerd's CPU, not the link,
//      sets the pace), with the CPU time containerd and statlet spent per pull;
//   3. bytes the registry sends for three clients: joined through statlet, three separate
//      pulls one after another, and three PullImage calls straight to containerd at the
//      same staggered moments (containerd 1.6 shares blob downloads itself).
// Reports medians with min and max; ratios against the floor.
//
//   bench_pull [--rounds N] [--mib M]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "tests/pull/pull_stage.h"
#include "tests/support/wait_for.h"

namespace statlet::pulltest {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

struct Stats {
  double median = 0, min = 0, max = 0;
};
Stats Summarize(std::vector<double> v) {
  Stats s;
  if (v.empty()) return s;
  std::sort(v.begin(), v.end());
  s.min = v.front();
  s.max = v.back();
  s.median = v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  return s;
}

[[noreturn]] void Die(const std::string& what) {
  std::fprintf(stderr, "bench_pull: %s\n", what.c_str());
  std::exit(1);
}

void Check(const Status& s, const char* what) {
  if (!s.ok()) Die(std::string(what) + ": " + s.ToString());
}

// containerd's own PullImage (no statlet): seconds.
double PullDirect(PullStage* stage, const TestImage& img) {
  auto ctx = e2e::CallContext(seconds(300));
  v1::PullImageRequest req;
  req.mutable_image()->set_image(img.ref);
  v1::PullImageResponse resp;
  const auto t0 = Clock::now();
  grpc::Status s = stage->containerd()->PullImage(ctx.get(), req, &resp);
  if (!s.ok()) Die("containerd PullImage: " + s.error_message());
  return Secs(Clock::now() - t0);
}

struct ProgressRun {
  double total = 0, first_report = 0, first_total = 0;
  size_t reports = 0;
};

ProgressRun PullWithProgress(PullStage* stage, const TestImage& img) {
  ProgressCall call(stage->statlet(), ProgressRequest(img.ref, kep::TIME, 1, -1, /*detailed=*/true));
  grpc::Status s = call.Wait(seconds(300));
  if (!s.ok()) Die("statlet PullImageWithProgress: " + s.error_message());
  auto reports = call.reports();
  ProgressRun r;
  r.total = Secs(call.ended() - call.started());
  r.reports = reports.size();
  if (!reports.empty()) r.first_report = Secs(reports.front().at - call.started());
  for (const auto& rep : reports) {
    if (rep.msg.has_total()) {
      r.first_total = Secs(rep.at - call.started());
      break;
    }
  }
  return r;
}

// CPU time (user + system) of containerd and its shims, and of the statlet agent.
struct Cpu {
  uint64_t containerd = 0, statlet = 0;
};
Cpu CpuNow(PullStage* stage) {
  Cpu c;
  for (pid_t p : stage->e2e().ContainerdPids()) c.containerd += statlet::e2e::ProcessCpuNs(p);
  c.statlet = statlet::e2e::ProcessCpuNs(stage->e2e().agent_pid());
  return c;
}

void Line(const char* what, const Stats& s, const char* unit) {
  std::printf("  %-46s median %8.3f %s  (min %.3f, max %.3f)\n", what, s.median, unit, s.min, s.max);
}

}  // namespace
}  // namespace statlet::pulltest

int main(int argc, char** argv) {
  using namespace statlet::pulltest;
  int rounds = 5, mib = 64;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--rounds") && i + 1 < argc) rounds = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--mib") && i + 1 < argc) mib = std::atoi(argv[++i]);
    else Die(std::string("usage: bench_pull [--rounds N] [--mib M]; unknown ") + argv[i]);
  }
  if (rounds < 1 || mib < 1) Die("--rounds and --mib must be positive");
  auto stage_or = PullStage::Start();
  if (!stage_or.ok()) Die("stage: " + stage_or.status().ToString());
  PullStage* stage = stage_or->get();
  auto img_or = stage->PushImage("bench", mib, "pull-bench");
  if (!img_or.ok()) Die("image: " + img_or.status().ToString());
  const TestImage img = *img_or;
  std::printf("bench_pull: image %s, random layer %.1f MiB, %d rounds\n", img.ref.c_str(),
              static_cast<double>(img.big().size) / (1 << 20), rounds);

  // 1 + 2: the floor and statlet alternate, the side that starts switching every round.
  for (uint64_t rate : {kDefaultRate, uint64_t{4} << 30}) {
    stage->proxy().SetRate(rate);
    std::vector<double> direct, with_progress, first, first_total;
    std::vector<double> ctd_direct, ctd_progress, statlet_direct, statlet_progress;  // CPU ms per pull
    for (int r = 0; r < rounds; ++r) {
      for (int side = 0; side < 2; ++side) {
        Check(stage->EnsureAbsent(img), "EnsureAbsent");
        stage->proxy().DropConnections();
        const Cpu before = CpuNow(stage);
        const bool floor = (side + r) % 2 == 0;
        if (floor) {
          direct.push_back(PullDirect(stage, img));
        } else {
          ProgressRun p = PullWithProgress(stage, img);
          with_progress.push_back(p.total);
          first.push_back(p.first_report * 1000);
          first_total.push_back(p.first_total * 1000);
        }
        const Cpu after = CpuNow(stage);
        (floor ? ctd_direct : ctd_progress).push_back(static_cast<double>(after.containerd - before.containerd) / 1e6);
        (floor ? statlet_direct : statlet_progress)
            .push_back(static_cast<double>(after.statlet - before.statlet) / 1e6);
      }
    }
    std::printf("\nlink %s:\n", rate == kDefaultRate ? "20 MiB/s (rate-limited proxy)" : "unthrottled proxy");
    Stats d = Summarize(direct), p = Summarize(with_progress);
    Line("containerd PullImage (floor)", d, "s");
    Line("statlet PullImageWithProgress (detailed, 1s)", p, "s");
    std::printf("  %-46s %.3f (median ratio)\n", "pull time with progress / floor", p.median / d.median);
    Line("time to first progress report", Summarize(first), "ms");
    Line("time to first report with the image's total", Summarize(first_total), "ms");
    Line("containerd CPU per pull, floor", Summarize(ctd_direct), "ms");
    Line("containerd CPU per pull, with progress", Summarize(ctd_progress), "ms");
    Line("statlet CPU per pull, floor (idle agent)", Summarize(statlet_direct), "ms");
    Line("statlet CPU per pull, with progress", Summarize(statlet_progress), "ms");
  }

  // 3: registry bytes for three clients.
  stage->proxy().SetRate(kDefaultRate);
  auto staggered = [&](const std::function<void()>& client) {
    // Clients start at 0 %, ~30 % and ~60 % of the random layer.
    std::vector<std::thread> threads;
    threads.emplace_back(client);
    for (double at : {0.3, 0.6}) {
      statlet::testing::WaitFor(
          [&] { return stage->proxy().delivered_bytes() >= static_cast<uint64_t>(at * img.big().size); }, seconds(120));
      threads.emplace_back(client);
    }
    for (auto& t : threads) t.join();
  };
  std::vector<double> joined, separate, direct3;
  for (int r = 0; r < rounds; ++r) {
    Check(stage->EnsureAbsent(img), "EnsureAbsent");
    stage->proxy().DropConnections();
    stage->proxy().ResetCounters();
    staggered([&] { PullWithProgress(stage, img); });
    joined.push_back(static_cast<double>(stage->proxy().delivered_bytes()) / (1 << 20));

    stage->proxy().ResetCounters();
    for (int i = 0; i < 3; ++i) {
      Check(stage->EnsureAbsent(img), "EnsureAbsent");
      PullDirect(stage, img);
    }
    separate.push_back(static_cast<double>(stage->proxy().delivered_bytes()) / (1 << 20));

    Check(stage->EnsureAbsent(img), "EnsureAbsent");
    stage->proxy().DropConnections();
    stage->proxy().ResetCounters();
    staggered([&] { PullDirect(stage, img); });
    direct3.push_back(static_cast<double>(stage->proxy().delivered_bytes()) / (1 << 20));
  }
  std::printf("\nregistry bytes for 3 clients (image %.1f MiB):\n", static_cast<double>(img.total) / (1 << 20));
  Line("3 clients joined through statlet", Summarize(joined), "MiB");
  Line("3 separate pulls, one after another", Summarize(separate), "MiB");
  Line("3 staggered PullImage calls to containerd", Summarize(direct3), "MiB");
  std::printf("  %-46s %.2f\n", "separate / joined (median ratio)",
              Summarize(separate).median / Summarize(joined).median);
  return 0;
}
