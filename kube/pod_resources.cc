#include "kube/pod_resources.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <unordered_map>

#include "kube/quantity.h"

namespace statlet::kube {
namespace {

using Json = nlohmann::json;

const Json& Field(const Json& j, const char* key) {
  static const Json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

std::string Text(const Json& j) { return j.is_string() ? j.get<std::string>() : std::string(); }

// resources.{requests,limits}.memory → bytes (0 when absent).
Status Memory(const Json& resources, const char* which, uint64_t* out) {
  const Json& q = Field(Field(resources, which), "memory");
  *out = 0;
  if (q.is_null()) return Status::Ok();
  std::optional<uint64_t> v;
  if (q.is_string()) v = ParseQuantity(q.get<std::string>());
  else if (q.is_number_unsigned()) v = q.get<uint64_t>();
  if (!v) return InvalidArgument(std::string(which) + ".memory " + q.dump() + " is not a quantity");
  *out = *v;
  return Status::Ok();
}

QosClass ClassOf(const std::string& s) {
  if (s == "Guaranteed") return QosClass::kGuaranteed;
  if (s == "Burstable") return QosClass::kBurstable;
  if (s == "BestEffort") return QosClass::kBestEffort;
  return QosClass::kUnknown;
}

struct Reported {
  std::string id;
  const Json* resources = nullptr;  // status resources, when the kubelet reports them
};

// name → the status the kubelet reports for the container.
std::unordered_map<std::string, Reported> Statuses(const Json& list) {
  std::unordered_map<std::string, Reported> out;
  if (!list.is_array()) return out;
  for (const Json& s : list) {
    Reported& r = out[Text(Field(s, "name"))];
    r.id = RuntimeContainerId(Text(Field(s, "containerID")));
    if (const Json& res = Field(s, "resources"); res.is_object()) r.resources = &res;
  }
  return out;
}

// One container: what the kubelet applied (status.*ContainerStatuses[].resources, the
// allocated resources after an in-place resize), else the spec.
Status Container(const Json& c, const std::unordered_map<std::string, Reported>& statuses, ContainerMemorySpec* out) {
  out->name = Text(Field(c, "name"));
  const Json* res = &Field(c, "resources");
  if (auto it = statuses.find(out->name); it != statuses.end()) {
    out->container_id = it->second.id;
    if (it->second.resources != nullptr) res = it->second.resources;
  }
  if (Status s = Memory(*res, "requests", &out->request); !s.ok())
    return InvalidArgument(out->name + ": " + s.message());
  if (Status s = Memory(*res, "limits", &out->limit); !s.ok()) return InvalidArgument(out->name + ": " + s.message());
  // The API server defaults a missing request to the limit.
  if (out->request == 0 && out->limit != 0 && Field(Field(*res, "requests"), "memory").is_null())
    out->request = out->limit;
  return Status::Ok();
}

}  // namespace

std::string RuntimeContainerId(const std::string& id) {
  const size_t sep = id.find("://");
  return sep == std::string::npos ? id : id.substr(sep + 3);
}

StatusOr<PodMemorySpec> PodMemorySpecFromJson(const Json& pod) {
  PodMemorySpec out;
  out.uid = Text(Field(Field(pod, "metadata"), "uid"));
  if (out.uid.empty()) return InvalidArgument("a pod without metadata.uid");
  const Json& spec = Field(pod, "spec");
  const Json& status = Field(pod, "status");
  out.qos = ClassOf(Text(Field(status, "qosClass")));

  const auto app_statuses = Statuses(Field(status, "containerStatuses"));
  const auto init_statuses = Statuses(Field(status, "initContainerStatuses"));
  // resource.PodRequests: the app containers' sum; each restartable init container (a
  // sidecar) adds to it and to what every later init container runs beside; the pod needs
  // the larger of the sum and the largest init container (with the sidecars before it);
  // then the pod's overhead. Pod-level requests (PodLevelResources) replace the sum.
  uint64_t sum = 0;
  if (const Json& list = Field(spec, "containers"); list.is_array()) {
    for (const Json& c : list) {
      ContainerMemorySpec cs;
      if (Status s = Container(c, app_statuses, &cs); !s.ok()) return s;
      sum += cs.request;
      out.containers.push_back(std::move(cs));
    }
  }
  uint64_t sidecars = 0, init_max = 0;
  if (const Json& list = Field(spec, "initContainers"); list.is_array()) {
    for (const Json& c : list) {
      ContainerMemorySpec cs;
      if (Status s = Container(c, init_statuses, &cs); !s.ok()) return s;
      if (Text(Field(c, "restartPolicy")) == "Always") {
        sum += cs.request;
        sidecars += cs.request;
        init_max = std::max(init_max, sidecars);
        out.containers.push_back(std::move(cs));
      } else {
        init_max = std::max(init_max, cs.request + sidecars);
      }
    }
  }
  uint64_t request = std::max(sum, init_max);
  uint64_t pod_level = 0;
  if (Status s = Memory(Field(spec, "resources"), "requests", &pod_level); !s.ok()) return s;
  if (pod_level != 0) request = pod_level;
  uint64_t overhead = 0;
  if (const Json& o = Field(Field(spec, "overhead"), "memory"); !o.is_null()) {
    const std::optional<uint64_t> v = o.is_string() ? ParseQuantity(o.get<std::string>()) : std::nullopt;
    if (!v) return InvalidArgument("overhead.memory " + o.dump() + " is not a quantity");
    overhead = *v;
  }
  out.request = request + overhead;
  return out;
}

}  // namespace statlet::kube
