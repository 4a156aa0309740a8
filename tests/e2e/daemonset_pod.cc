#include "tests/e2e/daemonset_pod.h"

#include <exception>

#include <yaml-cpp/yaml.h>

namespace statlet::e2e {
namespace {

std::string Str(const YAML::Node& n, const std::string& fallback = "") {
  return n && n.IsScalar() ? n.as<std::string>() : fallback;
}

bool Bool(const YAML::Node& n) { return n && n.IsScalar() && n.as<bool>(); }

StatusOr<ManifestPod> Translate(const YAML::Node& ds, const ManifestHost& host, const std::string& wanted) {
  ManifestPod out;
  const YAML::Node spec = ds["spec"]["template"]["spec"];
  if (!spec) return InvalidArgument("DaemonSet without spec.template.spec");
  out.pod.name = Str(ds["metadata"]["name"]) + "-e2e";
  out.pod.namespace_ = Str(ds["metadata"]["namespace"], "default");
  if (const YAML::Node labels = ds["spec"]["template"]["metadata"]["labels"]; labels && labels.IsMap()) {
    for (const auto& kv : labels) out.pod.labels[kv.first.as<std::string>()] = kv.second.as<std::string>();
  }
  out.pod.host_network = Bool(spec["hostNetwork"]);
  out.pod.host_pid = Bool(spec["hostPID"]);
  if (Bool(spec["hostIPC"])) return InvalidArgument("hostIPC is not translated");

  const YAML::Node containers = spec["containers"];
  size_t index = 0;
  while (index < containers.size() && !wanted.empty() && Str(containers[index]["name"]) != wanted) ++index;
  if (index == containers.size()) return InvalidArgument("no container " + wanted);
  const YAML::Node c = containers[index];
  lifecycle::ContainerConfig& cfg = out.container;
  cfg.mutable_metadata()->set_name(Str(c["name"]));
  out.image = Str(c["image"]);
  cfg.mutable_image()->set_image(out.image);
  for (const auto& a : c["command"]) cfg.add_command(a.as<std::string>());
  for (const auto& a : c["args"]) cfg.add_args(a.as<std::string>());

  for (const auto& e : c["env"]) {
    lifecycle::KeyValue* kv = cfg.add_envs();
    kv->set_key(Str(e["name"]));
    if (e["value"]) {
      kv->set_value(Str(e["value"]));
    } else if (Str(e["valueFrom"]["fieldRef"]["fieldPath"]) == "spec.nodeName") {
      kv->set_value(host.node_name);
    } else {
      return InvalidArgument("env " + kv->key() + ": only values and fieldRef spec.nodeName are translated");
    }
  }
  for (const auto& [key, value] : host.service_env) {
    lifecycle::KeyValue* kv = cfg.add_envs();
    kv->set_key(key);
    kv->set_value(value);
  }

  std::map<std::string, std::string> volume_paths;  // volume name → hostPath
  for (const auto& v : spec["volumes"]) {
    if (!v["hostPath"]) return InvalidArgument("volume " + Str(v["name"]) + ": only hostPath volumes are translated");
    volume_paths[Str(v["name"])] = Str(v["hostPath"]["path"]);
  }
  for (const auto& m : c["volumeMounts"]) {
    auto it = volume_paths.find(Str(m["name"]));
    if (it == volume_paths.end()) return InvalidArgument("volumeMount of an unknown volume " + Str(m["name"]));
    auto sub = host.host_paths.find(it->second);
    lifecycle::Mount* mount = cfg.add_mounts();
    mount->set_container_path(Str(m["mountPath"]));
    mount->set_host_path(sub == host.host_paths.end() ? it->second : sub->second);
    mount->set_readonly(Bool(m["readOnly"]));
  }

  if (const YAML::Node limit = c["resources"]["limits"]["memory"]) {
    auto bytes = ParseMemoryQuantity(Str(limit));
    if (!bytes.ok()) return bytes.status();
    cfg.mutable_linux()->mutable_resources()->set_memory_limit_in_bytes(*bytes);
  }

  lifecycle::LinuxContainerSecurityContext* sc = cfg.mutable_linux()->mutable_security_context();
  auto* ns = sc->mutable_namespace_options();
  ns->set_network(out.pod.host_network ? lifecycle::NODE : lifecycle::POD);
  ns->set_pid(out.pod.host_pid ? lifecycle::NODE : lifecycle::CONTAINER);
  ns->set_ipc(lifecycle::POD);
  const YAML::Node sec = c["securityContext"];
  if (Bool(sec["privileged"])) {
    sc->set_privileged(true);
    out.pod.privileged = true;
  }
  if (sec["runAsUser"]) sc->mutable_run_as_user()->set_value(sec["runAsUser"].as<int64_t>());
  sc->set_readonly_rootfs(Bool(sec["readOnlyRootFilesystem"]));
  // allowPrivilegeEscalation: false sets no_new_privs; unset leaves it off, as the kubelet does.
  if (sec["allowPrivilegeEscalation"] && !sec["allowPrivilegeEscalation"].as<bool>()) sc->set_no_new_privs(true);
  for (const auto& cap : sec["capabilities"]["add"]) {
    out.added_capabilities.push_back(cap.as<std::string>());
    sc->mutable_capabilities()->add_add_capabilities(cap.as<std::string>());
  }
  for (const auto& cap : sec["capabilities"]["drop"])
    sc->mutable_capabilities()->add_drop_capabilities(cap.as<std::string>());
  return out;
}

}  // namespace

StatusOr<int64_t> ParseMemoryQuantity(const std::string& text) {
  static const std::pair<const char*, int64_t> kSuffixes[] = {{"Ki", 1LL << 10}, {"Mi", 1LL << 20}, {"Gi", 1LL << 30},
                                                              {"k", 1000},       {"M", 1000000},    {"G", 1000000000}};
  size_t digits = 0;
  while (digits < text.size() && text[digits] >= '0' && text[digits] <= '9') ++digits;
  if (digits == 0) return InvalidArgument("quantity " + text);
  const int64_t n = std::stoll(text.substr(0, digits));
  const std::string suffix = text.substr(digits);
  if (suffix.empty()) return n;
  for (const auto& [s, mul] : kSuffixes) {
    if (suffix == s) return n * mul;
  }
  return InvalidArgument("quantity " + text + ": unknown suffix");
}

StatusOr<ManifestPod> PodFromDaemonSet(const std::string& manifest_path, const ManifestHost& host,
                                       const std::string& container) {
  try {
    for (const YAML::Node& doc : YAML::LoadAllFromFile(manifest_path)) {
      if (doc && Str(doc["kind"]) == "DaemonSet") return Translate(doc, host, container);
    }
  } catch (const std::exception& e) {
    return InvalidArgument(manifest_path + ": " + e.what());
  }
  return NotFound(manifest_path + ": no DaemonSet");
}

}  // namespace statlet::e2e
