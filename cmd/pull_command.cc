// statlet pull: pulls an image through an image service that implements KEP-3542's
// PullImageWithProgress (statlet's CRI socket by default) and shows its progress. An
// endpoint without the call (UNIMPLEMENTED) gets a plain PullImage, as the KEP's fallback.
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "base/duration.h"
#include "base/unix_socket.h"
#include "cmd/commands.h"
#include "cmd/flag_parser.h"
#include "cmd/pull_display.h"
#include "cmd/pull_pod.h"
#include "cri/cri_daemon_options.h"  // kDefaultCriListenPath
#include "proto/image_service.grpc.pb.h"

namespace statlet {
namespace {

namespace v1 = ::runtime::v1;
namespace kep = ::statlet::kep3542;

constexpr const char* kPullUsage = R"(Usage: statlet pull [flags] IMAGE
       statlet pull --pod NAMESPACE/NAME [--container NAME] [flags]

Pulls IMAGE through the node's runtime and shows its progress: per-layer bars on a
terminal, one line per report otherwise. Uses KEP-3542's PullImageWithProgress on the
endpoint (statlet's CRI socket, or any image service that implements it); an endpoint
without it gets a plain PullImage.

Flags:
      --cri.endpoint URL          image service socket (default unix:///run/statlet/cri.sock)
      --granularity time|size     report every --interval seconds or bytes (default time)
      --interval N                time: a duration in whole seconds (default 1s);
                                  size: bytes, with KiB/MiB/GiB (default 64MiB)
      --no-progress-timeout D     fail when no byte arrived for D (whole seconds; 0 = never,
                                  the default)
      --summary                   total progress only, no per-layer rows
      --plain                     plain lines even on a terminal
      --creds USER:PASSWORD       registry credentials (sent to the runtime)
  -h, --help                      this text

Following a pod's pulls (KEP-5334 ImagePullProgress on --cri.endpoint; the pod is looked up
there in proxy mode, else on the runtime's socket), with the same bars, until interrupted:
      --pod NAMESPACE/NAME        the pod whose pulls to follow (in flight, then new ones)
      --container NAME            only that container's image (the container must exist)
      --runtime.endpoint URL      the runtime's socket for the pod lists (default: found)
      --until-done                exit once every pull seen is complete and no new one began
                                  for --settle (1 if a pull failed)
      --settle D                  with --until-done: how long the pod's pulls must stay
                                  complete (default 10s; the kubelet pulls a pod's images one
                                  after another, an init container's before it runs)
      --ca-file FILE              CA for an https progress URL (default: the system's)
      --basic-auth USER:PASS      credentials of statlet's web listener

Exit status: 0 pulled, 1 failed, 2 usage, 3 stalled (no progress for the timeout), 130
interrupted.

Old spelling, still accepted with a notice: --endpoint (--cri.endpoint).
)";

// SIGINT and SIGTERM cancel the call in flight (the pull goes on for other clients, or to
// the end, as the server decides). They are taken by a thread with sigwait, not a handler.
std::atomic<bool> g_interrupted{false};
std::mutex g_mu;
grpc::ClientContext* g_context = nullptr;  // guarded by g_mu

void SetContext(grpc::ClientContext* ctx) {
  std::lock_guard<std::mutex> lock(g_mu);
  g_context = ctx;
  if (ctx != nullptr && g_interrupted) ctx->TryCancel();
}

void WatchSignals(sigset_t set) {
  int sig = 0;
  sigwait(&set, &sig);
  g_interrupted = true;
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_context != nullptr) g_context->TryCancel();
}

bool ParseBytes(const std::string& text, uint64_t* out) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (end == text.c_str() || v < 0) return false;
  std::string unit = end;
  double mult = 1;
  if (unit.empty() || unit == "B") mult = 1;
  else if (unit == "KiB" || unit == "K" || unit == "k") mult = 1024.0;
  else if (unit == "MiB" || unit == "M") mult = 1024.0 * 1024;
  else if (unit == "GiB" || unit == "G") mult = 1024.0 * 1024 * 1024;
  else return false;
  *out = static_cast<uint64_t>(v * mult);
  return true;
}

std::string StageName(kep::LayerStage s) {
  switch (s) {
    case kep::LAYER_WAITING: return "waiting";
    case kep::LAYER_DOWNLOADING: return "downloading";
    case kep::LAYER_DOWNLOADED: return "done";
    case kep::LAYER_PRESENT: return "exists";
    default: return "unknown";
  }
}

// Why the endpoint cannot take the call, before any is made: the usual first error is a
// daemon that is not running (or serves another path), and gRPC's own words for it ("failed
// to connect to all addresses") do not say so. "" when something accepts connections there.
std::string Unreachable(const std::string& endpoint, const std::string& path) {
  struct stat st;
  std::string why;
  if (stat(path.c_str(), &st) != 0) why = "no socket at " + path;
  else if (!S_ISSOCK(st.st_mode)) why = path + " is not a socket";
  else if (!SocketIsLive(path)) why = "nothing accepts connections on " + path;
  else return "";
  return "cannot reach the image service at " + endpoint + ": " + why +
         ". Is the statlet daemon running? Give its CRI socket (its --cri.listen) with --cri.endpoint";
}

// What a failed call means, in words that say what to change; gRPC's code when it gave no
// message.
std::string Explain(const grpc::Status& s, const std::string& endpoint) {
  std::string detail = s.error_message().empty() ? "gRPC code " + std::to_string(s.error_code()) : s.error_message();
  switch (s.error_code()) {
    case grpc::StatusCode::UNIMPLEMENTED:
      return endpoint + " does not serve image pulls (" + detail +
             "): a statlet there has them off (--pull.enabled=false, --runtime.endpoint=none, or a runtime other "
             "than containerd); pull through the runtime's own socket with --cri.endpoint, or turn them on";
    case grpc::StatusCode::UNAVAILABLE:
      return "cannot reach the image service at " + endpoint + " (" + detail +
             "). Is the statlet daemon running? Give its CRI socket (its --cri.listen) with --cri.endpoint";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return detail + " (the --no-progress-timeout passed without a byte arriving)";
    default: return detail;
  }
}

int ExitCode(const grpc::Status& s) {
  if (g_interrupted) return 130;
  if (s.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) return 3;
  return 1;
}

}  // namespace

int RunPullCommand(int argc, char** argv) {
  std::string endpoint = std::string("unix://") + cri::kDefaultCriListenPath;
  std::string image, creds;
  kep::PullImageProgressGranularity granularity = kep::TIME;
  std::string interval_text;
  std::optional<uint32_t> timeout;
  bool summary = false, plain = false;
  PullPodOptions pod;
  FlagParser flags(argc, argv, "statlet pull");
  while (flags.Next()) {
    if (flags.Is("-h") || flags.Is("--help")) {
      std::fputs(kPullUsage, stdout);
      return 0;
    } else if (flags.Is("--cri.endpoint", {"--endpoint"})) {
      endpoint = flags.Value();
    } else if (flags.Is("--granularity")) {
      std::string g = flags.Value();
      if (g == "time") granularity = kep::TIME;
      else if (g == "size") granularity = kep::SIZE;
      else return flags.Fail("--granularity " + g + ": expected time or size");
    } else if (flags.Is("--interval")) {
      interval_text = flags.Value();
    } else if (flags.Is("--no-progress-timeout")) {
      std::chrono::nanoseconds d;
      if (Status s = ParseDuration(flags.Value(), &d); !s.ok())
        return flags.Fail("--no-progress-timeout: " + s.message() + " (e.g. 30s; 0 never)");
      if (d.count() % 1000000000 != 0 || d.count() < 0 || d > std::chrono::hours(24 * 365)) {
        return flags.Fail("--no-progress-timeout: expected whole seconds up to a year (e.g. 30s; 0 never)");
      }
      timeout = static_cast<uint32_t>(d.count() / 1000000000);
    } else if (flags.Is("--pod")) {
      pod.pod = flags.Value();
    } else if (flags.Is("--container")) {
      pod.container = flags.Value();
    } else if (flags.Is("--runtime.endpoint")) {
      pod.runtime_endpoint = flags.Value();
    } else if (flags.Is("--until-done")) {
      pod.until_done = true;
    } else if (flags.Is("--settle")) {
      std::chrono::nanoseconds d;
      if (Status s = ParseDuration(flags.Value(), &d); !s.ok() || d.count() < 0 || d > std::chrono::hours(24)) {
        return flags.Fail("--settle: expected a duration up to a day (e.g. 10s)");
      }
      pod.settle = std::chrono::duration_cast<std::chrono::milliseconds>(d);
    } else if (flags.Is("--ca-file")) {
      pod.ca_file = flags.Value();
    } else if (flags.Is("--basic-auth")) {
      pod.basic_auth = flags.Value();
    } else if (flags.Is("--summary")) {
      summary = true;
    } else if (flags.Is("--plain")) {
      plain = true;
    } else if (flags.Is("--creds")) {
      creds = flags.Value();
      if (creds.find(':') == std::string::npos) return flags.Fail("--creds: expected USER:PASSWORD, got no ':'");
    } else if (!flags.name().empty() && flags.name()[0] != '-' && image.empty()) {
      image = flags.name();
    } else {
      return flags.Unknown();
    }
  }
  if (flags.failed()) return 2;
  if (!pod.pod.empty() || !pod.container.empty()) {
    if (!image.empty() || pod.pod.empty()) {
      std::fputs("statlet pull: --pod follows a pod's pulls and takes no IMAGE; --container needs --pod\n", stderr);
      return 2;
    }
    pod.cri_endpoint = endpoint;
    pod.plain = plain;
    return FollowPodPulls(pod);
  }
  if (image.empty()) {
    std::fputs(
        "statlet pull: no image given: name the image to pull, e.g. statlet pull registry.example/app:1 "
        "(statlet pull --help lists the flags)\n",
        stderr);
    return 2;
  }
  uint64_t interval = granularity == kep::TIME ? 1 : 64ull << 20;
  if (!interval_text.empty()) {
    if (granularity == kep::TIME) {
      std::chrono::nanoseconds d;
      if (!ParseDuration(interval_text, &d).ok() || d.count() <= 0 || d.count() % 1000000000 != 0) {
        std::fprintf(stderr, "statlet pull: --interval %s: whole seconds for time granularity, e.g. 1s\n",
                     interval_text.c_str());
        return 2;
      }
      interval = static_cast<uint64_t>(d.count() / 1000000000);
    } else if (!ParseBytes(interval_text, &interval) || interval == 0) {
      std::fprintf(stderr, "statlet pull: --interval %s: bytes for size granularity, e.g. 64MiB\n",
                   interval_text.c_str());
      return 2;
    }
  }
  auto path = ParseUnixEndpoint(endpoint);
  if (!path.ok()) {
    std::fprintf(stderr, "statlet pull: --cri.endpoint: %s\n", path.status().message().c_str());
    return 2;
  }
  if (std::string why = Unreachable(endpoint, *path); !why.empty()) {
    std::fprintf(stderr, "statlet pull %s: %s\n", image.c_str(), why.c_str());
    return 1;
  }
  // Before any thread starts, so that every thread inherits the mask.
  sigset_t stop;
  sigemptyset(&stop);
  sigaddset(&stop, SIGINT);
  sigaddset(&stop, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &stop, nullptr);
  std::thread(WatchSignals, stop).detach();
  auto stub = v1::ImageService::NewStub(grpc::CreateChannel("unix:" + *path, grpc::InsecureChannelCredentials()));

  kep::PullImageWithProgressRequest req;
  v1::PullImageRequest* pull = req.mutable_request();
  pull->mutable_image()->set_image(image);
  if (!creds.empty()) {
    pull->mutable_auth()->set_username(creds.substr(0, creds.find(':')));
    pull->mutable_auth()->set_password(creds.substr(creds.find(':') + 1));
  }
  req.set_granularity_type(granularity);
  req.mutable_interval()->set_value(interval);
  if (timeout) req.mutable_no_progress_timeout()->set_value(*timeout);
  req.set_verbosity(!summary);

  const bool terminal = !plain && isatty(STDOUT_FILENO);
  PullDisplay display(image, terminal);
  const auto start = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(); };
  grpc::ClientContext ctx;
  SetContext(&ctx);
  auto reader = stub->PullImageWithProgress(&ctx, req);
  kep::PullImageWithProgressResponse msg;
  std::string image_ref;
  int reports = 0;
  while (reader->Read(&msg)) {
    ++reports;
    image_ref = msg.image_ref();
    PullReport r;
    r.offset = msg.offset().value();
    if (msg.has_total()) r.total = msg.total().value();
    for (const auto& d : msg.details()) r.layers.push_back({d.layer(), d.offset(), d.total(), StageName(d.stage())});
    std::string text = display.Update(r, elapsed());
    std::fwrite(text.data(), 1, text.size(), stdout);
    std::fflush(stdout);
  }
  grpc::Status st = reader->Finish();
  SetContext(nullptr);
  if (st.error_code() == grpc::StatusCode::UNIMPLEMENTED && reports == 0) {
    std::fprintf(stderr, "statlet pull: %s does not implement PullImageWithProgress; pulling without progress\n",
                 endpoint.c_str());
    grpc::ClientContext plain_ctx;
    SetContext(&plain_ctx);
    v1::PullImageResponse resp;
    st = stub->PullImage(&plain_ctx, *pull, &resp);
    SetContext(nullptr);
    image_ref = resp.image_ref();
  }
  if (!st.ok()) {
    std::fprintf(stderr, "statlet pull %s: %s: %s\n", image.c_str(),
                 st.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED ? "stalled" : "failed",
                 Explain(st, endpoint).c_str());
    return ExitCode(st);
  }
  std::string done = display.Done(image_ref, elapsed());
  std::fwrite(done.data(), 1, done.size(), stdout);
  return 0;
}

}  // namespace statlet
