#include "runtime/runtime_client.h"

#include <sys/stat.h>
#include <time.h>

#include <algorithm>
#include <charconv>
#include <functional>

#include <grpcpp/grpcpp.h>

#include "base/log.h"
#include "base/monotonic_clock.h"
#include "base/unix_socket.h"
#include "proto/api.grpc.pb.h"
#include "proto/image_service.grpc.pb.h"
#include "runtime/filesystem_stats.h"

namespace statlet {
namespace v1 = ::runtime::v1;

const char* RuntimeStateName(RuntimeState s) {
  switch (s) {
    case RuntimeState::kUnknown: return "unknown";
    case RuntimeState::kAbsent: return "absent";
    case RuntimeState::kDown: return "down";
    case RuntimeState::kUp: return "up";
  }
  return "unknown";
}

std::vector<std::string> DefaultRuntimeSockets() {
  return {"/run/containerd/containerd.sock", "/run/crio/crio.sock", "/var/run/containerd/containerd.sock",
          "/var/run/crio/crio.sock", "/run/k3s/containerd/containerd.sock"};
}

struct RuntimeClient::Conn {
  std::string path;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::RuntimeService::Stub> stub;
  std::unique_ptr<v1::ImageService::Stub> images;
  bool versioned = false;
};

struct RuntimeClient::Lists {
  v1::ListPodSandboxResponse sandboxes;
  v1::ListContainersResponse containers;
};

namespace {

bool IsSocket(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode);
}

// Containers new to a round asked ContainerStats for their writable layer, at most.
constexpr int kMaxLayerAsksPerRound = 16;

std::string Describe(const grpc::Status& s) {
  return "code " + std::to_string(static_cast<int>(s.error_code())) + ": " + s.error_message();
}

void SetDeadline(grpc::ClientContext* ctx, std::chrono::milliseconds timeout) {
  ctx->set_deadline(std::chrono::system_clock::now() + timeout);
}

// Which sandbox names a pod: a ready one before a stopped one, then the newest.
bool Better(const v1::PodSandbox& a, const v1::PodSandbox& b) {
  bool ar = a.state() == v1::SANDBOX_READY, br = b.state() == v1::SANDBOX_READY;
  if (ar != br) return ar;
  return a.created_at() > b.created_at();
}

// A cgroup v2 knob's value as the kubelet writes it into `unified`: bytes or "max".
Opt<uint64_t> UnifiedBytes(const google::protobuf::Map<std::string, std::string>& unified, const char* key) {
  auto it = unified.find(key);
  if (it == unified.end()) return std::nullopt;
  const std::string& v = it->second;
  if (v == "max") return kUnlimited;
  uint64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || v.empty()) return std::nullopt;
  return n;
}

// The runtime's FilesystemUsage as a writable layer. The filesystem under a reachable
// mountpoint is measured with statvfs once per reader (one round); a runtime that names no
// mountpoint is asked (once per reader) where its container filesystem is.
class LayerReader {
 public:
  explicit LayerReader(std::function<std::string()> container_filesystem)
      : container_filesystem_(std::move(container_filesystem)) {}

  ContainerMetadata::WritableLayer Read(const v1::FilesystemUsage& fu) {
    ContainerMetadata::WritableLayer l;
    l.timestamp_ns = fu.timestamp();
    l.mountpoint = fu.fs_id().mountpoint();
    if (l.mountpoint.empty()) {
      if (!asked_) fallback_ = container_filesystem_();
      asked_ = true;
      l.mountpoint = fallback_;
    }
    if (fu.has_used_bytes()) l.used_bytes = fu.used_bytes().value();
    if (fu.has_inodes_used()) l.inodes_used = fu.inodes_used().value();
    if (l.timestamp_ns == 0) l.timestamp_ns = 1;  // reported, without a time of its own
    if (!l.mountpoint.empty()) {
      auto [it, fresh] = by_mountpoint_.try_emplace(l.mountpoint);
      if (fresh && !StatFilesystem(l.mountpoint, &it->second)) it->second.device.clear();
      const FilesystemStats& fs = it->second;
      l.capacity_bytes = fs.capacity_bytes;
      l.inodes_total = fs.inodes_total;
      l.inodes_free = fs.inodes_free;
      l.device = fs.device;
    }
    return l;
  }

 private:
  std::function<std::string()> container_filesystem_;
  bool asked_ = false;
  std::string fallback_;
  std::unordered_map<std::string, FilesystemStats> by_mountpoint_;
};

// The memory part of the resources the runtime reports for a container.
ContainerMetadata::MemoryResources MemoryResourcesOf(const v1::LinuxContainerResources& r) {
  ContainerMetadata::MemoryResources m;
  m.reported = true;
  if (r.memory_limit_in_bytes() > 0) m.limit_bytes = static_cast<uint64_t>(r.memory_limit_in_bytes());
  m.unified_min_bytes = UnifiedBytes(r.unified(), "memory.min");
  m.unified_low_bytes = UnifiedBytes(r.unified(), "memory.low");
  m.unified_high_bytes = UnifiedBytes(r.unified(), "memory.high");
  return m;
}

}  // namespace

// Registers the call in flight (with its deadline) so that Stop() can cancel it: a hung
// runtime must not hold the daemon's exit for a call timeout.
class RuntimeClient::ActiveCall {
 public:
  ActiveCall(RuntimeClient* client, grpc::ClientContext* ctx) : client_(client) {
    SetDeadline(ctx, client->options_.call_timeout);
    std::lock_guard<std::mutex> lock(client->call_mu_);
    client->call_ = ctx;
    if (client->cancelled_) ctx->TryCancel();
  }
  ~ActiveCall() {
    std::lock_guard<std::mutex> lock(client_->call_mu_);
    client_->call_ = nullptr;
  }

 private:
  RuntimeClient* client_;
};

RuntimeClient::RuntimeClient(RuntimeClientOptions options)
    : options_(std::move(options)), lists_(std::make_unique<Lists>()), current_(std::make_shared<MetadataMap>()) {}

RuntimeClient::~RuntimeClient() { Stop(); }

void RuntimeClient::Start() {
  std::lock_guard<std::mutex> lock(loop_mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  {
    std::lock_guard<std::mutex> call_lock(call_mu_);
    cancelled_ = false;
  }
  thread_ = std::thread([this] { Loop(); });
}

void RuntimeClient::Stop() {
  {
    std::lock_guard<std::mutex> lock(loop_mu_);
    stop_ = true;
  }
  {
    std::lock_guard<std::mutex> lock(call_mu_);
    cancelled_ = true;
    if (call_ != nullptr) call_->TryCancel();
  }
  loop_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void RuntimeClient::Loop() {
  const auto first_backoff = std::min(options_.refresh_period, std::chrono::milliseconds(1000));
  auto backoff = first_backoff;
  std::chrono::steady_clock::time_point last_stats{};
  bool stats_asked = false;
  while (true) {
    const uint64_t round_change = changes_.load(std::memory_order_relaxed);
    Status s = Refresh();
    std::chrono::milliseconds wait = options_.refresh_period;
    if (s.ok()) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        covered_change_ = std::max(covered_change_, round_change);
        covered_at_ns_ = MonotonicNowNs();
      }
      covered_cv_.notify_all();
      auto now = std::chrono::steady_clock::now();
      if (options_.stats_period.count() > 0 && (!stats_asked || now - last_stats >= options_.stats_period)) {
        // A failure is counted in the status and retried at the next period, not sooner:
        // a runtime without ListContainerStats must not be asked on every round.
        (void)RefreshStats();
        last_stats = now;
        stats_asked = true;
      }
      backoff = first_backoff;
    } else {
      wait = std::min(backoff, options_.max_backoff);
      backoff = std::min(backoff * 2, options_.max_backoff);
    }
    std::unique_lock<std::mutex> lock(loop_mu_);
    // A change noted during the round (or the wait) starts the next one at once.
    loop_cv_.wait_for(lock, wait, [&] { return stop_ || changes_.load(std::memory_order_relaxed) != round_change; });
    if (stop_) return;
  }
}

uint64_t RuntimeClient::NoteChange() {
  const uint64_t n = changes_.fetch_add(1, std::memory_order_relaxed) + 1;
  {
    // Taken only for the wake-up not to fall between the loop's check and its wait: the
    // loop holds it just while it decides to wait, never during a round.
    std::lock_guard<std::mutex> lock(loop_mu_);
  }
  loop_cv_.notify_all();
  return n;
}

std::optional<int64_t> RuntimeClient::WaitCovering(uint64_t change, std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mu_);
  const bool covered = covered_cv_.wait_for(
      lock, timeout, [&] { return covered_change_ >= change || status_.state != RuntimeState::kUp; });
  if (!covered || covered_change_ < change) return std::nullopt;
  return covered_at_ns_;
}

std::optional<int64_t> RuntimeClient::CoverUnknown(const std::vector<std::string>& ids,
                                                   std::chrono::milliseconds timeout) {
  uint64_t need = 0;  // the newest change an id waits for that no published round covers yet
  std::vector<std::string> fresh;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status_.state != RuntimeState::kUp) return std::nullopt;
    std::unordered_map<std::string, uint64_t> asked;
    asked.reserve(ids.size());
    for (const std::string& id : ids) {
      auto it = unknown_asked_.find(id);
      if (it == unknown_asked_.end()) {
        fresh.push_back(id);
        continue;
      }
      if (it->second > covered_change_) need = std::max(need, it->second);
      asked.emplace(id, it->second);
    }
    unknown_asked_ = std::move(asked);
  }
  if (!fresh.empty()) {
    const uint64_t change = NoteChange();
    need = std::max(need, change);
    std::lock_guard<std::mutex> lock(mu_);
    for (std::string& id : fresh) unknown_asked_.emplace(std::move(id), change);
  }
  if (need == 0) return std::nullopt;
  // A caller handing over an id another call asked for waits for the same round.
  return WaitCovering(need, timeout);
}

std::shared_ptr<const MetadataMap> RuntimeClient::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

RuntimeClientStatus RuntimeClient::status() const {
  std::lock_guard<std::mutex> lock(mu_);
  return status_;
}

void RuntimeClient::SetState(RuntimeState s, const std::string& endpoint, const std::string& error) {
  RuntimeState before;
  {
    std::lock_guard<std::mutex> lock(mu_);
    before = status_.state;
    status_.state = s;
    status_.endpoint = endpoint;
    status_.last_error = error;
    if (s != RuntimeState::kUp) ++status_.failures;
  }
  if (s != RuntimeState::kUp) covered_cv_.notify_all();  // nobody waits for a round that cannot come
  if (before == s) return;                               // log transitions only: once per outage
  switch (s) {
    case RuntimeState::kAbsent:
      log::Warn("no container runtime found (" + error +
                "); serving cgroup-derived stats with ids from cgroup paths, still looking");
      break;
    case RuntimeState::kDown:
      log::Warn("container runtime at " + endpoint + " is unavailable (" + error +
                "); keeping the last metadata, reconnecting with backoff");
      break;
    case RuntimeState::kUp: {
      RuntimeClientStatus st = status();
      log::Info("container runtime at " + endpoint + " connected: " + st.runtime_name + " " + st.runtime_version);
      break;
    }
    case RuntimeState::kUnknown: break;
  }
}

Status RuntimeClient::Refresh() {
  std::lock_guard<std::mutex> lock(refresh_mu_);
  return RefreshLocked();
}

Status RuntimeClient::RefreshLocked() {
  auto path = ResolveSocketLocked();
  if (!path.ok()) return path.status();
  ConnectLocked(*path);
  if (Status s = VersionLocked(*path); !s.ok()) return s;
  if (Status s = ListLocked(*path); !s.ok()) return s;
  if (Status s = AskNewContainersLocked(*path); !s.ok()) return s;
  AskNewLayersLocked();
  PublishIfChangedLocked();
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++status_.refreshes;
    status_.sandboxes = static_cast<uint64_t>(lists_->sandboxes.items_size());
    status_.containers = static_cast<uint64_t>(lists_->containers.containers_size());
  }
  SetState(RuntimeState::kUp, *path, "");
  return Status::Ok();
}

StatusOr<std::string> RuntimeClient::ResolveSocketLocked() {
  // Resolve the socket each round while none is connected: the runtime may start later.
  std::string path;
  if (!options_.endpoint.empty()) {
    auto p = ParseUnixEndpoint(options_.endpoint);
    if (!p.ok()) {
      SetState(RuntimeState::kAbsent, options_.endpoint, p.status().message());
      return p.status();
    }
    path = *p;
  } else if (conn_ != nullptr && IsSocket(conn_->path)) {
    path = conn_->path;
  } else {
    for (const auto& c : options_.candidates) {
      if (IsSocket(c)) {
        path = c;
        break;
      }
    }
  }
  if (path.empty() || !IsSocket(path)) {
    std::string tried = path;
    if (tried.empty()) {
      for (const auto& c : options_.candidates) tried += (tried.empty() ? "tried " : ", ") + c;
    } else {
      tried = "no socket at " + tried;
    }
    conn_.reset();
    SetState(RuntimeState::kAbsent, path, tried);
    return Unavailable(tried);
  }
  return path;
}

void RuntimeClient::ConnectLocked(const std::string& path) {
  if (conn_ != nullptr && conn_->path == path) return;
  conn_ = std::make_unique<Conn>();
  conn_->path = path;
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(64 << 20);
  conn_->channel = grpc::CreateCustomChannel("unix:" + path, grpc::InsecureChannelCredentials(), args);
  conn_->stub = v1::RuntimeService::NewStub(conn_->channel);
  conn_->images = v1::ImageService::NewStub(conn_->channel);
}

Status RuntimeClient::CallFailedLocked(const std::string& path, const char* call, const std::string& detail) {
  conn_->versioned = false;
  std::string err = std::string(call) + " failed: " + detail;
  SetState(RuntimeState::kDown, path, err);
  return Unavailable(err);
}

Status RuntimeClient::VersionLocked(const std::string& path) {
  if (conn_->versioned) return Status::Ok();
  grpc::ClientContext ctx;
  ActiveCall active(this, &ctx);
  v1::VersionRequest req;
  req.set_version("v1");
  v1::VersionResponse resp;
  grpc::Status s = conn_->stub->Version(&ctx, req, &resp);
  if (!s.ok()) return CallFailedLocked(path, "Version", Describe(s));
  std::lock_guard<std::mutex> lock(mu_);
  status_.runtime_name = resp.runtime_name();
  status_.runtime_version = resp.runtime_version();
  conn_->versioned = true;
  return Status::Ok();
}

Status RuntimeClient::ListLocked(const std::string& path) {
  v1::ListPodSandboxResponse& sandboxes = lists_->sandboxes;
  sandboxes.Clear();
  {
    grpc::ClientContext ctx;
    ActiveCall active(this, &ctx);
    grpc::Status s = conn_->stub->ListPodSandbox(&ctx, v1::ListPodSandboxRequest(), &sandboxes);
    if (!s.ok()) return CallFailedLocked(path, "ListPodSandbox", Describe(s));
  }
  v1::ListContainersResponse& containers = lists_->containers;
  containers.Clear();
  grpc::ClientContext ctx;
  ActiveCall active(this, &ctx);
  grpc::Status s = conn_->stub->ListContainers(&ctx, v1::ListContainersRequest(), &containers);
  if (!s.ok()) return CallFailedLocked(path, "ListContainers", Describe(s));
  return Status::Ok();
}

Status RuntimeClient::AskNewContainersLocked(const std::string& path) {
  // ContainerStatus only for containers new to us, or not started when last asked.
  std::unordered_map<std::string, Known> known;
  for (const auto& c : lists_->containers.containers()) {
    auto it = known_.find(c.id());
    bool ask = it == known_.end() || (it->second.started_at == 0 && c.state() == v1::CONTAINER_RUNNING);
    if (!ask) {
      known.emplace(c.id(), it->second);
      continue;
    }
    grpc::ClientContext ctx;
    ActiveCall active(this, &ctx);
    v1::ContainerStatusRequest req;
    req.set_container_id(c.id());
    v1::ContainerStatusResponse resp;
    grpc::Status s = conn_->stub->ContainerStatus(&ctx, req, &resp);
    if (s.error_code() == grpc::StatusCode::NOT_FOUND) continue;  // removed meanwhile
    if (!s.ok()) return CallFailedLocked(path, "ContainerStatus", Describe(s));
    Known k;
    k.started_at = resp.status().started_at();
    const auto& img = resp.status().image();
    k.image = !img.user_specified_image().empty() ? img.user_specified_image() : img.image();
    k.image_ref = resp.status().image_ref();
    if (resp.status().has_resources() && resp.status().resources().has_linux()) {
      k.memory = MemoryResourcesOf(resp.status().resources().linux());
    }
    known.emplace(c.id(), std::move(k));
  }
  known_ = std::move(known);
  return Status::Ok();
}

void RuntimeClient::PublishIfChangedLocked() {
  // Rebuild only when something changed: ids, states, start times.
  std::string fp;
  for (const auto& p : lists_->sandboxes.items()) fp += p.id() + ":" + std::to_string(p.state()) + ";";
  for (const auto& c : lists_->containers.containers()) {
    auto it = known_.find(c.id());
    fp += c.id() + ":" + std::to_string(c.state()) + ":" +
          std::to_string(it == known_.end() ? 0 : it->second.started_at) + ":" + std::to_string(layers_.count(c.id())) +
          ";";
  }
  if (fp == last_fingerprint_) return;
  last_fingerprint_ = std::move(fp);
  PublishLocked();
}

// Rebuilds the published map from the last lists, ContainerStatus answers and layers.
void RuntimeClient::PublishLocked() {
  const v1::ListPodSandboxResponse& sandboxes = lists_->sandboxes;
  const v1::ListContainersResponse& containers = lists_->containers;
  auto map = std::make_shared<MetadataMap>();
  std::unordered_map<std::string, const v1::PodSandbox*> sandbox_by_id;
  std::unordered_map<std::string, const v1::PodSandbox*> best_by_uid;
  for (const auto& p : sandboxes.items()) {
    sandbox_by_id[p.id()] = &p;
    auto& best = best_by_uid[p.metadata().uid()];
    if (best == nullptr || Better(p, *best)) best = &p;
    auto m = std::make_shared<ContainerMetadata>();
    m->container_id = p.id();
    m->pod_sandbox_id = p.id();
    m->pod_name = p.metadata().name();
    m->pod_namespace = p.metadata().namespace_();
    m->pod_uid = p.metadata().uid();
    m->pod_attempt = p.metadata().attempt();
    m->labels.insert(p.labels().begin(), p.labels().end());
    m->annotations.insert(p.annotations().begin(), p.annotations().end());
    m->pod_labels = m->labels;
    m->pod_annotations = m->annotations;
    m->created_at_ns = p.created_at();
    m->started_at_ns = p.created_at();
    m->is_sandbox = true;
    map->by_container_id[p.id()] = std::move(m);
  }
  for (const auto& [uid, p] : best_by_uid) {
    if (!uid.empty()) map->sandbox_by_pod_uid[uid] = map->by_container_id[p->id()];
  }
  for (const auto& c : containers.containers()) {
    auto m = std::make_shared<ContainerMetadata>();
    m->container_id = c.id();
    m->container_name = c.metadata().name();
    m->attempt = c.metadata().attempt();
    m->pod_sandbox_id = c.pod_sandbox_id();
    if (auto it = sandbox_by_id.find(c.pod_sandbox_id()); it != sandbox_by_id.end()) {
      const v1::PodSandbox& p = *it->second;
      m->pod_name = p.metadata().name();
      m->pod_namespace = p.metadata().namespace_();
      m->pod_uid = p.metadata().uid();
      m->pod_attempt = p.metadata().attempt();
      m->pod_labels.insert(p.labels().begin(), p.labels().end());
      m->pod_annotations.insert(p.annotations().begin(), p.annotations().end());
    }
    const Known* k = nullptr;
    if (auto it = known_.find(c.id()); it != known_.end()) k = &it->second;
    m->image = k != nullptr && !k->image.empty() ? k->image : c.image().image();
    m->image_ref = k != nullptr && !k->image_ref.empty() ? k->image_ref : c.image_ref();
    m->labels.insert(c.labels().begin(), c.labels().end());
    m->annotations.insert(c.annotations().begin(), c.annotations().end());
    m->created_at_ns = c.created_at();
    m->started_at_ns = k != nullptr ? k->started_at : 0;
    if (auto it = layers_.find(c.id()); it != layers_.end()) m->writable_layer = it->second;
    if (k != nullptr) m->memory_resources = k->memory;
    map->by_container_id[c.id()] = std::move(m);
  }
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(map);
}

Status RuntimeClient::RefreshStats() {
  std::lock_guard<std::mutex> lock(refresh_mu_);
  Status st = RefreshStatsLocked();
  std::lock_guard<std::mutex> l(mu_);
  if (st.ok()) {
    ++status_.stats_refreshes;
    status_.last_stats_error.clear();
  } else {
    ++status_.stats_failures;
    status_.last_stats_error = st.message();
  }
  return st;
}

Status RuntimeClient::RefreshStatsLocked() {
  if (conn_ == nullptr || !conn_->versioned) return Unavailable("runtime not connected");
  v1::ListContainerStatsResponse resp;
  {
    grpc::ClientContext ctx;
    ActiveCall active(this, &ctx);
    grpc::Status s = conn_->stub->ListContainerStats(&ctx, v1::ListContainerStatsRequest(), &resp);
    if (!s.ok()) return Unavailable("ListContainerStats failed: " + Describe(s));
  }
  LayerReader reader([this] { return ContainerFilesystemLocked(); });
  std::unordered_map<std::string, ContainerMetadata::WritableLayer> layers;
  for (const auto& cs : resp.stats()) {
    if (!cs.has_writable_layer() || cs.attributes().id().empty()) continue;
    layers.emplace(cs.attributes().id(), reader.Read(cs.writable_layer()));
  }
  layers_ = std::move(layers);
  PublishLocked();
  return Status::Ok();
}

void RuntimeClient::AskNewLayersLocked() {
  if (options_.stats_period.count() == 0) return;  // the runtime's stats are never asked
  LayerReader reader([this] { return ContainerFilesystemLocked(); });
  int asked = 0;
  for (const auto& c : lists_->containers.containers()) {
    if (asked == kMaxLayerAsksPerRound) break;
    if (c.state() != v1::CONTAINER_RUNNING || layers_.count(c.id()) != 0 || !layer_asked_.insert(c.id()).second) {
      continue;
    }
    ++asked;
    grpc::ClientContext ctx;
    ActiveCall active(this, &ctx);
    v1::ContainerStatsRequest req;
    req.set_container_id(c.id());
    v1::ContainerStatsResponse resp;
    if (!conn_->stub->ContainerStats(&ctx, req, &resp).ok() || !resp.stats().has_writable_layer()) continue;
    layers_.emplace(c.id(), reader.Read(resp.stats().writable_layer()));
  }
  // Forget the containers gone from the lists.
  std::erase_if(layer_asked_, [&](const std::string& id) { return known_.count(id) == 0; });
}

std::string RuntimeClient::ContainerFilesystemLocked() {
  grpc::ClientContext ctx;
  ActiveCall active(this, &ctx);
  v1::ImageFsInfoResponse info;
  if (!conn_->images->ImageFsInfo(&ctx, v1::ImageFsInfoRequest(), &info).ok()) return "";
  for (const auto* list : {&info.container_filesystems(), &info.image_filesystems()}) {
    for (const auto& fs : *list) {
      if (!fs.fs_id().mountpoint().empty()) return fs.fs_id().mountpoint();
    }
  }
  return "";
}

SourceState RuntimeClient::State() const {
  RuntimeClientStatus st = status();
  SourceState out;
  out.name = st.endpoint;
  out.up = st.state == RuntimeState::kUp;
  out.detail = out.up ? st.runtime_name + " " + st.runtime_version : RuntimeStateName(st.state);
  return out;
}

}  // namespace statlet
