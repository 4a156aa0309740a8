// The proxy tests' main: the shared stage (if a test started one) is stopped, pods,
// containerd and cgroups removed, before the process ends, also after failures.
// Upstream's api.pb.h before any system header: the values of its enum Signal are named
// like <signal.h>'s macros.
#include "api.grpc.pb.h"

#include <unistd.h>

#include <cstdlib>
#include <memory>
#include <vector>

#include <gtest/gtest.h>

#include "tests/proxy/shared_stage.h"

namespace statlet::proxy_test {
namespace {

std::unique_ptr<ProxyStage> g_stage;
std::string g_error;
bool g_tried = false;

class StageEnvironment final : public ::testing::Environment {
 public:
  void TearDown() override { g_stage.reset(); }
};

}  // namespace

ProxyStage* SharedStage(std::string* error) {
  if (!g_tried) {
    g_tried = true;
    auto started = ProxyStage::Start(StageOptions());
    if (started.ok()) {
      g_stage = std::move(*started);
    } else {
      g_error = started.status().ToString();
    }
  }
  if (error != nullptr) *error = g_error;
  return g_stage.get();
}

}  // namespace statlet::proxy_test

namespace statlet::proxy_test {
namespace {

// `proxy_test --abandon-execs SOCKET CONTAINER N`: a client that starts N ExecSync calls
// of a 30 s sleep through SOCKET and waits to be killed with them in flight (the hostile
// test's abandoning client: a process of its own, so that its death closes its
// connection as a crashed client's does).
int AbandonExecs(const std::string& socket, const std::string& container, int n) {
  auto stub = ::runtime::v1::RuntimeService::NewStub(KubeletChannel(socket, /*fresh=*/true));
  grpc::CompletionQueue cq;
  std::vector<grpc::ClientContext> ctxs(static_cast<size_t>(n));
  std::vector<::runtime::v1::ExecSyncResponse> resps(static_cast<size_t>(n));
  std::vector<grpc::Status> statuses(static_cast<size_t>(n));
  std::vector<std::unique_ptr<grpc::ClientAsyncResponseReader<::runtime::v1::ExecSyncResponse>>> readers;
  for (int i = 0; i < n; ++i) {
    ::runtime::v1::ExecSyncRequest req;
    req.set_container_id(container);
    req.add_cmd("sleep");
    req.add_cmd("30");
    req.set_timeout(60);
    readers.push_back(stub->AsyncExecSync(&ctxs[i], req, &cq));
    readers.back()->Finish(&resps[i], &statuses[i], &ctxs[i]);
  }
  for (;;) pause();  // until killed
}

}  // namespace
}  // namespace statlet::proxy_test

int main(int argc, char** argv) {
  if (argc == 5 && std::string(argv[1]) == "--abandon-execs") {
    return statlet::proxy_test::AbandonExecs(argv[2], argv[3], std::atoi(argv[4]));
  }
  ::testing::InitGoogleTest(&argc, argv);
  ::testing::AddGlobalTestEnvironment(new statlet::proxy_test::StageEnvironment());
  return RUN_ALL_TESTS();
}
