// KEP-5334 ImagePullProgress against real parts: the stage's containerd, Debian's registry
// behind the tests' throttling proxy, and statlet. A pod (a real sandbox in containerd)
// has two images pulled for it the kubelet's way (PullImage with its sandbox_config): the
// URL's stream carries both images' layers up to their sizes, and `statlet pull --pod`
// follows it. Refused URLs (bad, used, expired), the call's errors, and 500 streams opened
// and abandoned leaving the daemon's threads and fds as they were.
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <thread>

#include <grpcpp/grpcpp.h>
#include <grpcpp/impl/codegen/client_unary_call.h>
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "proto/kep5334_image_pull_progress.pb.h"
#include "pulls/pull_progress_service.h"
#include "tests/pull/pull_stage.h"
#include "tests/support/http_client.h"
#include "tests/support/wait_for.h"

namespace statlet::pulltest {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr uint64_t kSlowRate = 8ull << 20;  // two 24 MiB layers take about 6 s

struct Answer {
  grpc::Status status;
  std::string url;
};

Answer ImagePullProgress(const std::string& socket, const std::string& sandbox, const std::string& container) {
  v1::ImagePullProgressRequest req;
  req.set_pod_sandbox_id(sandbox);
  req.set_container_id(container);
  v1::ImagePullProgressResponse resp;
  auto channel = e2e::CriChannel(socket);
  const grpc::internal::RpcMethod method(pulls::kImagePullProgressMethod, grpc::internal::RpcMethod::NORMAL_RPC);
  auto ctx = e2e::CallContext(seconds(10));
  Answer a;
  a.status = grpc::internal::BlockingUnaryCall(channel.get(), method, ctx.get(), req, &resp);
  a.url = resp.url();
  return a;
}

// "http://127.0.0.1:PORT/path" → PORT and /path.
bool SplitUrl(const std::string& url, int* port, std::string* path) {
  const std::string prefix = "http://127.0.0.1:";
  if (url.rfind(prefix, 0) != 0) return false;
  const size_t slash = url.find('/', prefix.size());
  if (slash == std::string::npos) return false;
  *port = std::atoi(url.substr(prefix.size(), slash - prefix.size()).c_str());
  *path = url.substr(slash);
  return *port > 0;
}

// One progress stream read as a client does: the status line and headers, then the chunked
// body, line by line.
class StreamReader {
 public:
  StreamReader(int port, const std::string& path, const std::string& source = "127.0.0.1") : conn_(port, source) {
    if (conn_.ok()) conn_.Send(testing::GetRequest(path));
  }
  // The status, once the header is in (0: none within the timeout).
  int Status(milliseconds timeout = seconds(5)) {
    const auto deadline = Clock::now() + timeout;
    while (status_ == 0 && Fill(deadline)) {
      const size_t end = raw_.find("\r\n\r\n");
      if (end == std::string::npos) continue;
      const std::string head = raw_.substr(0, end);
      status_ = std::atoi(head.c_str() + head.find(' ') + 1);
      chunked_ = head.find("Transfer-Encoding: chunked") != std::string::npos ||
                 head.find("transfer-encoding: chunked") != std::string::npos;
      raw_.erase(0, end + 4);
    }
    return status_;
  }
  bool chunked() const { return chunked_; }
  // The next line of the body (without its newline); none when `deadline` passed first.
  std::optional<std::string> Line(Clock::time_point deadline) {
    while (true) {
      Decode();
      const size_t nl = body_.find('\n');
      if (nl != std::string::npos) {
        std::string line = body_.substr(0, nl);
        body_.erase(0, nl + 1);
        return line;
      }
      if (!Fill(deadline)) return std::nullopt;
    }
  }
  void Close() { conn_.Close(); }
  bool ok() const { return conn_.ok(); }

 private:
  // Moves whole chunks from raw_ to body_.
  void Decode() {
    while (true) {
      const size_t crlf = raw_.find("\r\n");
      if (crlf == std::string::npos) return;
      const size_t size = std::stoul(raw_.substr(0, crlf), nullptr, 16);
      if (raw_.size() < crlf + 2 + size + 2) return;
      body_ += raw_.substr(crlf + 2, size);
      raw_.erase(0, crlf + 2 + size + 2);
      if (size == 0) return;
    }
  }
  bool Fill(Clock::time_point deadline) {
    const auto left = std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count();
    if (left <= 0 || !conn_.ok()) return false;
    pollfd p{conn_.fd(), POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) return false;
    char buf[16384];
    const ssize_t n = read(conn_.fd(), buf, sizeof buf);
    if (n <= 0) return false;
    raw_.append(buf, static_cast<size_t>(n));
    return true;
  }

  testing::TcpConnection conn_;
  std::string raw_, body_;
  int status_ = 0;
  bool chunked_ = false;
};

// Strict: a JSON object with only the KEP's keys, of the KEP's types, optional ones left
// out rather than empty.
nlohmann::json StrictProgress(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  EXPECT_FALSE(j.is_discarded()) << line;
  if (j.is_discarded()) return nlohmann::json();
  EXPECT_TRUE(j.is_object()) << line;
  static const std::set<std::string> kKeys = {"image", "layer", "progress", "total", "error"};
  for (const auto& [k, v] : j.items()) {
    EXPECT_EQ(kKeys.count(k), 1u) << "unknown key " << k << " in " << line;
    if (k == "progress" || k == "total") {
      EXPECT_TRUE(v.is_number_integer() && v.get<int64_t>() >= 0) << line;
    } else {
      EXPECT_TRUE(v.is_string() && !v.get<std::string>().empty()) << line;
    }
  }
  EXPECT_TRUE(j.contains("progress") && j.contains("total")) << line;
  return j;
}

v1::PullImageRequest KubeletPull(const std::string& image, const e2e::Pod& pod) {
  v1::PullImageRequest req;
  req.mutable_image()->set_image(image);
  auto* m = req.mutable_sandbox_config()->mutable_metadata();
  m->set_namespace_(pod.namespace_);
  m->set_name(pod.name);
  m->set_uid(pod.uid);
  return req;
}

size_t CountDir(const std::string& path) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = std::filesystem::directory_iterator(path, ec); !ec && it != std::filesystem::directory_iterator();
       it.increment(ec)) {
    ++n;
  }
  return n;
}
size_t Threads(pid_t pid) { return CountDir("/proc/" + std::to_string(pid) + "/task"); }
size_t Fds(pid_t pid) { return CountDir("/proc/" + std::to_string(pid) + "/fd"); }
long RssKiB(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  }
  return -1;
}

std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class ProgressE2e : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    auto s = PullStage::Start();
    ASSERT_TRUE(s.ok()) << s.status().ToString();
    stage_ = s->release();
    auto a = stage_->PushImage("progress-a", 24, "kep5334-a");
    auto b = stage_->PushImage("progress-b", 24, "kep5334-b");
    ASSERT_TRUE(a.ok() && b.ok()) << a.status().ToString() << b.status().ToString();
    a_ = new TestImage(*a);
    b_ = new TestImage(*b);
  }
  static void TearDownTestSuite() {
    delete stage_;
    stage_ = nullptr;
    delete a_;
    delete b_;
  }
  void SetUp() override {
    ASSERT_NE(stage_, nullptr);
    stage_->proxy().Resume();
    stage_->proxy().SetRate(kDefaultRate);
  }
  void TearDown() override {
    if (HasFailure()) std::cerr << stage_->Logs();
  }
  static StatusOr<e2e::Pod> RunPod(const std::string& name) {
    e2e::PodSpec spec;
    spec.name = name;
    spec.namespace_ = "shop";
    return stage_->e2e().driver().RunPod(spec);
  }
  int Port() const { return stage_->e2e().metrics_port(); }
  // `statlet pull --pod <pod> --until-done --plain [flags]` against this stage's statlet, its
  // output in `out` and `err`; the child's pid.
  static pid_t FollowPod(const std::string& pod, const std::vector<std::string>& flags, const std::string& out,
                         const std::string& err) {
    std::vector<std::string> args = {STATLET_E2E_AGENT,
                                     "pull",
                                     "--pod",
                                     pod,
                                     "--until-done",
                                     "--plain",
                                     "--cri.endpoint",
                                     "unix://" + stage_->statlet_socket(),
                                     "--runtime.endpoint",
                                     "unix://" + stage_->dir() + "/containerd.sock"};
    args.insert(args.end(), flags.begin(), flags.end());
    std::vector<char*> argv;
    for (std::string& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const pid_t pid = fork();
    if (pid == 0) {
      if (freopen(out.c_str(), "w", stdout) == nullptr || freopen(err.c_str(), "w", stderr) == nullptr) _exit(126);
      execv(STATLET_E2E_AGENT, argv.data());
      _exit(127);
    }
    return pid;
  }

  static PullStage* stage_;
  static TestImage* a_;
  static TestImage* b_;
};
PullStage* ProgressE2e::stage_ = nullptr;
TestImage* ProgressE2e::a_ = nullptr;
TestImage* ProgressE2e::b_ = nullptr;

TEST_F(ProgressE2e, APodsTwoPullsStreamTheirLayersUpToTheirSizesAndStatletPullFollowsThem) {
  auto pod = RunPod("two-images");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  ASSERT_TRUE(stage_->EnsureAbsent(*a_).ok());
  ASSERT_TRUE(stage_->EnsureAbsent(*b_).ok());
  stage_->proxy().SetRate(kSlowRate);
  stage_->proxy().ResetCounters();

  grpc::Status sa, sb;
  std::thread pull_a([&] {
    v1::PullImageResponse resp;
    auto ctx = e2e::CallContext(seconds(120));
    sa = stage_->statlet()->PullImage(ctx.get(), KubeletPull(a_->ref, *pod), &resp);
  });
  // Image a is in flight when the URL is asked for; b starts after the stream opened.
  ASSERT_TRUE(testing::WaitFor([] { return stage_->proxy().delivered_bytes() > 0; }, seconds(30)));
  Answer answer = ImagePullProgress(stage_->statlet_socket(), pod->id, "");
  ASSERT_TRUE(answer.status.ok()) << answer.status.error_message();
  int port = 0;
  std::string path;
  ASSERT_TRUE(SplitUrl(answer.url, &port, &path)) << answer.url;
  EXPECT_EQ(port, Port());
  EXPECT_EQ(path.rfind("/imagepullprogress/", 0), 0u) << path;
  EXPECT_EQ(path.size(), std::string("/imagepullprogress/").size() + 32) << "128 bits in hex";
  StreamReader stream(port, path);
  ASSERT_EQ(stream.Status(), 200);
  EXPECT_TRUE(stream.chunked());

  // `statlet pull --pod` follows the pod meanwhile, on a URL of its own.
  const std::string out = stage_->dir() + "/pull-pod.out", err = stage_->dir() + "/pull-pod.err";
  const pid_t cli = FollowPod("shop/two-images", {}, out, err);
  std::thread pull_b([&] {
    v1::PullImageResponse resp;
    auto ctx = e2e::CallContext(seconds(120));
    sb = stage_->statlet()->PullImage(ctx.get(), KubeletPull(b_->ref, *pod), &resp);
  });

  // Per image and layer: the last value and whether one was seen midway.
  std::map<std::string, std::map<std::string, std::pair<int64_t, int64_t>>> last;
  std::set<std::string> midway;
  size_t lines = 0;
  auto complete = [&](const TestImage& img) {
    auto it = last.find(img.ref);
    if (it == last.end()) return false;
    for (const auto& l : img.layers) {
      auto v = it->second.find(l.digest);
      if (v == it->second.end() || v->second.first != v->second.second) return false;
    }
    return true;
  };
  const auto deadline = Clock::now() + seconds(90);
  while (!(complete(*a_) && complete(*b_))) {
    auto line = stream.Line(deadline);
    ASSERT_TRUE(line.has_value()) << "the stream stopped before both images were complete after " << lines << " lines";
    ++lines;
    nlohmann::json j = StrictProgress(*line);
    ASSERT_TRUE(j.contains("image") && j.contains("layer")) << "layer objects only: " << *line;
    EXPECT_FALSE(j.contains("error")) << *line;
    const std::string image = j["image"], layer = j["layer"];
    ASSERT_TRUE(image == a_->ref || image == b_->ref) << "another image in this pod's stream: " << *line;
    const int64_t progress = j["progress"], total = j["total"];
    auto& slot = last[image][layer];
    EXPECT_GE(progress, slot.first) << "progress went back: " << *line;
    slot = {progress, total};
    if (progress > 0 && progress < total) midway.insert(image);
  }
  for (const TestImage* img : {a_, b_}) {
    for (const auto& l : img->layers) {
      EXPECT_EQ(last[img->ref][l.digest].second, static_cast<int64_t>(l.size)) << img->ref << " " << l.digest;
      EXPECT_EQ(last[img->ref][l.digest].first, static_cast<int64_t>(l.size)) << img->ref << " " << l.digest;
    }
    EXPECT_EQ(last[img->ref].size(), img->layers.size()) << img->ref;
  }
  EXPECT_FALSE(midway.empty()) << "no layer was seen part way";
  std::printf("figure: %zu progress lines for two images of %zu and %zu layers\n", lines, a_->layers.size(),
              b_->layers.size());
  pull_a.join();
  pull_b.join();
  EXPECT_TRUE(sa.ok()) << sa.error_message();
  EXPECT_TRUE(sb.ok()) << sb.error_message();
  stream.Close();

  const int code = WaitPid(cli, seconds(60));
  const std::string text = ReadAll(out);
  EXPECT_EQ(code, 0) << ReadAll(err) << text;
  EXPECT_EQ(text.find('\033'), std::string::npos) << "plain when piped";
  for (const TestImage* img : {a_, b_}) {
    EXPECT_NE(text.find(img->ref + " "), std::string::npos) << text;
    EXPECT_NE(text.find("layer " + img->big().digest + " done 24.0 MiB"), std::string::npos) << text;
  }
  EXPECT_TRUE(stage_->e2e().driver().RemovePod(*pod).ok());
}

// The kubelet pulls a pod's images one after another (an init container's, then once it
// ran the app's): `statlet pull --pod --until-done` must not end between them, and ends
// within the settle time once the last is complete.
TEST_F(ProgressE2e, UntilDoneWaitsThroughAPodsSequentialPulls) {
  auto pod = RunPod("sequential");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  ASSERT_TRUE(stage_->EnsureAbsent(*a_).ok());
  ASSERT_TRUE(stage_->EnsureAbsent(*b_).ok());
  stage_->proxy().SetRate(kSlowRate);
  // Longer than the gap between the pod's two pulls can be on a loaded machine (the second
  // pull resolving through the throttled registry, the stream's poll), shorter than the test.
  constexpr seconds kSettle{15};

  grpc::Status sa, sb;
  std::thread pull_a([&] {
    v1::PullImageResponse resp;
    auto ctx = e2e::CallContext(seconds(120));
    sa = stage_->statlet()->PullImage(ctx.get(), KubeletPull(a_->ref, *pod), &resp);
  });
  ASSERT_TRUE(testing::WaitFor([] { return stage_->proxy().delivered_bytes() > 0; }, seconds(30)));
  const std::string out = stage_->dir() + "/pull-seq.out", err = stage_->dir() + "/pull-seq.err";
  const pid_t cli = FollowPod("shop/sequential", {"--settle", std::to_string(kSettle.count()) + "s"}, out, err);
  pull_a.join();
  ASSERT_TRUE(sa.ok()) << sa.error_message();
  // The first image is complete in the follower's output: the moment the old rule ended.
  const std::string a_done = "layer " + a_->big().digest + " done 24.0 MiB";
  ASSERT_TRUE(testing::WaitFor([&] { return ReadAll(out).find(a_done) != std::string::npos; }, seconds(30)))
      << ReadAll(err) << ReadAll(out);
  // The init container ran; the next image of the pod is pulled.
  std::thread pull_b([&] {
    v1::PullImageResponse resp;
    auto ctx = e2e::CallContext(seconds(120));
    sb = stage_->statlet()->PullImage(ctx.get(), KubeletPull(b_->ref, *pod), &resp);
  });
  pull_b.join();
  const auto b_pulled = Clock::now();
  ASSERT_TRUE(sb.ok()) << sb.error_message();
  const int code = WaitPid(cli, 3 * kSettle + seconds(10));
  const double after = std::chrono::duration<double>(Clock::now() - b_pulled).count();
  const std::string text = ReadAll(out);
  EXPECT_EQ(code, 0) << ReadAll(err) << text;
  EXPECT_NE(text.find("layer " + b_->big().digest + " done 24.0 MiB"), std::string::npos)
      << "ended before the pod's second pull: " << text;
  std::printf("figure: statlet pull --until-done ended %.2f s after the second pull (settle %lld s)\n", after,
              static_cast<long long>(kSettle.count()));
  EXPECT_TRUE(stage_->e2e().driver().RemovePod(*pod).ok());
}

// A pod whose images are all present pulls nothing, so no line ever comes: `--until-done`
// ends once the settle time has passed since the stream opened, instead of waiting for ever.
TEST_F(ProgressE2e, UntilDoneEndsForAPodWithNothingToPull) {
  auto pod = RunPod("nothing-to-pull");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  constexpr seconds kSettle{2};
  const std::string out = stage_->dir() + "/pull-none.out", err = stage_->dir() + "/pull-none.err";
  const auto started = Clock::now();
  const pid_t cli = FollowPod("shop/nothing-to-pull", {"--settle", std::to_string(kSettle.count()) + "s"}, out, err);
  // Generous against a loaded machine's start-up, far short of never.
  const int code = WaitPid(cli, 10 * kSettle + seconds(20));
  const double took = std::chrono::duration<double>(Clock::now() - started).count();
  EXPECT_EQ(code, 0) << "still following a pod with nothing to pull after " << took << " s: " << ReadAll(err)
                     << ReadAll(out);
  EXPECT_GE(took, std::chrono::duration<double>(kSettle).count()) << "ended before the settle time";
  EXPECT_EQ(ReadAll(out).find("layer "), std::string::npos) << ReadAll(out);
  std::printf(
      "figure: statlet pull --until-done ended %.2f s after it started for a pod with nothing to pull (settle "
      "%lld s)\n",
      took, static_cast<long long>(kSettle.count()));
  EXPECT_TRUE(stage_->e2e().driver().RemovePod(*pod).ok());
}

TEST_F(ProgressE2e, BadUsedAndExpiredUrlsAreRefusedAndBadIdsGetClearErrors) {
  auto pod = RunPod("refusals");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  auto get = [&](const std::string& p) { return testing::TimedGet(Port(), p, "", seconds(5)).response; };
  auto bad = get("/imagepullprogress/" + std::string(32, '0'));
  ASSERT_TRUE(bad.has_value());
  EXPECT_EQ(bad->status, 404);
  EXPECT_NE(bad->body.find("unknown"), std::string::npos) << bad->body;
  auto short_token = get("/imagepullprogress/abc");
  ASSERT_TRUE(short_token.has_value());
  EXPECT_EQ(short_token->status, 404);

  Answer once = ImagePullProgress(stage_->statlet_socket(), pod->id, "");
  ASSERT_TRUE(once.status.ok()) << once.status.error_message();
  int port = 0;
  std::string path;
  ASSERT_TRUE(SplitUrl(once.url, &port, &path));
  {
    // A HEAD does not spend the URL: it is refused, and the GET after it gets the stream.
    testing::TcpConnection head(port);
    ASSERT_TRUE(head.Send("HEAD " + path + " HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"));
    auto answer = head.ReadResponse(seconds(5), /*head=*/true);
    ASSERT_TRUE(answer.has_value());
    EXPECT_EQ(answer->status, 405);
    EXPECT_EQ(answer->header("allow"), "GET");
  }
  {
    StreamReader first(port, path);
    EXPECT_EQ(first.Status(), 200);
  }
  auto second = get(path);
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(second->status, 404) << "a URL serves one stream";

  Answer neither = ImagePullProgress(stage_->statlet_socket(), "", "");
  EXPECT_EQ(neither.status.error_code(), grpc::StatusCode::INVALID_ARGUMENT) << neither.status.error_message();
  Answer no_pod = ImagePullProgress(stage_->statlet_socket(), "0123456789abcdef", "");
  EXPECT_EQ(no_pod.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(no_pod.status.error_message().find("0123456789abcdef"), std::string::npos) << no_pod.status.error_message();
  Answer no_container = ImagePullProgress(stage_->statlet_socket(), "", "fedcba9876543210");
  EXPECT_EQ(no_container.status.error_code(), grpc::StatusCode::NOT_FOUND);
  EXPECT_NE(no_container.status.error_message().find("fedcba9876543210"), std::string::npos);

  // Expiry: a statlet whose URLs expire at once (--pull.progress-url-ttl=0s, so no waiting),
  // in proxy mode: statlet answers the call itself (containerd 1.6 has no such method and
  // would answer UNIMPLEMENTED).
  auto agent = stage_->StartAgent("expiry", {"--cri.proxy", "--pull.progress-url-ttl=0s"});
  ASSERT_TRUE(agent.ok()) << agent.status().ToString();
  // A statlet just started may not have listed the pod yet (its first list waits on a
  // runtime that is busy with the stage): what is tested here is expiry, so ask until it knows.
  Answer expiring;
  testing::WaitFor(
      [&] {
        expiring = ImagePullProgress(agent->socket, pod->id, "");
        return expiring.status.error_code() != grpc::StatusCode::NOT_FOUND;
      },
      seconds(30));
  ASSERT_TRUE(expiring.status.ok()) << expiring.status.error_message();
  ASSERT_TRUE(SplitUrl(expiring.url, &port, &path)) << expiring.url;
  EXPECT_EQ(port, agent->metrics_port);
  auto expired = testing::TimedGet(port, path, "", seconds(5)).response;
  ASSERT_TRUE(expired.has_value());
  EXPECT_EQ(expired->status, 404) << "expired unused";
  stage_->StopAgent(&*agent);
  EXPECT_TRUE(stage_->e2e().driver().RemovePod(*pod).ok());
}

TEST_F(ProgressE2e, FiveHundredStreamsOpenedAndAbandonedLeaveThreadsAndFdsWhereTheyWere) {
  auto pod = RunPod("abandoned");
  ASSERT_TRUE(pod.ok()) << pod.status().ToString();
  const pid_t agent = stage_->e2e().agent_pid();
  // Opens `n` streams from three client addresses (each under the per-address stream cap,
  // 48 by default).
  auto open = [&](int n) {
    std::vector<std::unique_ptr<StreamReader>> streams;
    for (int i = 0; i < n; ++i) {
      Answer a = ImagePullProgress(stage_->statlet_socket(), pod->id, "");
      EXPECT_TRUE(a.status.ok()) << a.status.error_message();
      int port = 0;
      std::string path;
      if (!SplitUrl(a.url, &port, &path)) break;
      static const char* const kSources[] = {"127.0.0.2", "127.0.0.3", "127.0.0.4"};
      streams.push_back(std::make_unique<StreamReader>(port, path, kSources[i % 3]));
      EXPECT_EQ(streams.back()->Status(), 200) << "stream " << i;
    }
    return streams;
  };
  const size_t fds_before = Fds(agent);
  open(20).clear();  // the first streams and calls wake what the daemon starts on demand (CRI pollers)
  // The baseline once the warm-up's connections are closed again.
  ASSERT_TRUE(testing::WaitFor([&] { return Fds(agent) <= fds_before; }, seconds(30)))
      << "fds " << fds_before << " -> " << Fds(agent) << " after 20 streams";
  const size_t threads0 = Threads(agent), fds0 = Fds(agent);
  const long rss0 = RssKiB(agent);
  {
    auto held = open(100);
    ASSERT_EQ(held.size(), 100u);
    const long rss1 = RssKiB(agent);
    std::printf("figure: RSS with 100 progress streams open %+ld KiB (%.1f KiB a stream; /proc/%d/status VmRSS)\n",
                rss1 - rss0, static_cast<double>(rss1 - rss0) / 100.0, agent);
  }
  for (int round = 0; round < 5; ++round) {
    {
      auto streams = open(100);
      ASSERT_EQ(streams.size(), 100u) << "round " << round;
    }  // the round's 100 clients leave without a word
    // The daemon has let them go before the next round asks for 100 places again.
    ASSERT_TRUE(testing::WaitFor([&] { return Fds(agent) <= fds0; }, seconds(30)))
        << "round " << round << ": fds " << fds0 << " -> " << Fds(agent);
  }
  const bool settled = testing::WaitFor([&] { return Threads(agent) <= threads0 && Fds(agent) <= fds0; }, seconds(30));
  EXPECT_TRUE(settled) << "threads " << threads0 << " -> " << Threads(agent) << ", fds " << fds0 << " -> "
                       << Fds(agent);
  std::printf("figure: after 500 abandoned streams: threads %zu -> %zu, fds %zu -> %zu, RSS %+ld KiB\n", threads0,
              Threads(agent), fds0, Fds(agent), RssKiB(agent) - rss0);
  EXPECT_TRUE(stage_->e2e().driver().RemovePod(*pod).ok());
}

}  // namespace
}  // namespace statlet::pulltest
