// What proxy mode promises a caller, checked against a gRPC peer of the test's own in the
// runtime's place (containerd 1.6 sends no trailers, details or streams to check them
// with): message bytes, metadata both ways, status code, message and details, trailers
// (grpc-status-details-bin once), server streams in order, the caller's deadline and
// cancellation at the runtime, message size bounds, a runtime that goes away and comes
// back, and which paths pass at all. statlet is the real daemon, in proxy mode.
// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include <gtest/gtest.h>

#include <sys/wait.h>

#include <atomic>
#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <thread>

#include <grpcpp/generic/async_generic_service.h>
#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/rpc_method.h>
#include <grpcpp/support/sync_stream.h>

#include "tests/proxy/kubelet_calls.h"
#include "tests/proxy/proxy_stage.h"
#include "tests/reliability/h2_attacker.h"
#include "tests/support/statlet_daemon.h"
#include "tests/support/wait_for.h"

namespace statlet::proxy_test {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;
using std::chrono::seconds;

constexpr char kService[] = "/runtime.v1.RuntimeService/";
// A VersionResponse as no protobuf library would write it (fields out of order, one twice,
// an unknown field): it must reach the caller byte for byte.
constexpr char kVersionWire[] =
    "\x22\x02v1\x0a\x05"
    "0.1.0\x0a\x05"
    "0.1.1\xf8\x3e\x07\x12\x04peer";
const std::string kVersionBytes(kVersionWire, sizeof kVersionWire - 1);
constexpr char kDetailsWire[] = "\x0a\x05hello\x12\x03\x00\x01\xff";
const std::string kDetails(kDetailsWire, sizeof kDetailsWire - 1);

std::string ToString(const grpc::ByteBuffer& b) {
  std::vector<grpc::Slice> slices;
  std::string out;
  if (b.Dump(&slices).ok()) {
    for (const auto& s : slices) out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  return out;
}
grpc::ByteBuffer ToBuffer(const std::string& s) {
  grpc::Slice slice(s);
  return grpc::ByteBuffer(&slice, 1);
}
std::string Str(const grpc::string_ref& r) { return std::string(r.data(), r.size()); }

// Metadata the test's own calls carry (passed to the runtime with the rest of the caller's).
// The peer counts those calls only: statlet's runtime client makes calls of its own to the
// same socket (its metadata rounds, whenever the scheduler runs them), which are not passed.
constexpr char kCallerKey[] = "proxy-test-caller";

// Ctx() for a call the peer counts should it reach it (Unary marks its calls itself).
std::unique_ptr<grpc::ClientContext> TestCtx() {
  auto ctx = Ctx();
  ctx->AddMetadata(kCallerKey, "1");
  return ctx;
}

bool FromTheTest(const grpc::GenericCallbackServerContext* ctx) {
  return ctx->client_metadata().find(kCallerKey) != ctx->client_metadata().end();
}

// The peer: what it does is chosen by the method's name. Its counts are of the test's calls.
class Peer final : public grpc::CallbackGenericService {
 public:
  std::atomic<int> calls{0};
  std::atomic<int> requests{0};  // request messages received
  std::atomic<int> cancelled{0};
  std::atomic<int64_t> last_deadline_ms{0};  // what the peer saw of the caller's deadline
  std::atomic<int> flood_written{0};         // Flood's messages the transport took

  grpc::ServerGenericBidiReactor* CreateReactor(grpc::GenericCallbackServerContext* ctx) override {
    return new Call(this, ctx);
  }

 private:
  class Call final : public grpc::ServerGenericBidiReactor {
   public:
    Call(Peer* peer, grpc::GenericCallbackServerContext* ctx) : peer_(peer), ctx_(ctx), counted_(FromTheTest(ctx)) {
      method_ = ctx->method().substr(ctx->method().rfind('/') + 1);
      const auto left = ctx->deadline() - std::chrono::system_clock::now();
      if (counted_) {
        ++peer->calls;
        peer->last_deadline_ms = std::chrono::duration_cast<milliseconds>(left).count();
      }
      StartRead(&request_);
    }
    void OnReadDone(bool ok) override {
      if (!ok) {
        // The half-close: the answer went (or goes) on the request. A call that ends its
        // side with no request at all is answered as grpc-go answers it.
        if (!got_request_) Finish(grpc::Status(grpc::StatusCode::INTERNAL, "peer: no request message"));
        return;
      }
      got_request_ = true;
      if (counted_) ++peer_->requests;
      const std::string req = ToString(request_);
      if (method_ == "Version") {
        ctx_->AddInitialMetadata("x-peer-initial", "one");
        ctx_->AddTrailingMetadata("x-peer-trailer", "two");
        ctx_->AddTrailingMetadata("x-peer-trailer-bin", std::string("\x00\x01\xff", 3));
        Answer(kVersionBytes, grpc::Status::OK);
      } else if (method_ == "Echo") {
        for (const auto& [k, v] : ctx_->client_metadata()) {
          const std::string key = Str(k);
          if (key.rfind("x-", 0) == 0 || key == "traceparent" || key == "baggage") {
            ctx_->AddInitialMetadata("echo-" + key, Str(v));
          }
        }
        Answer(req, grpc::Status::OK);
      } else if (method_ == "Fail") {
        ctx_->AddTrailingMetadata("x-peer-trailer", "failed");
        Finish(grpc::Status(grpc::StatusCode::FAILED_PRECONDITION, "peer says no", kDetails));
      } else if (method_ == "Stream") {
        remaining_ = std::stoi(req);
        WriteNext();
      } else if (method_ == "Flood") {
        remaining_ = std::stoi(req);
        flood_ = true;
        WriteNext();
      } else if (method_ == "Big") {
        Answer(std::string(std::stoul(req), 'b'), grpc::Status::OK);
      } else if (method_ == "Hang") {
        // Answers only when cancelled.
      } else {
        Finish(grpc::Status(grpc::StatusCode::UNIMPLEMENTED, "peer: unknown method " + method_));
      }
    }
    void OnWriteDone(bool ok) override {
      if (ok && flood_) ++peer_->flood_written;
      if (ok && remaining_ > 0) {
        WriteNext();
      } else {
        ctx_->AddTrailingMetadata("x-peer-trailer", "streamed");
        Finish(ok ? grpc::Status::OK : grpc::Status::CANCELLED);
      }
    }
    void OnCancel() override {
      if (counted_) ++peer_->cancelled;
      if (method_ == "Hang") Finish(grpc::Status::CANCELLED);
    }
    void OnDone() override { delete this; }

   private:
    void Answer(const std::string& bytes, grpc::Status s) {
      response_ = ToBuffer(bytes);
      StartWriteAndFinish(&response_, grpc::WriteOptions(), std::move(s));
    }
    void WriteNext() {
      const int i = remaining_--;
      response_ = flood_ ? ToBuffer(std::string(64 * 1024, 'f'))
                         : ToBuffer(std::string(static_cast<size_t>(i), static_cast<char>('a' + i % 26)));
      StartWrite(&response_);
    }
    Peer* peer_;
    bool got_request_ = false;
    grpc::GenericCallbackServerContext* ctx_;
    const bool counted_;
    std::string method_;
    grpc::ByteBuffer request_, response_;
    int remaining_ = 0;
    bool flood_ = false;  // 64 KiB messages
  };
};

class ProxyPeer : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/statlet-proxy-peer-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    peer_socket_ = dir_ + "/peer.sock";
    StartPeer();
    daemon_ = std::make_unique<testing::Daemon>(testing::DaemonOptions{
        .flags = {"--cri.proxy", "--runtime.endpoint=unix://" + peer_socket_, "--cri.max-message-bytes=16777216"},
        .serve_cri = true});
    ASSERT_TRUE(daemon_->ok()) << daemon_->error();
    channel_ = KubeletChannel(daemon_->cri_socket(), /*fresh=*/true);
  }
  Peer& peer() { return *peer_holder_; }

  void TearDown() override {
    daemon_.reset();
    StopPeer();
    unlink(peer_socket_.c_str());
    rmdir(dir_.c_str());
  }

  // A new peer each time: a generic service serves one server in its life.
  void StartPeer() {
    peer_holder_ = std::make_unique<Peer>();
    grpc::ServerBuilder b;
    b.AddListeningPort("unix:" + peer_socket_, grpc::InsecureServerCredentials());
    b.RegisterCallbackGenericService(peer_holder_.get());
    b.SetMaxReceiveMessageSize(64 << 20);
    b.SetMaxSendMessageSize(64 << 20);
    server_ = b.BuildAndStart();
    ASSERT_NE(server_, nullptr);
  }
  void StopPeer() {
    if (!server_) return;
    server_->Shutdown(std::chrono::system_clock::now() + milliseconds(100));
    server_->Wait();
    server_.reset();
  }

  // A unary call of `method` (under runtime.v1.RuntimeService) through statlet.
  grpc::Status Unary(const std::string& method, const std::string& request, std::string* response,
                     grpc::ClientContext* ctx) {
    const std::string path = kService + method;
    ctx->AddMetadata(kCallerKey, "1");
    grpc::internal::RpcMethod rpc(path.c_str(), grpc::internal::RpcMethod::NORMAL_RPC, channel_);
    grpc::ByteBuffer resp;
    grpc::Status s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(channel_.get(), rpc, ctx,
                                                                                           ToBuffer(request), &resp);
    *response = ToString(resp);
    return s;
  }

  std::string dir_, peer_socket_;
  std::unique_ptr<Peer> peer_holder_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<testing::Daemon> daemon_;
  std::shared_ptr<grpc::Channel> channel_;
};

std::multimap<std::string, std::string> Map(const std::multimap<grpc::string_ref, grpc::string_ref>& m) {
  std::multimap<std::string, std::string> out;
  for (const auto& [k, v] : m) out.emplace(Str(k), Str(v));
  return out;
}

TEST_F(ProxyPeer, BytesMetadataStatusDetailsAndTrailersPassUnchanged) {
  {
    auto ctx = Ctx();
    std::string resp;
    grpc::Status s = Unary("Version", "", &resp, ctx.get());
    ASSERT_TRUE(s.ok()) << Describe(s);
    EXPECT_EQ(resp, kVersionBytes) << "the runtime's bytes, as it wrote them";
    auto initial = Map(ctx->GetServerInitialMetadata());
    auto trailing = Map(ctx->GetServerTrailingMetadata());
    EXPECT_EQ(initial.count("x-peer-initial"), 1u);
    EXPECT_EQ(trailing.find("x-peer-trailer")->second, "two");
    ASSERT_EQ(trailing.count("x-peer-trailer-bin"), 1u);
    EXPECT_EQ(trailing.find("x-peer-trailer-bin")->second, std::string("\x00\x01\xff", 3));
  }
  {
    auto ctx = Ctx();
    ctx->AddMetadata("traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    ctx->AddMetadata("baggage", "node=a");
    ctx->AddMetadata("x-caller-bin", std::string("\x00\xfe", 2));
    std::string payload(1 << 20, '\0');
    for (size_t i = 0; i < payload.size(); ++i) payload[i] = static_cast<char>(i * 131 % 251);
    std::string resp;
    grpc::Status s = Unary("Echo", payload, &resp, ctx.get());
    ASSERT_TRUE(s.ok()) << Describe(s);
    EXPECT_EQ(resp, payload);
    auto initial = Map(ctx->GetServerInitialMetadata());
    EXPECT_EQ(initial.find("echo-traceparent")->second, "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01");
    EXPECT_EQ(initial.find("echo-baggage")->second, "node=a");
    ASSERT_EQ(initial.count("echo-x-caller-bin"), 1u);
    EXPECT_EQ(initial.find("echo-x-caller-bin")->second, std::string("\x00\xfe", 2));
  }
  {
    auto ctx = Ctx();
    std::string resp;
    grpc::Status s = Unary("Fail", "", &resp, ctx.get());
    EXPECT_EQ(s.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_EQ(s.error_message(), "peer says no");
    EXPECT_EQ(s.error_details(), kDetails);
    auto trailing = Map(ctx->GetServerTrailingMetadata());
    EXPECT_EQ(trailing.find("x-peer-trailer")->second, "failed");
    EXPECT_EQ(trailing.count("grpc-status-details-bin"), 1u) << "the details once";
  }
}

TEST_F(ProxyPeer, ServerStreamsPassInOrder) {
  const std::string path = std::string(kService) + "Stream";
  grpc::internal::RpcMethod rpc(path.c_str(), grpc::internal::RpcMethod::SERVER_STREAMING, channel_);
  auto ctx = Ctx();
  std::unique_ptr<grpc::ClientReader<grpc::ByteBuffer>> reader(
      grpc::internal::ClientReaderFactory<grpc::ByteBuffer>::Create(channel_.get(), rpc, ctx.get(), ToBuffer("300")));
  grpc::ByteBuffer msg;
  int expect = 300, got = 0;
  while (reader->Read(&msg)) {
    ++got;
    EXPECT_EQ(ToString(msg), std::string(static_cast<size_t>(expect), static_cast<char>('a' + expect % 26)));
    --expect;
  }
  grpc::Status s = reader->Finish();
  EXPECT_TRUE(s.ok()) << Describe(s);
  EXPECT_EQ(got, 300);
  EXPECT_EQ(Map(ctx->GetServerTrailingMetadata()).find("x-peer-trailer")->second, "streamed");
}

// A stream whose caller grants its answer no flow-control credit holds its own credit
// only: the other calls of the same connection go on (as on a connection straight to the
// runtime, whose transport gives a connection's credit back as bytes arrive).
TEST_F(ProxyPeer, AStreamItsCallerDoesNotReadStallsNoOtherCallOfItsConnection) {
  testing::H2Attacker client(daemon_->cri_socket());  // stream credit 0 unless granted
  ASSERT_TRUE(client.ok());
  // 40 streams of 200 messages of 64 KiB: statlet holds 256 KiB of each (the runtime's
  // third message of each has arrived whole), 10 MiB in all, past the 4 MiB a connection to
  // the runtime may have in flight.
  constexpr int kStalled = 40;
  for (int i = 0; i < kStalled; ++i) client.OpenCall(std::string(kService) + "Flood", "200", /*credit=*/false);
  const bool filled = testing::WaitFor(
      [&] {
        client.Pump(milliseconds(20));
        return peer().flood_written >= 3 * kStalled;
      },
      seconds(10));
  std::printf("figure: %d messages of 64 KiB written into %d streams granted no credit\n", peer().flood_written.load(),
              kStalled);
  EXPECT_TRUE(filled) << "the runtime's answers stalled before three messages a stream";
  std::vector<int32_t> calls;
  for (int i = 0; i < 20; ++i) calls.push_back(client.OpenCall(std::string(kService) + "Echo", "x", /*credit=*/true));
  int answered = 0;
  testing::WaitFor(
      [&] {
        client.Pump(milliseconds(20));
        answered = 0;
        for (int32_t id : calls) answered += client.StatusOf(id) == "0";
        return answered == 20;
      },
      seconds(5));
  EXPECT_EQ(answered, 20) << "calls beside the stalled streams did not get their answers (connection "
                          << (client.closed_by_server() ? "closed" : "open") << ", " << client.headers_received()
                          << " HEADERS received, " << client.streams_closed() << " streams closed)";
}

TEST_F(ProxyPeer, TheCallersDeadlineAndCancellationReachTheRuntime) {
  // A deadline: the peer sees it, and the call ends with it.
  const int cancelled_before = peer().cancelled;
  {
    auto ctx = Ctx(milliseconds(800));
    std::string resp;
    const auto t0 = Clock::now();
    grpc::Status s = Unary("Hang", "", &resp, ctx.get());
    const auto took = std::chrono::duration_cast<milliseconds>(Clock::now() - t0);
    EXPECT_EQ(s.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << Describe(s);
    EXPECT_LT(took, milliseconds(1800));
    EXPECT_GT(peer().last_deadline_ms.load(), 0);
    EXPECT_LE(peer().last_deadline_ms.load(), 800) << "the runtime's call has the caller's deadline";
    EXPECT_TRUE(testing::WaitFor([&] { return peer().cancelled > cancelled_before; }, seconds(2)))
        << "the runtime's call outlived the caller's deadline";
  }
  // No deadline (PullImage, GetContainerEvents): none at the runtime either; the caller
  // cancels, and so does the runtime's call.
  {
    const int calls = peer().calls;
    grpc::ClientContext ctx;
    std::thread caller([&] {
      std::string resp;
      Unary("Hang", "", &resp, &ctx);
    });
    ASSERT_TRUE(testing::WaitFor([&] { return peer().calls > calls; }, seconds(5)));
    EXPECT_GT(peer().last_deadline_ms.load(), int64_t{24} * 3600 * 1000) << "an infinite deadline stays infinite";
    const int before = peer().cancelled;
    ctx.TryCancel();
    caller.join();
    EXPECT_TRUE(testing::WaitFor([&] { return peer().cancelled > before; }, seconds(2)));
  }
}

// Passed calls are served by one thread of statlet's, however many are in flight: calls
// waiting on the runtime add no thread. A statlet stopped while they wait ends them (each
// caller gets an error, none is left hanging) and exits by itself, well before the SIGKILL
// that would follow a stop that hung.
TEST_F(ProxyPeer, CallsInFlightAddNoThreadAndAStopEndsThem) {
  std::string resp;
  ASSERT_TRUE(Unary("Echo", "x", &resp, Ctx().get()).ok());
  const pid_t pid = daemon_->pid();
  const int threads_before = testing::CostOf(pid).threads;
  ASSERT_GT(threads_before, 0) << "/proc/" << pid << "/status unreadable";
  constexpr int kCalls = 64;
  const int calls = peer().calls;
  std::vector<grpc::Status> results(kCalls);
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      grpc::ClientContext ctx;  // no deadline: the call lasts until statlet ends it
      std::string r;
      results[i] = Unary("Hang", "", &r, &ctx);
    });
  }
  const bool arrived = testing::WaitFor([&] { return peer().calls >= calls + kCalls; }, seconds(20));
  const int threads_during = testing::CostOf(pid).threads;
  ASSERT_GT(threads_during, 0) << "/proc/" << pid << "/status unreadable";
  const auto t0 = Clock::now();
  const int status = daemon_->Stop(seconds(20));
  const double stop_ms = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
  for (auto& t : callers) t.join();
  std::printf("figure: statlet threads %d before, %d with %d passed calls waiting; stopped in %.0f ms\n",
              threads_before, threads_during, kCalls, stop_ms);
  ASSERT_TRUE(arrived) << "not every call reached the runtime";
  EXPECT_LE(threads_during, threads_before + 2) << "threads grew with the calls in flight";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "wait status " << status;
  for (const grpc::Status& s : results) EXPECT_FALSE(s.ok()) << "a hanging call was answered OK";
}

TEST_F(ProxyPeer, MessagesUpToTheRuntimesLimitPassLargerOnesAreRefused) {
  std::string resp;
  auto ctx = Ctx();
  const grpc::Status under = Unary("Echo", std::string(15 << 20, 'e'), &resp, ctx.get());
  ASSERT_TRUE(under.ok()) << Describe(under);
  EXPECT_EQ(resp.size(), size_t{15} << 20);
  // The request itself must not reach the runtime. (When gRPC's refusal of the oversized
  // message reaches statlet as a read that ended before it notes the call cancelled,
  // statlet passes a call without a request, as it does for a caller that sends none.)
  const int requests = peer().requests;
  ctx = Ctx();
  const auto t0 = Clock::now();
  grpc::Status s = Unary("Echo", std::string((16 << 20) + 1, 'e'), &resp, ctx.get());
  EXPECT_LT(Clock::now() - t0, seconds(2)) << "the refusal waited";
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << Describe(s);
  EXPECT_EQ(peer().requests, requests) << "a request over the limit reached the runtime";
  ctx = Ctx();
  s = Unary("Big", std::to_string((16 << 20) + 1), &resp, ctx.get());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::RESOURCE_EXHAUSTED) << Describe(s);
}

TEST_F(ProxyPeer, ARuntimeThatGoesAwayIsNamedAndFoundAgain) {
  std::string resp;
  ASSERT_TRUE(Unary("Echo", "x", &resp, Ctx().get()).ok());
  StopPeer();
  unlink(peer_socket_.c_str());
  const auto t0 = Clock::now();
  grpc::Status s = Unary("Echo", "x", &resp, Ctx(seconds(5)).get());
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNAVAILABLE) << Describe(s);
  EXPECT_NE(s.error_message().find(peer_socket_), std::string::npos) << s.error_message();
  EXPECT_LT(Clock::now() - t0, seconds(5));
  StartPeer();
  const auto t1 = Clock::now();
  EXPECT_TRUE(testing::WaitFor([&] { return Unary("Echo", "x", &resp, Ctx(seconds(1)).get()).ok(); }, seconds(5)));
  std::printf("figure: a runtime back on its socket answers passed calls again after %.0f ms\n",
              std::chrono::duration<double, std::milli>(Clock::now() - t1).count());
}

TEST_F(ProxyPeer, OnlyRuntimeV1CallsPassAndStatsAreStatlets) {
  const int calls = peer().calls;
  // statlet's registered stats calls are its own.
  auto stub = ::runtime::v1::RuntimeService::NewStub(channel_);
  ::runtime::v1::ListContainerStatsResponse stats;
  EXPECT_TRUE(stub->ListContainerStats(TestCtx().get(), ::runtime::v1::ListContainerStatsRequest(), &stats).ok());
  ::runtime::v1::ListMetricDescriptorsResponse descriptors;
  EXPECT_TRUE(
      stub->ListMetricDescriptors(TestCtx().get(), ::runtime::v1::ListMetricDescriptorsRequest(), &descriptors).ok());
  EXPECT_GT(descriptors.descriptors_size(), 0);
  EXPECT_EQ(peer().calls, calls);
  // Any other runtime.v1 method passes, also one no proto of statlet's names.
  std::string resp;
  grpc::Status s = Unary("NoSuchMethodAnywhere", "", &resp, Ctx().get());
  EXPECT_EQ(s.error_message(), "peer: unknown method NoSuchMethodAnywhere");
  EXPECT_EQ(peer().calls, calls + 1);
  // Other services do not.
  grpc::internal::RpcMethod rpc("/containerd.services.tasks.v1.Tasks/List", grpc::internal::RpcMethod::NORMAL_RPC,
                                channel_);
  grpc::ByteBuffer out;
  auto ctx = TestCtx();
  s = grpc::internal::BlockingUnaryCall<grpc::ByteBuffer, grpc::ByteBuffer>(channel_.get(), rpc, ctx.get(),
                                                                            ToBuffer(""), &out);
  EXPECT_EQ(s.error_code(), grpc::StatusCode::UNIMPLEMENTED);
  EXPECT_EQ(peer().calls, calls + 1);
}

}  // namespace
}  // namespace statlet::proxy_test
