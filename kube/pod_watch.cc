#include "kube/pod_watch.h"

#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>

#include "base/log.h"
#include "kube/pod_resources.h"

namespace statlet::kube {
namespace {

using Json = nlohmann::json;

// A Node's name is a DNS subdomain: lowercase letters, digits, '-' and '.'.
bool ValidNodeName(const std::string& n) {
  if (n.empty() || n.size() > 253) return false;
  return std::all_of(n.begin(), n.end(),
                     [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.'; });
}

// Fills the service account's token and CA in where the options leave them empty (see
// PodWatchOptions::api).
KubeApiOptions WithServiceAccount(KubeApiOptions api) {
  const bool tls = api.url == "in-cluster" || api.url.rfind("https://", 0) == 0;
  if (api.token_file.empty()) {
    const std::string sa = std::string(kServiceAccountDir) + "/token";
    if (tls || ::access(sa.c_str(), F_OK) == 0) api.token_file = sa;
  }
  if (api.ca_file.empty()) api.ca_file = std::string(kServiceAccountDir) + "/ca.crt";
  return api;
}

std::string ResourceVersionOf(const Json& object) {
  auto m = object.find("metadata");
  if (m == object.end() || !m->is_object()) return "";
  auto rv = m->find("resourceVersion");
  return rv != m->end() && rv->is_string() ? rv->get<std::string>() : "";
}

bool Terminal(const Json& pod) {
  auto st = pod.find("status");
  if (st == pod.end() || !st->is_object()) return false;
  auto phase = st->find("phase");
  return phase != st->end() && phase->is_string() && (*phase == "Succeeded" || *phase == "Failed");
}

std::string Excerpt(const std::string& body) { return body.substr(0, 300); }

}  // namespace

std::string QueryEscape(const std::string& s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
        c == '_' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

StatusOr<std::unique_ptr<PodWatch>> PodWatch::Create(PodWatchOptions options) {
  if (!ValidNodeName(options.node_name)) {
    return InvalidArgument("node name \"" + options.node_name + "\" is not a DNS subdomain");
  }
  auto client = KubeApiClient::Create(WithServiceAccount(options.api));
  if (!client.ok()) return client.status();
  std::unique_ptr<PodWatch> w(new PodWatch(std::move(options)));
  w->client_ = std::move(*client);
  w->selector_ = QueryEscape("spec.nodeName=" + w->options_.node_name);
  w->state_.name = w->client_->url();
  w->state_.detail = "not listed yet";
  return w;
}

PodWatch::~PodWatch() { Stop(); }

void PodWatch::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stop_ = false;
  running_ = true;
  client_->Reset();
  thread_ = std::thread([this] {
    Loop();
    std::lock_guard<std::mutex> l(mu_);
    running_ = false;
    cv_.notify_all();
  });
}

void PodWatch::Stop() {
  std::unique_lock<std::mutex> lock(mu_);
  if (!thread_.joinable()) return;
  stop_ = true;
  cv_.notify_all();
  // A request may start between two cancellations: cancel until the loop has returned.
  while (running_) {
    lock.unlock();
    client_->Cancel();
    lock.lock();
    cv_.wait_for(lock, std::chrono::milliseconds(100), [this] { return !running_; });
  }
  lock.unlock();
  thread_.join();
}

std::shared_ptr<const PodMemorySpecs> PodWatch::Current() {
  std::lock_guard<std::mutex> lock(mu_);
  return current_;
}

SourceState PodWatch::State() const {
  std::lock_guard<std::mutex> lock(mu_);
  return state_;
}

PodWatchCounters PodWatch::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

bool PodWatch::Stopping() {
  std::lock_guard<std::mutex> lock(mu_);
  return stop_;
}

void PodWatch::Backoff() {
  backoff_ = std::clamp(backoff_ * 2, options_.min_backoff, options_.max_backoff);
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, backoff_, [this] { return stop_; });
}

void PodWatch::Failed(const Status& s) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.failures;
  if (state_.up || state_.detail != s.message()) {
    log::Warn("memory qos: pods from the API server: " + s.message() + "; retrying with backoff");
  }
  state_.up = false;
  state_.detail = s.message();
}

void PodWatch::Succeeded() {
  backoff_ = std::chrono::milliseconds(0);
  std::lock_guard<std::mutex> lock(mu_);
  if (!state_.up && counters_.failures > 0) log::Info("memory qos: pods from the API server again");
  state_.up = true;
  state_.detail.clear();
}

void PodWatch::Publish() {
  auto specs = std::make_shared<PodMemorySpecs>();
  specs->by_uid = pods_;
  for (const auto& [uid, pod] : pods_) {
    for (const ContainerMemorySpec& c : pod.containers) {
      if (!c.container_id.empty()) specs->uid_by_container_id[c.container_id] = uid;
    }
  }
  specs->kubelet_version = kubelet_version_;
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(specs);
}

void PodWatch::Upsert(std::unordered_map<std::string, PodMemorySpec>* pods, PodMemorySpec spec) {
  auto it = pods->find(spec.uid);
  if (it != pods->end()) {
    it->second = std::move(spec);
    return;
  }
  if (pods->size() >= options_.max_pods) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.pods_dropped;
    if (!drop_logged_) {
      log::Warn("memory qos: more than " + std::to_string(options_.max_pods) +
                " pods on this node; the rest have no requests from the API server");
      drop_logged_ = true;
    }
    return;
  }
  pods->emplace(spec.uid, std::move(spec));
}

Status PodWatch::FetchNode() {
  auto r = client_->Get("/api/v1/nodes/" + options_.node_name, options_.max_node_bytes);
  if (!r.ok()) return r.status();
  if (r->status != 200) {
    return Unavailable("GET node " + options_.node_name + ": HTTP " + std::to_string(r->status) + ": " +
                       Excerpt(r->body));
  }
  Json node = Json::parse(r->body, nullptr, false);
  std::string version;
  if (node.is_object()) {
    const Json& v = node["status"]["nodeInfo"]["kubeletVersion"];
    if (v.is_string()) version = v.get<std::string>();
  }
  if (version.empty()) return Unavailable("node " + options_.node_name + " has no status.nodeInfo.kubeletVersion");
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.node_fetches;
  }
  if (version != kubelet_version_) {
    kubelet_version_ = version;
    Publish();
  }
  return Status::Ok();
}

Status PodWatch::List(std::string* resource_version, bool* gone) {
  std::unordered_map<std::string, PodMemorySpec> pods;
  std::string cont;
  int page = options_.page_size;
  for (;;) {
    if (Stopping()) return Unavailable("stopping");
    std::string path = "/api/v1/pods?fieldSelector=" + selector_ + "&limit=" + std::to_string(page);
    if (!cont.empty()) path += "&continue=" + QueryEscape(cont);
    auto r = client_->Get(path, options_.max_page_bytes);
    if (!r.ok()) {
      // A page over the cap: ask for fewer pods per page.
      if (page > 1 && r.status().message().find("exceeds") != std::string::npos) {
        page = std::max(1, page / 2);
        continue;
      }
      return r.status();
    }
    if (r->status == 410) {
      *gone = true;  // the continue token expired
      return Unavailable("list: 410 Gone");
    }
    if (r->status != 200) return Unavailable("list pods: HTTP " + std::to_string(r->status) + ": " + Excerpt(r->body));
    Json list = Json::parse(r->body, nullptr, false);
    if (!list.is_object() || !list["items"].is_array()) return Unavailable("list pods: not a PodList");
    for (const Json& item : list["items"]) {
      if (Terminal(item)) continue;
      auto spec = PodMemorySpecFromJson(item);
      if (!spec.ok()) {
        log::Once(log::Level::kWarn, "podspec:" + spec.status().message(),
                  "memory qos: a pod from the API server is left out: " + spec.status().message());
        continue;
      }
      Upsert(&pods, std::move(*spec));
    }
    *resource_version = ResourceVersionOf(list);
    const Json& c = list["metadata"]["continue"];
    cont = c.is_string() ? c.get<std::string>() : "";
    if (cont.empty()) break;
  }
  pods_ = std::move(pods);
  Publish();
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.lists;
  return Status::Ok();
}

Status PodWatch::ApplyEvent(const std::string& line, std::string* resource_version, bool* gone) {
  Json ev = Json::parse(line, nullptr, false);
  if (!ev.is_object() || !ev["type"].is_string() || !ev["object"].is_object()) {
    return Unavailable("watch: an event that is not {type, object}");
  }
  const std::string type = ev["type"].get<std::string>();
  const Json& obj = ev["object"];
  if (type == "ERROR") {
    const Json& code = obj["code"];
    if (code.is_number() && code.get<int>() == 410) {
      *gone = true;
      return Status::Ok();
    }
    return Unavailable("watch: ERROR event: " + obj.dump().substr(0, 300));
  }
  const std::string rv = ResourceVersionOf(obj);
  if (!rv.empty()) *resource_version = rv;
  if (type == "BOOKMARK") return Status::Ok();
  const Json& uid = obj["metadata"]["uid"];
  if (type == "DELETED" || Terminal(obj)) {
    if (uid.is_string()) pods_.erase(uid.get<std::string>());
    return Status::Ok();
  }
  if (type != "ADDED" && type != "MODIFIED") return Unavailable("watch: event type " + type);
  auto spec = PodMemorySpecFromJson(obj);
  if (!spec.ok()) {
    log::Once(log::Level::kWarn, "podspec:" + spec.status().message(),
              "memory qos: a pod from the API server is left out: " + spec.status().message());
    return Status::Ok();
  }
  Upsert(&pods_, std::move(*spec));
  return Status::Ok();
}

Status PodWatch::Watch(std::string* resource_version, bool* gone, bool* delivered) {
  const std::string path = "/api/v1/pods?fieldSelector=" + selector_ + "&watch=true&allowWatchBookmarks=true" +
                           "&resourceVersion=" + QueryEscape(*resource_version) +
                           "&timeoutSeconds=" + std::to_string(options_.watch_timeout.count());
  std::string buf;
  size_t start = 0;  // the unparsed rest of buf begins here
  Status failure;
  auto r = client_->Stream(
      path, options_.watch_timeout + std::chrono::seconds(30),
      [&](const char* data, size_t n) {
        buf.append(data, n);
        bool changed = false;
        for (size_t nl; (nl = buf.find('\n', start)) != std::string::npos; start = nl + 1) {
          if (nl == start) continue;
          Status s = ApplyEvent(buf.substr(start, nl - start), resource_version, gone);
          if (!s.ok()) {
            failure = s;
            return false;
          }
          if (*gone) return false;
          changed = true;
          *delivered = true;
          std::lock_guard<std::mutex> lock(mu_);
          ++counters_.events;
        }
        buf.erase(0, start);
        start = 0;
        if (buf.size() > options_.max_event_bytes) {
          failure = Unavailable("watch: an event exceeds " + std::to_string(options_.max_event_bytes) + " bytes");
          return false;
        }
        if (changed) Publish();
        return true;
      },
      [&](int status) {
        if (status == 200) Succeeded();  // watching: the server answers again
      });
  if (*delivered) Publish();
  if (!r.ok()) return r.status();
  if (*gone) return Status::Ok();
  if (!failure.ok()) return failure;
  if (r->status == 410) {
    *gone = true;
    return Status::Ok();
  }
  if (r->status != 200) return Unavailable("watch pods: HTTP " + std::to_string(r->status) + ": " + Excerpt(r->body));
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.watches;
  return Status::Ok();
}

void PodWatch::Loop() {
  using Clock = std::chrono::steady_clock;
  Clock::time_point next_node{};
  bool listed = false;
  std::string rv;
  while (!Stopping()) {
    if (Clock::now() >= next_node) {
      Status s = FetchNode();
      if (!s.ok() && !Stopping()) {
        log::Once(log::Level::kWarn, "node:" + s.message(),
                  "memory qos: the kubelet's version from the API server: " + s.message() + " (retried every 30s)");
      }
      next_node = Clock::now() + (s.ok() ? options_.node_refresh : std::chrono::seconds(30));
    }
    if (!listed) {
      bool gone = false;
      Status s = List(&rv, &gone);
      if (Stopping()) break;
      if (!s.ok()) {
        Failed(s);
        Backoff();
        continue;
      }
      listed = true;
      Succeeded();
    }
    bool gone = false, delivered = false;
    const Clock::time_point began = Clock::now();
    Status s = Watch(&rv, &gone, &delivered);
    if (Stopping()) break;
    if (gone) {
      // The version is too old to watch from: list again.
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.gone;
      listed = false;
      continue;
    }
    if (!s.ok()) {
      Failed(s);
      if (delivered) backoff_ = std::chrono::milliseconds(0);  // it worked until it broke
      Backoff();
      continue;
    }
    Succeeded();
    // A server that ends every watch at once must not make this a busy loop.
    if (!delivered && Clock::now() - began < options_.min_backoff) Backoff();
  }
}

}  // namespace statlet::kube
