// A pod asked about right after it started, beside a real containerd: statlet's runtime
// client lists sandboxes and containers only once an hour here (its first round, before any
// pod), so everything the stats calls find of the new pod is news to statlet's metadata, as
// on a node in the up to --runtime.refresh-period after each RunPodSandbox and
// StartContainer. The calls must still answer as containerd does: the app container under
// its name, the pod under its sandbox id, the sandbox (pause) container never among the
// containers; and a container cgroup the runtime does not list at all is not answered.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <set>
#include <string>

#include <gtest/gtest.h>

#include "tests/e2e/cri_driver.h"
#include "tests/e2e/e2e_stage.h"
#include "tests/support/http_client.h"
#include "tests/support/live_cgroup.h"

namespace statlet::e2e {
namespace {

using std::chrono::milliseconds;

std::set<std::string> ContainerIds(v1::RuntimeService::Stub* stub, v1::ListContainerStatsResponse* resp) {
  grpc::Status s = stub->ListContainerStats(CallContext().get(), v1::ListContainerStatsRequest(), resp);
  EXPECT_TRUE(s.ok()) << s.error_message();
  std::set<std::string> ids;
  for (const auto& c : resp->stats()) ids.insert(c.attributes().id());
  return ids;
}

std::string Join(const std::set<std::string>& ids) {
  std::string out;
  for (const std::string& id : ids) out += (out.empty() ? "" : ", ") + id.substr(0, 12);
  return "{" + out + "}";
}

class FreshPod : public ::testing::Test {
 protected:
  void SetUp() override {
    StageOptions options;
    options.agent_binary = STATLET_E2E_AGENT;
    options.harness_script = STATLET_E2E_HARNESS;
    options.agent_flags = {"--runtime.refresh-period=1h", "--cri.max-age=0s", "--runtime.stats-period=0s"};
    auto stage = E2eStage::Start(options);
    ASSERT_TRUE(stage.ok()) << stage.status().ToString();
    stage_ = std::move(*stage);
    // The runtime client's first round (before any pod) is done once statlet says the
    // runtime is up: the one round of the hour that runs by itself.
    const std::string missing = Eventually(milliseconds(20000), [&]() -> std::string {
      auto resp = testing::TimedGet(stage_->metrics_port(), "/metrics", "", milliseconds(5000)).response;
      if (!resp || resp->status != 200) return "no scrape";
      auto samples = ParseExposition(resp->body);
      if (!samples.ok()) return samples.status().ToString();
      for (const Sample& sample : *samples) {
        if (sample.name == "statlet_runtime_up" && sample.value == 1) return "";
      }
      return "statlet_runtime_up is not 1";
    });
    ASSERT_EQ(missing, "") << stage_->Logs();
  }
  void TearDown() override {
    if (stage_ == nullptr) return;
    for (const Pod& p : pods_) {
      if (Status s = stage_->driver().RemovePod(p); !s.ok()) ADD_FAILURE() << s.ToString();
    }
    stage_->Stop();
  }

  std::unique_ptr<E2eStage> stage_;
  std::vector<Pod> pods_;
};

TEST_F(FreshPod, ItsSandboxIsNoContainerAndItsIdsAreTheRuntimes) {
  auto pod = stage_->driver().RunPod({"fresh", "e2e-fresh", {{"app", "fresh"}}});
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  pods_.push_back(*pod);
  auto app = stage_->driver().StartContainer(*pod, {"app", {"sh", "-c", "exec sleep 2147483647"}});
  ASSERT_TRUE(app.ok()) << app.status().ToString();

  v1::ListContainerStatsResponse theirs, ours;
  const std::set<std::string> ours_ids = ContainerIds(stage_->statlet(), &ours);
  const std::set<std::string> theirs_ids = ContainerIds(stage_->containerd(), &theirs);
  EXPECT_EQ(theirs_ids, std::set<std::string>{*app});
  EXPECT_EQ(ours_ids, theirs_ids) << "statlet " << Join(ours_ids) << ", containerd " << Join(theirs_ids)
                                  << " (the sandbox is " << pod->id.substr(0, 12) << ")";
  EXPECT_EQ(ours_ids.count(pod->id), 0u) << "the pod's sandbox is listed as a container";
  for (const auto& c : ours.stats()) {
    if (c.attributes().id() != *app) continue;
    EXPECT_EQ(c.attributes().metadata().name(), "app") << "the container is not named by the runtime's metadata";
  }

  // The pod calls name the pod by its sandbox id, as the runtime does (not by its uid).
  v1::ListPodSandboxStatsResponse pods;
  grpc::Status s = stage_->statlet()->ListPodSandboxStats(CallContext().get(), {}, &pods);
  ASSERT_TRUE(s.ok()) << s.error_message();
  std::set<std::string> pod_ids;
  for (const auto& p : pods.stats()) pod_ids.insert(p.attributes().id());
  EXPECT_EQ(pod_ids, std::set<std::string>{pod->id}) << "pod uid " << pod->uid;
}

TEST_F(FreshPod, AContainerCgroupTheRuntimeDoesNotListIsNotAnswered) {
  auto pod = stage_->driver().RunPod({"host", "e2e-fresh", {}});
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  pods_.push_back(*pod);
  auto app = stage_->driver().StartContainer(*pod, {"app", {"sh", "-c", "exec sleep 2147483647"}});
  ASSERT_TRUE(app.ok()) << app.status().ToString();
  // A cgroup shaped like a container of the pod, with a process in it, that no runtime made.
  const std::string stray_id(64, 'e');
  testing::LiveCgroup stray(pod->cgroup_parent + "/" + stray_id);
  ASSERT_TRUE(stray.ok()) << stray.error();
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    execl("/bin/sleep", "sleep", "600", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_TRUE(stray.Add(child));

  // Asked twice: the second call finds the stray already handed to the runtime client.
  for (int call = 0; call < 2; ++call) {
    v1::ListContainerStatsResponse theirs, ours;
    const std::set<std::string> ours_ids = ContainerIds(stage_->statlet(), &ours);
    const std::set<std::string> theirs_ids = ContainerIds(stage_->containerd(), &theirs);
    EXPECT_EQ(theirs_ids, std::set<std::string>{*app});
    EXPECT_EQ(ours_ids, theirs_ids) << "call " << call << ": statlet " << Join(ours_ids) << ", containerd "
                                    << Join(theirs_ids);
  }
  stray.Destroy();
  waitpid(child, nullptr, 0);
}

}  // namespace
}  // namespace statlet::e2e
