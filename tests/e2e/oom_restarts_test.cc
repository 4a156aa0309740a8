// OOM kills across restarts on the e2e stage: one container name OOM-killed in three
// attempts (0, 1, 2) of one sandbox, as the kubelet restarts a crash-looping container, and
// statlet_container_oom_kills_total{namespace, pod, container} reads 1, 2, then 3 on
// /metrics, while each attempt runs and after it exited; still 3 once no exit record of the
// attempts is left; gone once the pod is.
//
// An agent of the test's own watches the stage's containerd with a 1 s exit retention: the
// stage agent's 2 min would keep the earlier attempts' records (their final counts) in every
// scrape of the test, where a sum over what the scrape shows would pass too.
//
// Each attempt's shell runs dd with a buffer past the memory limit (the OOM killer takes
// dd: one kill in the container's cgroup), then waits for a file of the test's on a host
// mount before it exits 137: the test lets it go only once a scrape showed the kill, so
// the count does not hang on winning the race between the exit's final read and the
// runtime's removal of the cgroup (the exit records' own tests measure that); the exited
// instance is then carried by its exit record and the accumulator. Every wait is a
// condition polled with a deadline.
#include <sys/stat.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>
#include <optional>
#include <string>

#include <gtest/gtest.h>

#include "tests/e2e/cri_driver.h"
#include "tests/e2e/e2e_shared.h"
#include "tests/e2e/e2e_stage.h"
#include "tests/support/http_client.h"
#include "tests/support/statlet_daemon.h"

namespace statlet::e2e {
namespace {

using std::chrono::milliseconds;

constexpr char kOomNamespace[] = "e2e-oom";
constexpr char kPodName[] = "oom-restarts";
constexpr char kContainer[] = "oom";
constexpr int64_t kOomLimitBytes = 32 << 20;  // dd's 64 MiB buffer does not fit
// Generous for a sanitized agent on a busy two-core machine: a pass takes well under this.
constexpr milliseconds kDeadline(60000);

// The value of the first series of `family` whose labels include `want`; none when the
// scrape has no such series (or failed: `why` says).
std::optional<double> Scraped(int port, const std::string& family, const std::map<std::string, std::string>& want,
                              std::string* why) {
  auto resp = testing::TimedGet(port, "/metrics", "", milliseconds(10000)).response;
  if (!resp || resp->status != 200) {
    *why = "GET /metrics failed";
    return std::nullopt;
  }
  auto samples = ParseExposition(resp->body);
  if (!samples.ok()) {
    *why = "unparsable /metrics: " + samples.status().ToString();
    return std::nullopt;
  }
  for (const Sample& s : *samples) {
    if (s.name != family) continue;
    bool all = true;
    for (const auto& [k, v] : want) {
      auto it = s.labels.find(k);
      all = all && it != s.labels.end() && it->second == v;
    }
    if (all) return s.value;
  }
  *why = "no " + family + " series";
  return std::nullopt;
}

std::optional<double> OomKillsByName(int port, std::string* why) {
  return Scraped(port, "statlet_container_oom_kills_total",
                 {{"namespace", kOomNamespace}, {"pod", kPodName}, {"container", kContainer}}, why);
}

// "" once a scrape shows `want`, else what the last one showed.
std::string WaitForCount(int port, double want) {
  return Eventually(kDeadline, [&] {
    std::string why;
    std::optional<double> got = OomKillsByName(port, &why);
    if (!got) return why;
    return *got == want ? std::string() : "reads " + std::to_string(*got) + ", want " + std::to_string(want);
  });
}

TEST(E2eOomRestarts, OomKillsOfOneNameAddUpOverThreeAttempts) {
  REQUIRE_STAGE();
  CriDriver& driver = g_stage->driver();
  testing::DaemonOptions o;
  o.binary = STATLET_E2E_AGENT;
  o.dir = g_stage->dir();
  o.name = "oom-agent";
  o.cgroup_subtree = g_stage->cgroup_root();
  o.flags = {"--runtime.endpoint=unix://" + g_stage->dir() + "/containerd.sock", "--runtime.refresh-period=200ms",
             "--collector.exit-retention=1s", "--log.level=warn"};
  o.wait_until_ready = true;
  o.start_timeout = std::chrono::seconds(60);
  testing::Daemon agent(o);
  ASSERT_TRUE(agent.ok()) << agent.error();
  const int port = agent.port();
  const std::string go_dir = g_stage->dir() + "/oom-go";
  ASSERT_EQ(mkdir(go_dir.c_str(), 0755), 0) << go_dir;
  auto pod = driver.RunPod({kPodName, kOomNamespace, {{"app", kPodName}}});
  ASSERT_TRUE(pod.ok()) << pod.status().ToString() << "\n" << g_stage->Logs();
  struct RemoveAtEnd {
    CriDriver& driver;
    const Pod& pod;
    bool done = false;
    ~RemoveAtEnd() {
      if (!done) (void)driver.RemovePod(pod);
    }
  } remove{driver, *pod};

  for (uint32_t attempt = 0; attempt < 3; ++attempt) {
    lifecycle::ContainerConfig config;
    config.mutable_metadata()->set_name(kContainer);
    config.mutable_metadata()->set_attempt(attempt);
    config.mutable_image()->set_image(driver.image());
    const std::string go = "/go/" + std::to_string(attempt);
    for (const std::string& arg :
         {std::string("sh"), std::string("-c"),
          "dd if=/dev/zero of=/dev/null bs=64M count=1; until [ -e " + go + " ]; do usleep 20000; done; exit 137"}) {
      config.add_command(arg);
    }
    lifecycle::Mount* mount = config.add_mounts();
    mount->set_container_path("/go");
    mount->set_host_path(go_dir);
    mount->set_readonly(true);
    config.mutable_linux()->mutable_resources()->set_memory_limit_in_bytes(kOomLimitBytes);
    auto id = driver.StartContainer(*pod, config);
    ASSERT_TRUE(id.ok()) << "attempt " << attempt << ": " << id.status().ToString() << "\n" << g_stage->Logs();

    // While the attempt runs: its kill plus every earlier attempt's.
    const double want = attempt + 1;
    std::string why = WaitForCount(port, want);
    ASSERT_EQ(why, "") << "attempt " << attempt << " running\n" << agent.log();

    // Let it exit, as an OOM-killed container's restart follows its exit.
    std::ofstream(go_dir + "/" + std::to_string(attempt)).put('\n');
    why = Eventually(kDeadline, [&] {
      auto st = driver.ContainerStatus(*id);
      if (!st.ok()) return st.status().ToString();
      return st->state() == lifecycle::CONTAINER_EXITED ? std::string() : "state " + std::to_string(st->state());
    });
    ASSERT_EQ(why, "") << "attempt " << attempt << " did not exit";
    // Exited: the count stays (its cgroup gone, the instance is carried).
    why = WaitForCount(port, want);
    ASSERT_EQ(why, "") << "attempt " << attempt << " exited\n" << agent.log();
  }

  // No exit record of the attempts left (retention 1 s): the count is the accumulator's.
  std::string why = Eventually(kDeadline, [&] {
    std::string scrape_why;
    std::optional<double> records = Scraped(port, "statlet_container_exit_records", {}, &scrape_why);
    if (!records) return scrape_why;
    if (*records != 0) return std::to_string(*records) + " exit records held";
    std::optional<double> got = OomKillsByName(port, &scrape_why);
    if (!got) return scrape_why;
    return *got == 3 ? std::string() : "reads " + std::to_string(*got) + " with no exit record held, want 3";
  });
  ASSERT_EQ(why, "") << "after the records expired\n" << agent.log();

  // The pod gone: its names go with it (the stage agent's discovery test holds them to the
  // first scrape after the removal, as the pod's cgroup series).
  remove.done = true;
  Status removed = driver.RemovePod(*pod);
  ASSERT_TRUE(removed.ok()) << removed.ToString();
  why = Eventually(kDeadline, [&] {
    std::string scrape_why;
    std::optional<double> got = OomKillsByName(port, &scrape_why);
    if (got) return "still reads " + std::to_string(*got);
    return scrape_why == "no statlet_container_oom_kills_total series" ? std::string() : scrape_why;
  });
  EXPECT_EQ(why, "") << "after RemovePod";
}

}  // namespace
}  // namespace statlet::e2e
