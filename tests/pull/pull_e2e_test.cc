// Image pulls through statlet against a real containerd pulling from a real registry
// through the tests' rate-limiting proxy: progress reports, granularity, the no-progress
// timeout, shared pulls, cancellation, the 2019 KEP's states, PullImage and the calls
// passed to the runtime. One stage (containerd, registry, proxy, statlet) serves the suite.
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <optional>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/prometheus/promtool.h"
#include "tests/pull/pull_stage.h"
#include "tests/support/http_client.h"
#include "tests/support/tmux_session.h"
#include "tests/support/wait_for.h"

namespace statlet::pulltest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr int kRandomMiB = 64;
// The agent polls containerd's content store this often (its default).
constexpr milliseconds kPoll{250};

double Secs(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

// How `statlet pull` names a layer on screen (cmd/pull_display.cc): "sha256:" + 12 hex digits.
std::string ShortDigestForTest(const std::string& digest) { return digest.substr(0, 19); }

// The offset of one layer in a detailed report (0 when not listed).
uint64_t LayerOffset(const kep::PullImageWithProgressResponse& r, const std::string& digest) {
  for (const auto& d : r.details()) {
    if (d.layer() == digest) return d.offset();
  }
  return 0;
}

// The pulls a statlet runs now, from its /metrics (-1: no answer).
// One series' value on /metrics, by its name and labels as the scrape writes them; -1 when
// the scrape failed or has no such series.
int SeriesValue(int metrics_port, const std::string& series) {
  auto r = testing::TimedGet(metrics_port, "/metrics", "", seconds(5)).response;
  if (!r || r->status != 200) return -1;
  const std::string line = "\n" + series + " ";
  const size_t at = r->body.find(line);
  if (at == std::string::npos) return -1;
  return std::atoi(r->body.c_str() + at + line.size());
}

int PullsInFlight(int metrics_port) { return SeriesValue(metrics_port, "statlet_image_pulls_in_flight"); }

class PullE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = PullStage::Start();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    stage_ = s->release();
    auto img = stage_->PushImage("big", kRandomMiB, "pull-e2e");
    ASSERT_TRUE(img.ok()) << img.status().ToString();
    image_ = new TestImage(*img);
  }
  static void TearDownTestSuite() {
    delete stage_;
    stage_ = nullptr;
    delete image_;
  }
  void SetUp() override {
    ASSERT_NE(stage_, nullptr);
    stage_->proxy().Resume();
    stage_->proxy().SetRate(kDefaultRate);
    // A pull a previous test let finish after its last client left goes on until
    // containerd's PullImage answers, which is after the image's first name is there:
    // removed before that, the image gets a name again (and keeps its layer). The stage's
    // statlet counts the pull in flight until the answer.
    ASSERT_TRUE(testing::WaitFor([] { return PullsInFlight(stage_->e2e().metrics_port()) == 0; }, seconds(60)))
        << "a pull of an earlier test is still in flight: " << PullsInFlight(stage_->e2e().metrics_port());
    Status s = stage_->EnsureAbsent(*image_);
    ASSERT_TRUE(s.ok()) << s.ToString();
    stage_->proxy().DropConnections();  // each test starts without idle registry connections
    stage_->proxy().ResetCounters();
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << stage_->Logs();
  }
  // Waits until `call`'s last report shows at least `fraction` of the random layer.
  static bool WaitForLayer(const ProgressCall& call, double fraction, milliseconds timeout = seconds(30)) {
    const auto& big = image_->big();
    return testing::WaitFor(
        [&] {
          auto r = call.reports();
          return !r.empty() && LayerOffset(r.back().msg, big.digest) >= static_cast<uint64_t>(fraction * big.size);
        },
        timeout);
  }
  // What this run adds to a report's due time: three times the slowest of twenty ImageFsInfo
  // calls through statlet (passed to containerd), measured once. A bound on when something
  // arrives is the mechanism's own figure (a poll, an interval, a timeout) plus this, so a
  // sanitized build or a busy machine moves both sides alike.
  static double DeliverySlack() {
    static const double slack = [] {
      double worst = 0;
      for (int i = 0; i < 20; ++i) {
        auto ctx = e2e::CallContext(seconds(10));
        v1::ImageFsInfoResponse resp;
        const auto t0 = Clock::now();
        (void)stage_->statlet()->ImageFsInfo(ctx.get(), v1::ImageFsInfoRequest(), &resp);
        worst = std::max(worst, Secs(Clock::now() - t0));
      }
      // Measured while the machine is quiet; a pull under way (containerd writing, the
      // registry sending, a sanitized statlet) adds scheduling delay on 2 cores: 0.1 s at least.
      const double s = std::max(3 * worst, 0.1);
      std::printf("figure: delivery slack of this run %.3f s (worst call %.3f s)\n", s, worst);
      return s;
    }();
    return slack;
  }
  static std::string BigBlobGet() { return "GET /v2/" + image_->name + "/blobs/" + image_->big().digest; }
  int BigBlobDownloads() const { return stage_->proxy().CountRequests(BigBlobGet()); }
  int BigBlobConnections() const { return stage_->proxy().OpenConnectionsFor(BigBlobGet()); }

  static PullStage* stage_;
  static TestImage* image_;
};
PullStage* PullE2e::stage_ = nullptr;
TestImage* PullE2e::image_ = nullptr;

TEST_F(PullE2e, ProgressRisesToTheManifestTotalsAndTheImageIsThere) {
  ProgressCall call(stage_->statlet(), ProgressRequest(image_->ref, kep::TIME, 1, -1, /*detailed=*/true));
  grpc::Status st = call.Wait();
  ASSERT_TRUE(st.ok()) << st.error_message();
  auto reports = call.reports();
  ASSERT_GE(reports.size(), 3u);
  EXPECT_LT(Secs(reports.front().at - call.started()), Secs(kPoll) + DeliverySlack())
      << "the first report waits for nothing";

  uint64_t prev = 0;
  std::map<std::string, uint64_t> prev_layer;
  int midway = 0;
  bool total_seen = false;
  for (size_t i = 0; i < reports.size(); ++i) {
    const auto& m = reports[i].msg;
    EXPECT_GE(m.offset().value(), prev) << "report " << i;
    prev = m.offset().value();
    if (m.has_total()) {
      total_seen = true;
      EXPECT_EQ(m.total().value(), image_->total) << "report " << i;
      ASSERT_EQ(m.details_size(), static_cast<int>(image_->layers.size())) << "report " << i;
      for (size_t l = 0; l < image_->layers.size(); ++l) {
        const auto& d = m.details(static_cast<int>(l));
        EXPECT_EQ(d.layer(), image_->layers[l].digest);
        EXPECT_EQ(d.total(), image_->layers[l].size);
        EXPECT_LE(d.offset(), d.total());
        EXPECT_GE(d.offset(), prev_layer[d.layer()]) << d.layer() << " went back in report " << i;
        prev_layer[d.layer()] = d.offset();
      }
      if (m.offset().value() > image_->layers[0].size && m.offset().value() < image_->total) ++midway;
    } else {
      EXPECT_FALSE(total_seen) << "the total disappeared in report " << i;
    }
  }
  EXPECT_GE(midway, 1) << "no report while the random layer was arriving";
  const auto& last = reports.back().msg;
  EXPECT_EQ(last.image_ref(), image_->config_digest);
  EXPECT_EQ(last.offset().value(), image_->total);
  EXPECT_EQ(last.total().value(), image_->total);
  ASSERT_EQ(last.details_size(), 2);
  EXPECT_EQ(last.details(0).stage(), kep::LAYER_PRESENT) << "the busybox layer is the sandbox image's";
  EXPECT_EQ(last.details(1).stage(), kep::LAYER_DOWNLOADED);
  auto has = stage_->ContainerdHasImage(image_->ref);
  ASSERT_TRUE(has.ok()) << has.status().ToString();
  EXPECT_TRUE(*has);
}

TEST_F(PullE2e, TimeGranularityIsHonouredWithinOneInterval) {
  ProgressCall call(stage_->statlet(), ProgressRequest(image_->ref, kep::TIME, 1, -1, /*detailed=*/false));
  ASSERT_TRUE(call.Wait().ok());
  auto reports = call.reports();
  ASSERT_GE(reports.size(), 4u) << "a 3 s pull at 1 s intervals";
  // The first report goes out at once, one more as soon as the image's total is known; every
  // other one but the last (sent when the pull ends) is on the 1 s grid of the first, each
  // within one poll of its due time.
  ASSERT_FALSE(reports[0].msg.has_total());
  ASSERT_TRUE(reports[1].msg.has_total());
  const double slack = DeliverySlack();
  EXPECT_LT(Secs(reports[1].at - reports[0].at), Secs(kPoll) + slack)
      << "the total does not wait for the next interval";
  for (size_t i = 2; i + 1 < reports.size(); ++i) {
    double due = Secs(reports[i].at - reports[0].at) - static_cast<double>(i - 1);
    EXPECT_GE(due, -slack) << "report " << i << " came before its time";
    EXPECT_LE(due, Secs(kPoll) + slack) << "report " << i << " came more than a poll after its time";
  }
  for (const auto& r : reports) EXPECT_EQ(r.msg.details_size(), 0) << "summarized reports carry no details";
}

TEST_F(PullE2e, SizeGranularityIsHonouredWithinOneInterval) {
  const uint64_t every = 8ull << 20;
  ProgressCall call(stage_->statlet(), ProgressRequest(image_->ref, kep::SIZE, every, -1, false));
  ASSERT_TRUE(call.Wait().ok());
  auto reports = call.reports();
  ASSERT_GE(reports.size(), 4u);
  int steps = 0;
  ASSERT_TRUE(reports[1].msg.has_total()) << "the total is reported as soon as it is known";
  for (size_t i = 2; i + 1 < reports.size(); ++i) {
    uint64_t step = reports[i].msg.offset().value() - reports[i - 1].msg.offset().value();
    EXPECT_GE(step, every) << "report " << i;
    EXPECT_LT(step, 2 * every) << "report " << i;
    ++steps;
  }
  EXPECT_GE(steps, static_cast<int>(image_->big().size / (2 * every)));
}

TEST_F(PullE2e, AStalledRegistryEndsThePullWithDeadlineExceededAndLeavesNoImage) {
  const int timeout = 3;
  ProgressCall call(stage_->statlet(), ProgressRequest(image_->ref, kep::TIME, 1, timeout, true));
  ASSERT_TRUE(WaitForLayer(call, 0.15));
  stage_->proxy().Pause();
  const auto paused = Clock::now();
  grpc::Status st = call.Wait(seconds(30));
  // The registry's last byte: the pause, or a send the proxy had under way when it came.
  const double after = Secs(call.ended() - std::max(paused, stage_->proxy().last_delivery()));
  stage_->proxy().Resume();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  EXPECT_NE(st.error_message().find(image_->big().digest), std::string::npos) << st.error_message();
  // No progress is seen at poll ticks: the last byte up to a poll before the pause, the
  // timeout's end up to a poll after it.
  EXPECT_GE(after, timeout - Secs(kPoll) - DeliverySlack());
  EXPECT_LE(after, timeout + 2 * Secs(kPoll) + DeliverySlack());
  // containerd's pull was cancelled: it hung up on the (paused) download, and keeps no image.
  EXPECT_TRUE(testing::WaitFor([&] { return BigBlobConnections() == 0; }, seconds(2)))
      << BigBlobConnections() << " downloads still open";
  auto has = stage_->ContainerdHasImage(image_->ref);
  ASSERT_TRUE(has.ok());
  EXPECT_FALSE(*has);
  // Nothing holds the half-written layer any more: containerd's next collection removes it.
  ASSERT_TRUE(stage_->CollectGarbage().ok());
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        auto in = stage_->ContainerdIngests();
        return in.ok() && std::none_of(in->begin(), in->end(), [&](const std::string& r) {
                 return r.find(image_->big().digest) != std::string::npos;
               });
      },
      seconds(5)));
}

TEST_F(PullE2e, ThreeClientsJoiningAtDifferentMomentsShareOneDownload) {
  ProgressCall a(stage_->statlet(), ProgressRequest(image_->ref, kep::TIME, 1, -1, true));
  ASSERT_TRUE(WaitForLayer(a, 0.10));
  ProgressCall b(stage_->statlet(), ProgressRequest(image_->ref, kep::TIME, 1, -1, true));
  ASSERT_TRUE(WaitForLayer(a, 0.30));
  ProgressCall c(stage_->statlet(), ProgressRequest(image_->ref, kep::SIZE, 4 << 20, -1, true));
  ASSERT_TRUE(WaitForLayer(a, 0.50));
  b.Cancel();  // one leaves early: nothing changes for the others
  grpc::Status sa = a.Wait(), sb = b.Wait(), sc = c.Wait();
  EXPECT_TRUE(sa.ok()) << sa.error_message();
  EXPECT_EQ(sb.error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(sc.ok()) << sc.error_message();
  // C joined the pull in flight: its first report already shows bytes of the random layer.
  auto rc = c.reports();
  ASSERT_FALSE(rc.empty());
  EXPECT_GE(LayerOffset(rc.front().msg, image_->big().digest), image_->big().size / 4);
  EXPECT_EQ(a.reports().back().msg.image_ref(), image_->config_digest);
  EXPECT_EQ(rc.back().msg.image_ref(), image_->config_digest);
  // One runtime pull (containerd resolves the tag once per PullImage), and exactly one
  // download of the random layer reached the registry.
  EXPECT_EQ(stage_->proxy().CountRequests("HEAD /v2/" + image_->name + "/manifests/"), 1);
  EXPECT_EQ(BigBlobDownloads(), 1);
  EXPECT_LT(stage_->proxy().delivered_bytes(), image_->big().size + (1 << 20));
  EXPECT_GE(stage_->proxy().delivered_bytes(), image_->big().size);
}

TEST_F(PullE2e, TheLastClientLeavingLetsThePullFinish) {
  ProgressCall a(stage_->statlet(), ProgressRequest(image_->ref, kep::TIME, 1, -1, true));
  ASSERT_TRUE(WaitForLayer(a, 0.20));
  a.Cancel();
  EXPECT_EQ(a.Wait().error_code(), grpc::StatusCode::CANCELLED);
  EXPECT_TRUE(testing::WaitFor(
      [&] {
        auto has = stage_->ContainerdHasImage(image_->ref);
        return has.ok() && *has;
      },
      seconds(30)));
  EXPECT_EQ(BigBlobDownloads(), 1);
}

TEST_F(PullE2e, WithoutKeepAbandonedTheLastClientLeavingCancelsThePull) {
  auto agent = stage_->StartAgent("no-keep", {"--no-pull.keep-abandoned"});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  auto stub = stage_->ImagesAt(agent->socket);
  {
    ProgressCall a(stub.get(), ProgressRequest(image_->ref, kep::TIME, 1, -1, true));
    ASSERT_TRUE(WaitForLayer(a, 0.20));
    a.Cancel();
    EXPECT_EQ(a.Wait().error_code(), grpc::StatusCode::CANCELLED);
  }
  EXPECT_TRUE(testing::WaitFor([&] { return BigBlobConnections() == 0; }, seconds(2)));
  auto has = stage_->ContainerdHasImage(image_->ref);
  ASSERT_TRUE(has.ok());
  EXPECT_FALSE(*has);
  stage_->StopAgent(&*agent);
}

TEST_F(PullE2e, PullImageProgressReportsTheStatesOfThe2019Kep) {
  grpc::ClientContext ctx;
  v1::PullImageRequest req;
  req.mutable_image()->set_image(image_->ref);
  auto reader = stage_->statlet()->PullImageProgress(&ctx, req);
  std::vector<kep::PullImageProgressResponse> msgs;
  kep::PullImageProgressResponse m;
  while (reader->Read(&m)) msgs.push_back(m);
  grpc::Status st = reader->Finish();
  ASSERT_TRUE(st.ok()) << st.error_message();
  ASSERT_GE(msgs.size(), 3u);
  EXPECT_EQ(msgs.front().state(), kep::STARTED);
  uint64_t prev = 0;
  for (size_t i = 1; i + 1 < msgs.size(); ++i) {
    EXPECT_EQ(msgs[i].state(), kep::PULLING) << i;
    EXPECT_GE(msgs[i].current_offset(), prev);
    prev = msgs[i].current_offset();
    if (msgs[i].size() != 0) {
      EXPECT_EQ(msgs[i].size(), image_->total);
    }
  }
  EXPECT_EQ(msgs.back().state(), kep::DONE);
  EXPECT_EQ(msgs.back().reason(), image_->config_digest);
  EXPECT_EQ(msgs.back().size(), image_->total);
  EXPECT_EQ(msgs.back().current_offset(), image_->total);
}

TEST_F(PullE2e, PullImageGoesThroughTheEngine) {
  auto ctx = e2e::CallContext(seconds(60));
  v1::PullImageRequest req;
  req.mutable_image()->set_image(image_->ref);
  v1::PullImageResponse resp;
  grpc::Status st = stage_->statlet()->PullImage(ctx.get(), req, &resp);
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.image_ref(), image_->config_digest);
  EXPECT_EQ(BigBlobDownloads(), 1);
}

TEST_F(PullE2e, PullImageGetsTheConfiguredNoProgressTimeout) {
  auto agent = stage_->StartAgent("timeout", {"--pull.no-progress-timeout=2s"});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  auto stub = stage_->ImagesAt(agent->socket);
  grpc::Status st;
  auto started = Clock::now();
  std::thread pull([&] {
    auto ctx = e2e::CallContext(seconds(60));
    v1::PullImageRequest req;
    req.mutable_image()->set_image(image_->ref);
    v1::PullImageResponse resp;
    st = stub->PullImage(ctx.get(), req, &resp);
  });
  ASSERT_TRUE(testing::WaitFor([&] { return stage_->proxy().delivered_bytes() > (8u << 20); }, seconds(30)));
  stage_->proxy().Pause();
  const auto paused = Clock::now();
  pull.join();
  stage_->proxy().Resume();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  EXPECT_LE(Secs(Clock::now() - paused), 2 + 2 * Secs(kPoll) + DeliverySlack());  // --pull.no-progress-timeout=2s
  EXPECT_GT(Secs(Clock::now() - started), 2.0);
  auto has = stage_->ContainerdHasImage(image_->ref);
  ASSERT_TRUE(has.ok());
  EXPECT_FALSE(*has);
  stage_->StopAgent(&*agent);
}

TEST_F(PullE2e, OtherImageCallsArePassedToTheRuntime) {
  {
    auto ctx = e2e::CallContext(seconds(60));
    v1::PullImageRequest req;
    req.mutable_image()->set_image(image_->ref);
    v1::PullImageResponse resp;
    ASSERT_TRUE(stage_->statlet()->PullImage(ctx.get(), req, &resp).ok());
  }
  auto same = [&](auto call, const auto& req, auto* a, auto* b) {
    auto c1 = e2e::CallContext(seconds(10));
    auto c2 = e2e::CallContext(seconds(10));
    grpc::Status s1 = call(stage_->statlet(), c1.get(), req, a);
    grpc::Status s2 = call(stage_->containerd(), c2.get(), req, b);
    EXPECT_TRUE(s1.ok()) << s1.error_message();
    EXPECT_TRUE(s2.ok()) << s2.error_message();
  };
  v1::ImageStatusRequest status_req;
  status_req.mutable_image()->set_image(image_->ref);
  v1::ImageStatusResponse s1, s2;
  same([](v1::ImageService::Stub* s, grpc::ClientContext* c, const v1::ImageStatusRequest& r,
          v1::ImageStatusResponse* o) { return s->ImageStatus(c, r, o); },
       status_req, &s1, &s2);
  EXPECT_EQ(s1.image().id(), image_->config_digest);
  EXPECT_EQ(s1.SerializeAsString(), s2.SerializeAsString());

  v1::ListImagesResponse l1, l2;
  same([](v1::ImageService::Stub* s, grpc::ClientContext* c, const v1::ListImagesRequest& r,
          v1::ListImagesResponse* o) { return s->ListImages(c, r, o); },
       v1::ListImagesRequest(), &l1, &l2);
  // The same images byte for byte; containerd lists them in no fixed order, call to call.
  auto by_id = [](v1::ListImagesResponse* r) {
    std::sort(r->mutable_images()->begin(), r->mutable_images()->end(),
              [](const v1::Image& a, const v1::Image& b) { return a.id() < b.id(); });
    return r->SerializeAsString();
  };
  EXPECT_EQ(by_id(&l1), by_id(&l2));
  EXPECT_GE(l1.images_size(), 2);

  v1::ImageFsInfoResponse f1, f2;
  same([](v1::ImageService::Stub* s, grpc::ClientContext* c, const v1::ImageFsInfoRequest& r,
          v1::ImageFsInfoResponse* o) { return s->ImageFsInfo(c, r, o); },
       v1::ImageFsInfoRequest(), &f1, &f2);
  ASSERT_GE(f1.image_filesystems_size(), 1);
  EXPECT_EQ(f1.image_filesystems(0).fs_id().mountpoint(), f2.image_filesystems(0).fs_id().mountpoint());

  {
    auto ctx = e2e::CallContext(seconds(30));
    v1::RemoveImageRequest req;
    req.mutable_image()->set_image(image_->ref);
    v1::RemoveImageResponse resp;
    grpc::Status st = stage_->statlet()->RemoveImage(ctx.get(), req, &resp);
    EXPECT_TRUE(st.ok()) << st.error_message();
  }
  auto has = stage_->ContainerdHasImage(image_->ref);
  ASSERT_TRUE(has.ok());
  EXPECT_FALSE(*has);
}

TEST_F(PullE2e, BadRequestsGetClearErrors) {
  auto code = [&](kep::PullImageWithProgressRequest req) {
    ProgressCall call(stage_->statlet(), std::move(req));
    return call.Wait(seconds(30));
  };
  EXPECT_EQ(code(ProgressRequest("", kep::TIME, 1, -1, false)).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_EQ(code(ProgressRequest("Upper/Case:1", kep::TIME, 1, -1, false)).error_code(),
            grpc::StatusCode::INVALID_ARGUMENT);
  auto bad_granularity = ProgressRequest(image_->ref, kep::TIME, 1, -1, false);
  bad_granularity.set_granularity_type(static_cast<kep::PullImageProgressGranularity>(7));
  EXPECT_EQ(code(bad_granularity).error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  grpc::Status tiny = code(ProgressRequest(image_->ref, kep::SIZE, 1000, -1, false));
  EXPECT_EQ(tiny.error_code(), grpc::StatusCode::INVALID_ARGUMENT);
  EXPECT_NE(tiny.error_message().find("1048576"), std::string::npos) << tiny.error_message();
  // An image the registry does not have: the runtime's error, passed on.
  std::string missing = "127.0.0.1:" + std::to_string(stage_->proxy().port()) + "/statlet/missing:1";
  grpc::Status nf = code(ProgressRequest(missing, kep::TIME, 1, -1, false));
  EXPECT_FALSE(nf.ok());
  EXPECT_NE(nf.error_message().find("not found"), std::string::npos) << nf.error_message();
  EXPECT_EQ(BigBlobDownloads(), 0);
}

// ---------------------------------------------------------------------------- node view

// Reads the agent's /imagepulls and keeps every distinct body in a file of its own (named
// `prefix` + a count), for the schema check at the end; null when it did not answer.
class ViewReader {
 public:
  ViewReader(int metrics_port, std::string prefix) : port_(metrics_port), prefix_(std::move(prefix)) {}
  nlohmann::json Read() {
    auto r = testing::TimedGet(port_, "/imagepulls", "", std::chrono::seconds(2)).response;
    if (!r || r->status != 200) return nlohmann::json();
    if (r->body != last_body_) {
      last_body_ = r->body;
      files_.push_back(prefix_ + std::to_string(files_.size()) + ".json");
      std::ofstream(files_.back()) << r->body;
    }
    return nlohmann::json::parse(r->body);
  }
  const std::vector<std::string>& files() const { return files_; }

 private:
  int port_;
  std::string prefix_;
  std::string last_body_;
  std::vector<std::string> files_;
};

// Validates files holding NodeImagePulls objects against the CRD's schema (python3-jsonschema).
Status ValidateObjects(const std::vector<std::string>& files, const std::string& log) {
  std::vector<std::string> argv = {"/usr/bin/python3", STATLET_APISERVER_STUB, "validate", STATLET_NODE_PULLS_CRD};
  argv.insert(argv.end(), files.begin(), files.end());
  return Run(argv, log);
}

TEST_F(PullE2e, TheNodeObjectIsRebuiltEveryPeriodAndValidatesAgainstTheCrd) {
  auto agent = stage_->StartAgent("view", {"--pull.status-period=1s", "--pull.node-name=node-a"});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  ASSERT_GT(agent->metrics_port, 0);
  auto stub = stage_->ImagesAt(agent->socket);
  struct Seen {
    Clock::time_point at;
    std::string body;
  };
  std::vector<Seen> changes;
  ProgressCall call(stub.get(), ProgressRequest(image_->ref, kep::TIME, 1, -1, false));
  Clock::time_point ended{};
  // Read the object every 50 ms until a second and a half after the pull ended.
  while (ended == Clock::time_point{} || Clock::now() - ended < milliseconds(1500)) {
    if (ended == Clock::time_point{} && call.done()) ended = Clock::now();
    auto r = testing::TimedGet(agent->metrics_port, "/imagepulls", "", seconds(2)).response;
    ASSERT_TRUE(r) << "no answer to GET /imagepulls";
    ASSERT_EQ(r->status, 200);
    if (changes.empty() || changes.back().body != r->body) changes.push_back({Clock::now(), r->body});
    std::this_thread::sleep_for(milliseconds(50));  // the reading cadence of this test
  }
  ASSERT_TRUE(call.Wait().ok());
  // It changes once per period, not more often.
  ASSERT_GE(changes.size(), 3u);
  for (size_t i = 2; i < changes.size(); ++i) {
    // A 1 s period, seen at this test's 50 ms reading cadence.
    EXPECT_GE(Secs(changes[i].at - changes[i - 1].at), 1.0 - 0.05 - DeliverySlack()) << "change " << i;
  }
  std::vector<std::string> files;
  bool pulling_seen = false;
  for (size_t i = 0; i < changes.size(); ++i) {
    files.push_back(stage_->dir() + "/view-" + std::to_string(i) + ".json");
    std::ofstream(files.back()) << changes[i].body;
    auto doc = nlohmann::json::parse(changes[i].body);
    EXPECT_EQ(doc["metadata"]["name"], "node-a");
    for (const auto& e : doc["status"]["images"]) {
      if (e["state"] == "Pulling" && e["bytesDone"].get<uint64_t>() > 0 &&
          e["bytesDone"].get<uint64_t>() < image_->total) {
        pulling_seen = true;
        EXPECT_EQ(e["bytesTotal"].get<uint64_t>(), image_->total);
      }
    }
  }
  EXPECT_TRUE(pulling_seen);
  auto last = nlohmann::json::parse(changes.back().body);
  ASSERT_EQ(last["status"]["images"].size(), 1u);
  EXPECT_EQ(last["status"]["images"][0]["state"], "Done");
  EXPECT_EQ(last["status"]["images"][0]["imageRef"], image_->config_digest);
  EXPECT_EQ(last["status"]["done"], 1);
  Status v = ValidateObjects(files, stage_->dir() + "/validate.log");
  EXPECT_TRUE(v.ok()) << v.ToString();
  stage_->StopAgent(&*agent);
}

// A kubelet-like PullImage: the pod's sandbox_config with the image, as the kubelet sends it.
v1::PullImageRequest KubeletPull(const std::string& image, const std::string& ns, const std::string& pod,
                                 const std::string& uid) {
  v1::PullImageRequest req;
  req.mutable_image()->set_image(image);
  auto* m = req.mutable_sandbox_config()->mutable_metadata();
  m->set_namespace_(ns);
  m->set_name(pod);
  m->set_uid(uid);
  m->set_attempt(0);
  req.mutable_sandbox_config()->set_log_directory("/var/log/pods/" + ns + "_" + pod + "_" + uid);
  return req;
}

// The entry of /imagepulls for `image` carried by statlet, or null.
const nlohmann::json* ImageEntry(const nlohmann::json& doc, const std::string& image) {
  for (const auto& e : doc["status"]["images"]) {
    if (e["image"] == image && !e.contains("carrier")) return &e;
  }
  return nullptr;
}

// User plus system CPU seconds of process `pid` (/proc/<pid>/stat fields 14 and 15).
double ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t close = stat.rfind(')');
  if (close == std::string::npos) return 0;
  std::istringstream rest(stat.substr(close + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// The entries of pulls statlet does not carry, seen in containerd namespace `ns`.
std::vector<nlohmann::json> ObservedEntries(const nlohmann::json& doc, const std::string& ns) {
  std::vector<nlohmann::json> out;
  if (!doc.is_object() || !doc.contains("status")) return out;
  for (const auto& e : doc["status"]["images"]) {
    if (e.value("carrier", "") == "containerd" && e.value("containerdNamespace", "") == ns) out.push_back(e);
  }
  return out;
}

// The layer `digest` of an entry (null when not listed).
const nlohmann::json* LayerOf(const nlohmann::json& entry, const std::string& digest) {
  if (!entry.contains("layers")) return nullptr;
  for (const auto& l : entry["layers"]) {
    if (l["digest"] == digest) return &l;
  }
  return nullptr;
}

TEST_F(PullE2e, AKubeletPullThroughTheProxyIsSeenWithItsPodAndLayers) {
  auto agent = stage_->StartAgent("kubelet", {"--cri.proxy", "--pull.status-period=1s", "--pull.node-name=node-k",
                                              "--pull.no-progress-timeout=2s"});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  auto stub = stage_->ImagesAt(agent->socket);
  const std::string uid = "5d0c7a52-1b8e-4d7e-9a55-3f0e6f1c2b11";
  grpc::Status st;
  v1::PullImageResponse resp;
  std::thread pull([&] {
    auto ctx = e2e::CallContext(seconds(60));
    st = stub->PullImage(ctx.get(), KubeletPull(image_->ref, "shop", "web-0", uid), &resp);
  });
  // From the first byte the registry sends to the pull's first appearance in the view.
  ASSERT_TRUE(testing::WaitFor([&] { return stage_->proxy().delivered_bytes() > 0; }, seconds(30)));
  const auto first_byte = Clock::now();
  Clock::time_point appeared{};
  bool layer_midway = false;
  ViewReader view(agent->metrics_port, stage_->dir() + "/kubelet-view-");
  auto read_view = [&] { return view.Read(); };
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto doc = read_view();
        const nlohmann::json* e = doc.is_null() ? nullptr : ImageEntry(doc, image_->ref);
        if (e == nullptr) return false;
        if (appeared == Clock::time_point{}) appeared = Clock::now();
        EXPECT_EQ((*e)["pods"],
                  nlohmann::json::parse(R"([{"namespace":"shop","name":"web-0","uid":")" + uid + R"("}])"));
        if ((*e)["state"] != "Pulling" || !e->contains("layers")) return false;
        for (const auto& l : (*e)["layers"]) {
          if (l["digest"] == image_->big().digest && l["state"] == "downloading" &&
              l["bytesDone"].get<uint64_t>() > 0 && l["bytesDone"].get<uint64_t>() < image_->big().size) {
            EXPECT_EQ(l["bytesTotal"].get<uint64_t>(), image_->big().size);
            layer_midway = true;
          }
        }
        return layer_midway;
      },
      seconds(30)));
  std::printf("figure: first byte to the view (1 s status period) %.3f s\n", Secs(appeared - first_byte));
  EXPECT_LE(Secs(appeared - first_byte), 1.0 + Secs(kPoll) + DeliverySlack());  // --pull.status-period=1s
  pull.join();
  ASSERT_TRUE(st.ok()) << st.error_message();
  EXPECT_EQ(resp.image_ref(), image_->config_digest);
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto doc = read_view();
        const nlohmann::json* e = doc.is_null() ? nullptr : ImageEntry(doc, image_->ref);
        return e != nullptr && (*e)["state"] == "Done" && (*e)["pods"][0]["name"] == "web-0";
      },
      seconds(10)));

  // The same pod's next pull stalls: DEADLINE_EXCEEDED for the kubelet (its image-pull
  // back-off follows), Stalled in the view, still naming the pod.
  ASSERT_TRUE(stage_->EnsureAbsent(*image_).ok());
  stage_->proxy().ResetCounters();
  std::thread again([&] {
    auto ctx = e2e::CallContext(seconds(60));
    st = stub->PullImage(ctx.get(), KubeletPull(image_->ref, "shop", "web-0", uid), &resp);
  });
  ASSERT_TRUE(testing::WaitFor([&] { return stage_->proxy().delivered_bytes() > (8u << 20); }, seconds(30)));
  stage_->proxy().Pause();
  again.join();
  stage_->proxy().Resume();
  EXPECT_EQ(st.error_code(), grpc::StatusCode::DEADLINE_EXCEEDED) << st.error_message();
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto doc = read_view();
        if (doc.is_null()) return false;
        for (const auto& e : doc["status"]["images"]) {
          if (e["image"] == image_->ref && e["state"] == "Stalled" && e["pods"][0]["uid"] == uid) return true;
        }
        return false;
      },
      seconds(10)));
  Status v = ValidateObjects(view.files(), stage_->dir() + "/validate-kubelet.log");
  EXPECT_TRUE(v.ok()) << v.ToString();
  stage_->StopAgent(&*agent);
}

// A progress stream (KEP-3542) through the proxy: the socket's router sends it to statlet's
// image service on its own gRPC server (cri/cri_server.cc) and streams its reports back
// one by one, up to the pulled image.
TEST_F(PullE2e, AProgressStreamThroughTheProxyReportsUpToThePulledImage) {
  auto agent = stage_->StartAgent("stream", {"--cri.proxy"});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  auto stub = stage_->ImagesAt(agent->socket);
  {
    ProgressCall call(stub.get(), ProgressRequest(image_->ref, kep::TIME, 1, -1, /*detailed=*/false));
    grpc::Status st = call.Wait();
    ASSERT_TRUE(st.ok()) << st.error_message();
    auto reports = call.reports();
    ASSERT_GE(reports.size(), 3u) << "a 3 s pull at 1 s intervals";
    const auto& last = reports.back().msg;
    EXPECT_EQ(last.image_ref(), image_->config_digest);
    EXPECT_EQ(last.offset().value(), image_->total);
  }
  auto has = stage_->ContainerdHasImage(image_->ref);
  ASSERT_TRUE(has.ok()) << has.status().ToString();
  EXPECT_TRUE(*has);
  stage_->StopAgent(&*agent);
}

// A pull made straight on containerd (`ctr -n k8s.io images pull`, as the kubelet's pulls
// are straight on containerd's CRI plugin) is seen by a statlet that does not carry it: in
// /imagepulls, from containerd's lease, ingests and image store, with the layer's bytes
// growing, then Done under the image's name. Throttled to nothing it becomes Stalled while
// it runs (statlet cannot cancel it) and leaves that state when bytes move again. A pull
// the same statlet carries shows once.
TEST_F(PullE2e, APullStraightOnContainerdIsSeenGrowingStalledAndDone) {
  auto agent = stage_->StartAgent(
      "observer", {"--pull.status-period=1s", "--pull.node-name=node-o", "--pull.no-progress-timeout=2s"});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  ViewReader view(agent->metrics_port, stage_->dir() + "/observer-view-");
  auto read_view = [&] { return view.Read(); };
  // The entry in flight for this image (its manifest names it), or null.
  const std::string in_flight_name = "127.0.0.1/" + image_->name + "@" + image_->manifest_digest;
  auto in_flight = [&](const nlohmann::json& doc) -> std::optional<nlohmann::json> {
    for (const auto& e : ObservedEntries(doc, "k8s.io")) {
      if (e["image"] == in_flight_name && !e.contains("completionTime")) return e;
    }
    return std::nullopt;
  };
  auto done_entries = [&](const nlohmann::json& doc) {
    int n = 0;
    for (const auto& e : ObservedEntries(doc, "k8s.io")) {
      n += e["image"] == image_->ref && e["state"] == "Done" && e["imageRef"] == image_->config_digest;
    }
    return n;
  };

  // The observer's whole CPU time (all its work, not only the watch), idle and during the
  // pull, beside a statlet with the same flags that watches no namespace, in the same windows.
  auto blind = stage_->StartAgent("blind", {"--pull.status-period=1s", "--pull.node-name=node-b",
                                            "--pull.no-progress-timeout=2s", "--pull.observe-namespaces="});
  ASSERT_TRUE(blind.ok()) << blind.status().ToString();
  const auto idle_from = Clock::now();
  const double idle_cpu0 = ProcessCpuSeconds(agent->pid), blind_idle0 = ProcessCpuSeconds(blind->pid);
  std::this_thread::sleep_for(seconds(5));  // the idle window measured, not a synchronisation
  const double idle_secs = Secs(Clock::now() - idle_from);
  const double idle_cpu = (ProcessCpuSeconds(agent->pid) - idle_cpu0) / idle_secs;
  const double blind_idle = (ProcessCpuSeconds(blind->pid) - blind_idle0) / idle_secs;

  // A quarter of the stage's rate: the 64 MiB layer takes about 13 s, a dozen views.
  stage_->proxy().SetRate(kDefaultRate / 4);
  const auto pull_from = Clock::now();
  const double pull_cpu0 = ProcessCpuSeconds(agent->pid), blind_pull0 = ProcessCpuSeconds(blind->pid);
  auto pid = stage_->StartCtrPull("k8s.io", image_->ref);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(testing::WaitFor([&] { return stage_->proxy().delivered_bytes() > 0; }, seconds(30)));
  const auto first_byte = Clock::now();
  Clock::time_point appeared{};
  std::vector<uint64_t> layer_bytes;  // the big layer's bytesDone while it downloads, as seen
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto doc = read_view();
        if (doc.is_null()) return false;
        if (auto e = in_flight(doc)) {
          if (appeared == Clock::time_point{}) appeared = Clock::now();
          EXPECT_EQ((*e)["bytesTotal"].get<uint64_t>(), image_->total);
          EXPECT_EQ((*e)["clients"], 0);
          const nlohmann::json* l = LayerOf(*e, image_->big().digest);
          if (l != nullptr && (*l)["state"] == "downloading") {
            EXPECT_EQ((*l)["bytesTotal"].get<uint64_t>(), image_->big().size);
            const uint64_t b = (*l)["bytesDone"].get<uint64_t>();
            if (layer_bytes.empty() || b != layer_bytes.back()) layer_bytes.push_back(b);
          }
        }
        return done_entries(doc) == 1;
      },
      seconds(60)));
  const double pull_secs = Secs(Clock::now() - pull_from);
  const double pull_cpu = (ProcessCpuSeconds(agent->pid) - pull_cpu0) / pull_secs;
  const double blind_pull = (ProcessCpuSeconds(blind->pid) - blind_pull0) / pull_secs;
  stage_->StopAgent(&*blind);
  std::printf(
      "figure: process CPU, watching k8s.io and default / watching none: idle %.2f / %.2f ms/s, during a "
      "ctr pull %.2f / %.2f ms/s\n",
      1000 * idle_cpu, 1000 * blind_idle, 1000 * pull_cpu, 1000 * blind_pull);
  ASSERT_NE(appeared, Clock::time_point{}) << "the pull was never seen in flight";
  std::printf("figure: ctr pull, first byte to the view (1 s watch interval, 1 s status period) %.3f s\n",
              Secs(appeared - first_byte));
  std::printf("figure: distinct bytesDone values of the big layer seen: %zu\n", layer_bytes.size());
  // The idle watch asks every second (--pull.observe-interval), the view is rebuilt every second.
  EXPECT_LE(Secs(appeared - first_byte), 1.0 + 1.0 + 2 * Secs(kPoll) + DeliverySlack());
  ASSERT_GE(layer_bytes.size(), 2u) << "the layer's bytes were not seen growing";
  EXPECT_TRUE(std::is_sorted(layer_bytes.begin(), layer_bytes.end()));
  EXPECT_EQ(WaitPid(*pid, seconds(30)), 0) << e2e::Tail(stage_->dir() + "/ctr-pull.log", 10);
  {
    auto doc = read_view();
    for (const auto& e : ObservedEntries(doc, "k8s.io")) {
      if (e["image"] != image_->ref) continue;
      EXPECT_EQ(e["bytesDone"].get<uint64_t>(), image_->total);
      EXPECT_TRUE(e.contains("completionTime"));
    }
    // Counted in the view and the observed pull families, not in statlet's own.
    EXPECT_EQ(PullsInFlight(agent->metrics_port), 0);
    EXPECT_EQ(SeriesValue(agent->metrics_port, "statlet_image_pulls_observed_completed_total{result=\"succeeded\"}"),
              1);
  }

  // Again, the registry stopping mid-layer: Stalled after the 2 s timeout, still running.
  ASSERT_TRUE(stage_->CtrRemoveImage("k8s.io", image_->ref).ok());
  ASSERT_TRUE(stage_->EnsureAbsent(*image_).ok());
  stage_->proxy().SetRate(kDefaultRate);
  stage_->proxy().ResetCounters();
  pid = stage_->StartCtrPull("k8s.io", image_->ref);
  ASSERT_TRUE(pid.ok());
  ASSERT_TRUE(testing::WaitFor([&] { return stage_->proxy().delivered_bytes() > (8u << 20); }, seconds(30)));
  stage_->proxy().Pause();
  const auto paused = Clock::now();
  Clock::time_point stalled_at{};
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto doc = read_view();
        auto e = doc.is_null() ? std::nullopt : in_flight(doc);
        if (!e || (*e)["state"] != "Stalled") return false;
        EXPECT_NE((*e)["reason"].get<std::string>().find("cannot cancel"), std::string::npos) << (*e)["reason"];
        stalled_at = Clock::now();
        return true;
      },
      seconds(30)));
  std::printf("figure: ctr pull, registry paused to Stalled in the view (2 s timeout, 1 s period) %.3f s\n",
              Secs(stalled_at - paused));
  EXPECT_GE(Secs(stalled_at - paused), 2.0 - Secs(kPoll));
  // The timeout and the view's period, plus three polls: the last bytes sent before the pause
  // still reach the ingest through ctr's socket and its write stream to containerd (seen at
  // most a poll later), the timeout is checked at a poll, and a poll's own calls move the
  // next one.
  EXPECT_LE(Secs(stalled_at - paused), 2.0 + 1.0 + 3 * Secs(kPoll) + DeliverySlack());
  EXPECT_EQ(waitpid(*pid, nullptr, WNOHANG), 0) << "ctr ended while paused";
  // Alertable: the stall is on /metrics while the pull runs on.
  EXPECT_EQ(SeriesValue(agent->metrics_port, "statlet_image_pulls_observed_in_flight{state=\"stalled\"}"), 1);
  EXPECT_GE(SeriesValue(agent->metrics_port, "statlet_image_pull_observed_stalls_total"), 1);
  stage_->proxy().Resume();
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto doc = read_view();
        auto e = doc.is_null() ? std::nullopt : in_flight(doc);
        return e && (*e)["state"] == "Pulling";
      },
      seconds(30)))
      << "the pull did not leave Stalled when bytes moved again";
  ASSERT_TRUE(testing::WaitFor([&] { return done_entries(read_view()) == 2; }, seconds(60)));
  EXPECT_EQ(WaitPid(*pid, seconds(30)), 0) << e2e::Tail(stage_->dir() + "/ctr-pull.log", 10);

  // A pull the observer carries itself shows once: as its own, never as seen in containerd.
  ASSERT_TRUE(stage_->CtrRemoveImage("k8s.io", image_->ref).ok());
  ASSERT_TRUE(stage_->EnsureAbsent(*image_).ok());
  const size_t observed_before = ObservedEntries(read_view(), "k8s.io").size();
  auto stub = stage_->ImagesAt(agent->socket);
  ProgressCall call(stub.get(), ProgressRequest(image_->ref, kep::TIME, 1, -1, false));
  bool own_seen = false;
  while (!call.done()) {
    auto doc = read_view();
    if (doc.is_null()) continue;
    own_seen |= ImageEntry(doc, image_->ref) != nullptr;
    EXPECT_EQ(ObservedEntries(doc, "k8s.io").size(), observed_before);
    std::this_thread::sleep_for(milliseconds(100));  // this test's reading cadence
  }
  ASSERT_TRUE(call.Wait().ok());
  // Two periods after the end: the lease is gone and nothing new appeared.
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        auto doc = read_view();
        const nlohmann::json* e = doc.is_null() ? nullptr : ImageEntry(doc, image_->ref);
        return e != nullptr && (*e)["state"] == "Done";
      },
      seconds(10)));
  const auto settle = Clock::now() + seconds(2);
  while (Clock::now() < settle) {
    EXPECT_EQ(ObservedEntries(read_view(), "k8s.io").size(), observed_before);
    std::this_thread::sleep_for(milliseconds(200));  // this test's reading cadence
  }
  EXPECT_TRUE(own_seen);
  Status v = ValidateObjects(view.files(), stage_->dir() + "/validate-observer.log");
  EXPECT_TRUE(v.ok()) << v.ToString();
  stage_->StopAgent(&*agent);
}

// The API server stand-in (tests/pull/apiserver_stub.py) over TLS with a certificate made
// for the test.
class ApiServerStub {
 public:
  explicit ApiServerStub(const std::string& dir) : dir_(dir) {}
  ~ApiServerStub() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      waitpid(pid_, nullptr, 0);
    }
  }
  Status Start() {
    Status s =
        Run({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", dir_ + "/api.key", "-out",
             dir_ + "/api.crt", "-days", "1", "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1"},
            dir_ + "/openssl.log");
    if (!s.ok()) return s;
    std::ofstream(dir_ + "/token") << "test-token\n";
    std::ofstream(dir_ + "/wrong-token") << "not-the-token\n";
    pid_ = fork();
    if (pid_ == 0) {
      std::string log = dir_ + "/stub.log";
      if (freopen(log.c_str(), "a", stderr) == nullptr) _exit(126);
      execl("/usr/bin/python3", "python3", STATLET_APISERVER_STUB, "serve", STATLET_NODE_PULLS_CRD,
            (dir_ + "/api.crt").c_str(), (dir_ + "/api.key").c_str(), "test-token", (dir_ + "/requests.log").c_str(),
            (dir_ + "/port").c_str(), nullptr);
      _exit(127);
    }
    bool up = testing::WaitFor(
        [&] {
          std::ifstream in(dir_ + "/port");
          return static_cast<bool>(in >> port_);
        },
        seconds(20));
    return up ? Status::Ok() : Unavailable("the API server stub did not start");
  }
  std::string url() const { return "https://127.0.0.1:" + std::to_string(port_); }
  std::string ca() const { return dir_ + "/api.crt"; }
  std::string token() const { return dir_ + "/token"; }
  std::string wrong_token() const { return dir_ + "/wrong-token"; }
  std::vector<nlohmann::json> Requests() const {
    std::vector<nlohmann::json> out;
    std::ifstream in(dir_ + "/requests.log");
    std::string line;
    while (std::getline(in, line)) out.push_back(nlohmann::json::parse(line));
    return out;
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

TEST_F(PullE2e, TheWriterAppliesValidObjectsAtMostOncePerPeriod) {
  ApiServerStub api(stage_->dir());
  ASSERT_TRUE(api.Start().ok());
  auto agent = stage_->StartAgent(
      "writer", {"--pull.status-period=1s", "--pull.node-name=node-b", "--pull.apiserver=" + api.url(),
                 "--pull.apiserver-ca-file=" + api.ca(), "--pull.apiserver-token-file=" + api.token()});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  auto stub = stage_->ImagesAt(agent->socket);
  ProgressCall call(stub.get(), ProgressRequest(image_->ref, kep::TIME, 1, -1, false));
  ASSERT_TRUE(call.Wait().ok());
  auto done_written = [&] {
    for (const auto& r : api.Requests()) {
      const auto& body = r["body"];
      if (body.is_null()) continue;
      for (const auto& e : body["status"]["images"]) {
        if (e["state"] == "Done" && e["imageRef"] == image_->config_digest) return true;
      }
    }
    return false;
  };
  ASSERT_TRUE(testing::WaitFor(done_written, seconds(10)));
  const size_t after_done = api.Requests().size();
  // Nothing changes any more: no write for the next periods (only a change or the one-minute
  // resync writes).
  std::this_thread::sleep_for(milliseconds(2500));  // the quiet time under test
  auto reqs = api.Requests();
  EXPECT_EQ(reqs.size(), after_done);
  ASSERT_GE(reqs.size(), 2u);
  bool pulling_seen = false;
  for (size_t i = 0; i < reqs.size(); ++i) {
    EXPECT_TRUE(reqs[i]["ok"].get<bool>()) << reqs[i]["errors"].dump();
    if (i > 0) {
      EXPECT_GE(reqs[i]["t"].get<double>() - reqs[i - 1]["t"].get<double>(), 0.9) << "write " << i;
    }
    for (const auto& e : reqs[i]["body"]["status"]["images"]) pulling_seen |= e["state"] == "Pulling";
  }
  EXPECT_TRUE(pulling_seen);
  // The writes are counted on /metrics.
  auto m = testing::TimedGet(agent->metrics_port, "/metrics", "", seconds(5)).response;
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("statlet_image_pull_status_writes_total{result=\"ok\"} " + std::to_string(reqs.size())),
            std::string::npos);
  stage_->StopAgent(&*agent);
}

TEST_F(PullE2e, TheWriterBacksOffWhenTheApiServerRefusesIt) {
  ApiServerStub api(stage_->dir() + "/refused");
  mkdir((stage_->dir() + "/refused").c_str(), 0755);
  ASSERT_TRUE(api.Start().ok());
  auto agent = stage_->StartAgent(
      "refused", {"--pull.status-period=1s", "--pull.node-name=node-c", "--pull.apiserver=" + api.url(),
                  "--pull.apiserver-ca-file=" + api.ca(), "--pull.apiserver-token-file=" + api.wrong_token()});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  // Refused at 0 s, then after 2 s, 4 s, 8 s...: at most 3 attempts in 6 s (1 per second without backoff).
  std::this_thread::sleep_for(seconds(6));  // the window under test
  auto reqs = api.Requests();
  ASSERT_GE(reqs.size(), 2u);
  EXPECT_LE(reqs.size(), 3u);
  for (const auto& r : reqs) EXPECT_FALSE(r["ok"].get<bool>());
  auto m = testing::TimedGet(agent->metrics_port, "/metrics", "", seconds(5)).response;
  ASSERT_TRUE(m);
  EXPECT_NE(m->body.find("statlet_image_pull_status_writes_total{result=\"error\"} " + std::to_string(reqs.size())),
            std::string::npos)
      << m->body.substr(m->body.find("statlet_image_pull_status_writes_total"), 200);
  stage_->StopAgent(&*agent);
}

// ---------------------------------------------------------------------------- metrics

TEST_F(PullE2e, PullFamiliesCountWhatHappenedAndPassPromtool) {
  auto agent = stage_->StartAgent("metrics", {"--pull.no-progress-timeout=3s"});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  auto stub = stage_->ImagesAt(agent->socket);
  // Two clients of one pull (a join), then a stalled pull.
  {
    ProgressCall a(stub.get(), ProgressRequest(image_->ref, kep::TIME, 1, -1, true));
    ASSERT_TRUE(WaitForLayer(a, 0.2));
    auto mid = testing::TimedGet(agent->metrics_port, "/metrics", "", seconds(5)).response;
    ASSERT_TRUE(mid);
    EXPECT_NE(mid->body.find("statlet_image_pulls_in_flight 1\n"), std::string::npos);
    EXPECT_NE(
        mid->body.find("statlet_image_pull_size_bytes{image=\"" + image_->ref + "\"} " + std::to_string(image_->total)),
        std::string::npos);
    ProgressCall b(stub.get(), ProgressRequest(image_->ref, kep::TIME, 1, -1, false));
    ASSERT_TRUE(a.Wait().ok());
    ASSERT_TRUE(b.Wait().ok());
  }
  ASSERT_TRUE(stage_->EnsureAbsent(*image_).ok());
  {
    ProgressCall c(stub.get(), ProgressRequest(image_->ref, kep::TIME, 1, -1, true));
    ASSERT_TRUE(WaitForLayer(c, 0.2));
    stage_->proxy().Pause();
    EXPECT_EQ(c.Wait().error_code(), grpc::StatusCode::DEADLINE_EXCEEDED);
    stage_->proxy().Resume();
  }
  auto m = testing::TimedGet(agent->metrics_port, "/metrics", "", seconds(5)).response;
  ASSERT_TRUE(m);
  for (const char* want : {"statlet_image_pulls_started_total 2\n", "statlet_image_pull_joins_total 1\n",
                           "statlet_image_pulls_completed_total{result=\"succeeded\"} 1\n",
                           "statlet_image_pulls_completed_total{result=\"stalled\"} 1\n",
                           "statlet_image_pulls_in_flight 0\n", "statlet_image_pull_duration_seconds_count 1\n"}) {
    EXPECT_NE(m->body.find(want), std::string::npos) << want;
  }
  auto verdict = testing::PromtoolCheckMetrics(m->body);
  EXPECT_TRUE(verdict.Parsed()) << verdict.exit_code << ": " << verdict.output;
  for (const auto& f : verdict.unexpected_findings) {
    EXPECT_EQ(f.find("image_pull"), std::string::npos) << f;
  }
  stage_->StopAgent(&*agent);
}

// ---------------------------------------------------------------------------- statlet pull

// Runs a command; its exit status, with stdout and stderr in files.
int RunExit(const std::vector<std::string>& argv, const std::string& out, const std::string& err) {
  pid_t pid = fork();
  if (pid == 0) {
    if (freopen(out.c_str(), "w", stdout) == nullptr || freopen(err.c_str(), "w", stderr) == nullptr) _exit(126);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The test's own tmux server with one 160×20 session, "pull".
class Tmux : public testing::TmuxSession {
 public:
  Tmux() : TmuxSession("statlet-pull-" + std::to_string(getpid()), "pull") {}
  bool Start(const std::string& shell_command) { return TmuxSession::Start(shell_command, 160, 20); }
};

// The '+' of the bar on the screen's row for `digest`; -1 when the row is not there.
int BarFill(const std::string& screen, const std::string& digest) {
  std::istringstream in(screen);
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind(ShortDigestForTest(digest), 0) != 0) continue;
    size_t open = line.find('|');
    size_t close = line.find('|', open + 1);
    if (open == std::string::npos || close == std::string::npos) return -1;
    return static_cast<int>(
        std::count(line.begin() + static_cast<long>(open), line.begin() + static_cast<long>(close), '+'));
  }
  return -1;
}

TEST_F(PullE2e, StatletPullDrawsMovingBarsInATerminal) {
  Tmux tmux;
  ASSERT_TRUE(tmux.Start(std::string(STATLET_E2E_AGENT) + " pull --cri.endpoint unix://" + stage_->statlet_socket() +
                         " " + image_->ref + "; echo EXIT=$?; sleep 600"));
  std::vector<int> fills;
  std::string screen;
  ASSERT_TRUE(testing::WaitFor(
      [&] {
        screen = tmux.Capture();
        int f = BarFill(screen, image_->big().digest);
        if (f >= 0 && (fills.empty() || fills.back() != f)) fills.push_back(f);
        return screen.find("EXIT=") != std::string::npos;
      },
      seconds(60)));
  EXPECT_NE(screen.find("EXIT=0"), std::string::npos) << screen;
  EXPECT_NE(screen.find("done: " + image_->config_digest), std::string::npos) << screen;
  // The bar moved: several fills between empty and full, rising.
  int partial = 0;
  for (size_t i = 0; i < fills.size(); ++i) {
    if (fills[i] > 0 && fills[i] < 40) ++partial;
    if (i > 0) {
      EXPECT_GT(fills[i], fills[i - 1]) << screen;
    }
  }
  EXPECT_GE(partial, 2) << "fills seen: " << ::testing::PrintToString(fills);
  EXPECT_EQ(fills.back(), 40);
  // Redrawn in place: one row per layer on the screen, not one per report.
  size_t rows = 0;
  for (size_t at = screen.find(ShortDigestForTest(image_->big().digest)); at != std::string::npos;
       at = screen.find(ShortDigestForTest(image_->big().digest), at + 1)) {
    ++rows;
  }
  EXPECT_EQ(rows, 1u) << screen;
  auto has = stage_->ContainerdHasImage(image_->ref);
  ASSERT_TRUE(has.ok());
  EXPECT_TRUE(*has);
}

TEST_F(PullE2e, StatletPullPrintsPlainLinesWhenPiped) {
  const std::string out = stage_->dir() + "/pull.out", err = stage_->dir() + "/pull.err";
  int code = RunExit({STATLET_E2E_AGENT, "pull", "--cri.endpoint", "unix://" + stage_->statlet_socket(), image_->ref},
                     out, err);
  std::string text = ReadAll(out);
  EXPECT_EQ(code, 0) << ReadAll(err);
  EXPECT_EQ(text.find('\033'), std::string::npos) << "no terminal control codes when piped";
  std::istringstream in(text);
  std::string line;
  std::vector<std::string> lines;
  while (std::getline(in, line)) lines.push_back(line);
  ASSERT_GE(lines.size(), 4u) << text;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    EXPECT_TRUE(std::isdigit(static_cast<unsigned char>(lines[i][0])) && lines[i].find("s ") != std::string::npos)
        << lines[i];
  }
  EXPECT_EQ(lines.back().rfind("done: " + image_->config_digest, 0), 0u) << lines.back();
  EXPECT_NE(text.find("layer " + image_->big().digest + " done 64.0 MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("/65.0 MiB"), std::string::npos) << text;
}

TEST_F(PullE2e, StatletPullExitsWithThreeWhenThePullStalls) {
  const std::string out = stage_->dir() + "/stall.out", err = stage_->dir() + "/stall.err";
  int code = -1;
  std::thread run([&] {
    code = RunExit({STATLET_E2E_AGENT, "pull", "--cri.endpoint", "unix://" + stage_->statlet_socket(),
                    "--no-progress-timeout", "2s", image_->ref},
                   out, err);
  });
  bool moving = testing::WaitFor([&] { return stage_->proxy().delivered_bytes() > (8u << 20); }, seconds(30));
  stage_->proxy().Pause();
  run.join();
  stage_->proxy().Resume();
  ASSERT_TRUE(moving);
  EXPECT_EQ(code, 3);
  EXPECT_NE(ReadAll(err).find("stalled"), std::string::npos) << ReadAll(err);
  EXPECT_NE(ReadAll(err).find(image_->big().digest), std::string::npos) << ReadAll(err);
}

// containerd stopped under a pull made straight on it, then started again: the watch's
// polls fail and are counted while it is gone, the view keeps answering, and once it is
// back a new pull is followed to its end. Last in the file: containerd restarts under the
// stage's own agents too.
TEST_F(PullE2e, ContainerdRestartedUnderAnObservedPullTheWatchRecovers) {
  auto agent = stage_->StartAgent(
      "restart", {"--pull.status-period=1s", "--pull.node-name=node-r", "--pull.no-progress-timeout=2s"});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  ViewReader view(agent->metrics_port, stage_->dir() + "/restart-view-");
  auto entries = [&](const std::string& image, const std::string& state) {
    int n = 0;
    for (const auto& e : ObservedEntries(view.Read(), "k8s.io")) n += e["image"] == image && e["state"] == state;
    return n;
  };
  const std::string in_flight_name = "127.0.0.1/" + image_->name + "@" + image_->manifest_digest;

  stage_->proxy().SetRate(kDefaultRate / 4);
  auto pid = stage_->StartCtrPull("k8s.io", image_->ref);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  ASSERT_TRUE(testing::WaitFor([&] { return entries(in_flight_name, "Pulling") > 0; }, seconds(60)))
      << "the pull was never seen in flight";

  Status s = stage_->StopContainerd();
  ASSERT_TRUE(s.ok()) << s.ToString();
  EXPECT_NE(WaitPid(*pid, seconds(60)), 0) << "ctr's pull did not fail with containerd gone";
  EXPECT_TRUE(testing::WaitFor(
      [&] { return SeriesValue(agent->metrics_port, "statlet_image_pull_observed_poll_errors_total") > 0; },
      seconds(30)))
      << "the watch's failed polls were not counted";
  EXPECT_FALSE(view.Read().is_null()) << "/imagepulls did not answer with containerd gone";

  s = stage_->StartContainerd();
  ASSERT_TRUE(s.ok()) << s.ToString() << "\n" << stage_->Logs();
  stage_->proxy().SetRate(kDefaultRate);
  const int done_before = entries(image_->ref, "Done");
  pid = stage_->StartCtrPull("k8s.io", image_->ref);
  ASSERT_TRUE(pid.ok()) << pid.status().ToString();
  EXPECT_TRUE(testing::WaitFor([&] { return entries(image_->ref, "Done") > done_before; }, seconds(90)))
      << "the pull after the restart was not followed to its end";
  EXPECT_EQ(WaitPid(*pid, seconds(30)), 0) << e2e::Tail(stage_->dir() + "/ctr-pull.log", 10);
  stage_->StopAgent(&*agent);
}

}  // namespace
}  // namespace statlet::pulltest
