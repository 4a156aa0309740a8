// The CRI socket against hostile HTTP/2 clients: calls whose answers are never granted
// flow-control credit must not cost a thread each, a PING flood must not pile up memory,
// and what either held is returned when the client goes. A NOT_FOUND for a huge id must
// stay a NOT_FOUND with a short message.
// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include <grpcpp/grpcpp.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <thread>
#include <vector>

#include "tests/reliability/h2_attacker.h"
#include "tests/support/statlet_daemon.h"
#include "tests/support/wait_for.h"

namespace statlet::testing {
namespace {

namespace v1 = runtime::v1;

constexpr int kMaxThreads = 64;
constexpr uint64_t kReturnedWithinKib = 16 * 1024;  // RSS once the attacker left
constexpr uint64_t kPeakWithinKib = 32 * 1024;      // RSS while it attacks (threads included)

// The daemon's cost while `attack` runs (its worst) and once the attacker is gone.
struct AttackCost {
  ProcessCost before, worst, after;
};

TEST(GrpcAbuse, CallsWithoutFlowControlCreditHoldNoThreads) {
  Daemon d({.serve_cri = true});
  ASSERT_TRUE(d.ok()) << d.error();
  AttackCost c;
  c.before = CostOf(d.pid());
  int taken_up = 0;
  {
    H2Attacker a(d.cri_socket());
    ASSERT_TRUE(a.ok());
    a.OpenCalls("/runtime.v1.RuntimeService/ListContainerStats", 1000);
    // Exchange frames for 3 s (the server opens streams as its limit allows), noting the
    // highest thread count and RSS seen.
    c.worst = c.before;
    for (int i = 0; i < 30; ++i) {
      a.Pump(std::chrono::milliseconds(100));
      ProcessCost now = CostOf(d.pid());
      c.worst.threads = std::max(c.worst.threads, now.threads);
      c.worst.rss_kib = std::max(c.worst.rss_kib, now.rss_kib);
    }
    taken_up = a.headers_received();
  }  // the attacker leaves
  // The attack happened: the server took up calls whose answers it could not send.
  EXPECT_GT(taken_up, 0) << "the server answered no call: nothing was attacked";
  // Returned: threads back to the idle count and RSS back near it within 10 s; one call
  // from a well-behaved client prompts the daemon's release of freed memory.
  auto channel = grpc::CreateChannel("unix:" + d.cri_socket(), grpc::InsecureChannelCredentials());
  auto stub = v1::RuntimeService::NewStub(channel);
  const bool returned = WaitFor(
      [&] {
        grpc::ClientContext ctx;
        ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(2));
        v1::ListContainerStatsRequest req;
        v1::ListContainerStatsResponse resp;
        stub->ListContainerStats(&ctx, req, &resp);
        c.after = CostOf(d.pid());
        return c.after.threads <= c.before.threads + 2 && c.after.rss_kib < c.before.rss_kib + kReturnedWithinKib;
      },
      std::chrono::seconds(10));
  std::printf(
      "figure: 1000 calls never granted flow-control credit, %d taken up: threads %d -> %d (worst) -> %d after, "
      "RSS %.1f -> %.1f -> %.1f MiB\n",
      taken_up, c.before.threads, c.worst.threads, c.after.threads, c.before.rss_kib / 1024.0, c.worst.rss_kib / 1024.0,
      c.after.rss_kib / 1024.0);
  if (!kSanitizedBuild) {
    EXPECT_TRUE(returned) << "threads and memory not returned within 10 s";
  }
  EXPECT_LE(c.worst.threads, kMaxThreads) << "a thread per stalled call";
  EXPECT_LE(c.after.threads, c.before.threads + 2) << "threads stay after the attacker left";
  if (!kSanitizedBuild) {
    EXPECT_LT(c.after.rss_kib, c.before.rss_kib + kReturnedWithinKib) << "memory stays after the attacker left";
  }
  // Still serving.
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ListContainerStatsResponse resp;
  EXPECT_TRUE(stub->ListContainerStats(&ctx, v1::ListContainerStatsRequest(), &resp).ok());
}

enum class Flood { kPingsOnly, kWithCalls, kWithCallsReading };

class GrpcPingFlood : public ::testing::TestWithParam<Flood> {};

// Eight attackers flood PINGs for 5 s, each connecting again whenever the server cuts it:
// what the daemon holds stays bounded while they do and is returned when they stop.
TEST_P(GrpcPingFlood, CostsLittleAndIsReturned) {
  const bool with_calls = GetParam() != Flood::kPingsOnly;
  const bool reading = GetParam() == Flood::kWithCallsReading;
  Daemon d({.serve_cri = true});
  ASSERT_TRUE(d.ok()) << d.error();
  {
    // The baseline is a daemon that has served a call: the socket appears before every
    // server thread has started.
    auto channel = grpc::CreateChannel("unix:" + d.cri_socket(), grpc::InsecureChannelCredentials());
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
    v1::ListContainerStatsResponse resp;
    ASSERT_TRUE(v1::RuntimeService::NewStub(channel)->ListContainerStats(&ctx, {}, &resp).ok());
  }
  AttackCost c;
  c.before = CostOf(d.pid());
  ASSERT_TRUE(ResetPeakRss(d.pid()));
  std::atomic<int> pings{0}, connections{0}, cut{0}, acks{0}, answered{0};
  const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  std::vector<std::thread> attackers;
  for (int t = 0; t < 8; ++t) {
    attackers.emplace_back([&] {
      while (std::chrono::steady_clock::now() < end) {
        H2Attacker a(d.cri_socket(), /*grant_credit=*/reading);
        if (!a.ok()) continue;
        ++connections;
        auto left = std::chrono::duration_cast<std::chrono::milliseconds>(end - std::chrono::steady_clock::now());
        pings += a.FloodPings(left, with_calls ? "/runtime.v1.RuntimeService/ListContainerStats" : "", reading);
        cut += a.closed_by_server();
        // What the server answered and this client did not read yet (all of it, without `reading`).
        a.ReadArrived();
        acks += a.ping_acks();
        answered += a.headers_received();
      }
    });
  }
  // The worst seen while the attackers run.
  c.worst = c.before;
  while (std::chrono::steady_clock::now() < end) {
    ProcessCost now = CostOf(d.pid());
    c.worst.threads = std::max(c.worst.threads, now.threads);
    c.worst.peak_rss_kib = std::max(c.worst.peak_rss_kib, now.peak_rss_kib);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // sampling period
  }
  for (auto& t : attackers) t.join();
  c.worst.peak_rss_kib = std::max(c.worst.peak_rss_kib, CostOf(d.pid()).peak_rss_kib);
  // Returned: the threads stalled calls held, and the memory.
  // The attack happened: every attacker connected and the server processed PINGs (and
  // took up calls, where they were sent).
  EXPECT_GE(connections.load(), 8);
  EXPECT_GT(acks.load(), 0) << "the server acknowledged no PING: nothing was attacked";
  if (with_calls) {
    EXPECT_GT(answered.load(), 0) << "the server took up no call";
  }
  const auto left = std::chrono::steady_clock::now();
  WaitFor(
      [&] {
        c.after = CostOf(d.pid());
        return c.after.threads <= c.before.threads + 4 && c.after.rss_kib < c.before.rss_kib + kReturnedWithinKib;
      },
      std::chrono::seconds(10));
  const double returned_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - left).count();
  std::printf(
      "figure: PING flood%s, 8 attackers for 5 s: %d PINGs on %d connections (%d acknowledged, %d calls taken up), "
      "%d cut by the server; "
      "threads %d -> %d (worst) -> %d, RSS %.1f -> peak %.1f -> %.1f MiB (%.1f s after they left)\n",
      !with_calls ? ""
      : reading   ? " with a call every 64 PINGs, answers read"
                  : " with a call every 64 PINGs",
      pings.load(), connections.load(), acks.load(), answered.load(), cut.load(), c.before.threads, c.worst.threads,
      c.after.threads, c.before.rss_kib / 1024.0, c.worst.peak_rss_kib / 1024.0, c.after.rss_kib / 1024.0, returned_s);
  EXPECT_LE(c.after.threads, c.before.threads + 4) << "threads held after the attackers left";
  // Still serving.
  auto channel = grpc::CreateChannel("unix:" + d.cri_socket(), grpc::InsecureChannelCredentials());
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(5));
  v1::ListContainerStatsResponse resp;
  grpc::Status served = v1::RuntimeService::NewStub(channel)->ListContainerStats(&ctx, {}, &resp);
  EXPECT_TRUE(served.ok()) << served.error_code() << ": " << served.error_message() << "; threads "
                           << CostOf(d.pid()).threads;
  if (!kSanitizedBuild) {
    EXPECT_LT(c.worst.peak_rss_kib, c.before.rss_kib + kPeakWithinKib) << "PINGs pile up memory";
    EXPECT_LT(c.after.rss_kib, c.before.rss_kib + kReturnedWithinKib);
  }
}

INSTANTIATE_TEST_SUITE_P(GrpcAbuse, GrpcPingFlood,
                         ::testing::Values(Flood::kPingsOnly, Flood::kWithCalls, Flood::kWithCallsReading),
                         [](const auto& info) {
                           return info.param == Flood::kPingsOnly   ? "PingsOnly"
                                  : info.param == Flood::kWithCalls ? "WithCalls"
                                                                    : "WithCallsReading";
                         });

TEST(GrpcAbuse, NotFoundForAHugeIdStaysShort) {
  Daemon d({.serve_cri = true});
  ASSERT_TRUE(d.ok()) << d.error();
  auto channel = grpc::CreateChannel("unix:" + d.cri_socket(), grpc::InsecureChannelCredentials());
  auto stub = v1::RuntimeService::NewStub(channel);
  grpc::ClientContext ctx;
  ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
  v1::ContainerStatsRequest req;
  req.set_container_id(std::string(1000000, 'a'));
  v1::ContainerStatsResponse resp;
  grpc::Status s = stub->ContainerStats(&ctx, req, &resp);
  std::printf("figure: ContainerStats with a 1 MB id -> code %d, message of %zu bytes\n", s.error_code(),
              s.error_message().size());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::NOT_FOUND) << s.error_message().substr(0, 200);
  EXPECT_LT(s.error_message().size(), 512u);
}

}  // namespace
}  // namespace statlet::testing
