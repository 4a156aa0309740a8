#include "exporters/otlp/otlp_resources.h"

#include "exporters/otlp/otlp_fields.h"
#include "exporters/otlp/proto_wire.h"

namespace statlet::otlp {
namespace {

using namespace fields;  // NOLINT: the message tags of otlp_fields.h, by their names

// A KeyValue whose value is a string, as a Resource.attributes field.
void AppendAttribute(std::string* out, std::string_view key, std::string_view value) {
  AppendStringAttribute(out, kResourceAttributes, key, value);
}

// A KeyValue whose value is an array of one string.
void AppendArrayAttribute(std::string* out, std::string_view key, std::string_view value) {
  std::string any, array, outer, kv;
  wire::AppendStringField(&any, kStringValue, value);
  wire::AppendMessageField(&array, kArrayValues, any);
  wire::AppendMessageField(&outer, kArrayValue, array);
  wire::AppendStringField(&kv, kKey, key);
  wire::AppendMessageField(&kv, kValue, outer);
  wire::AppendMessageField(out, kResourceAttributes, kv);
}

// "registry/repo:tag" or "repo@sha256:…" -> name and tag (empty without one).
std::pair<std::string_view, std::string_view> SplitImage(std::string_view image) {
  if (size_t at = image.find('@'); at != std::string_view::npos) return {image.substr(0, at), {}};
  size_t slash = image.rfind('/');
  size_t colon = image.rfind(':');
  if (colon != std::string_view::npos && (slash == std::string_view::npos || colon > slash)) {
    return {image.substr(0, colon), image.substr(colon + 1)};
  }
  return {image, {}};
}

// Whether two metadata objects give the same resource attributes (the runtime republishes
// metadata when only stats in it changed).
bool SameAttributes(const ContainerMetadata* a, const ContainerMetadata* b) {
  if (a == b) return true;
  if (a == nullptr || b == nullptr) return false;
  return a->container_id == b->container_id && a->container_name == b->container_name && a->image == b->image &&
         a->image_ref == b->image_ref && a->pod_name == b->pod_name && a->pod_namespace == b->pod_namespace &&
         a->pod_uid == b->pod_uid;
}

bool StillValid(const ResourceCache::Entry& e, const CgroupStats& c) {
  return e.cgroup_id == c.id.cgroup_id && e.created_ns == c.id.created_ns.value_or(0) && e.kind == c.id.kind &&
         SameAttributes(e.meta.get(), c.id.meta.get());
}

}  // namespace

std::optional<ResourceKind> ResourceOf(const CgroupStats& c) {
  switch (c.id.kind) {
    case CgroupKind::kContainer:
      if (c.id.meta && c.id.meta->is_sandbox) return std::nullopt;
      return ResourceKind::kContainer;
    case CgroupKind::kOther: return ResourceKind::kContainer;
    case CgroupKind::kPod: return ResourceKind::kPod;
    default: return std::nullopt;
  }
}

ResourceCache::ResourceCache(NodeResource node, metrics::MetricSelection selection) : selection_(std::move(selection)) {
  for (const auto& [k, v] : node.attributes) {
    std::string field;
    AppendAttribute(&field, k, v);
    if (!field.empty()) node_.emplace_back(k, std::move(field));
  }
}

void ResourceCache::Encode(const CgroupStats& c, Entry* e) {
  e->cgroup_id = c.id.cgroup_id;
  e->created_ns = c.id.created_ns.value_or(0);
  e->kind = c.id.kind;
  e->meta = c.id.meta;
  // The cgroup's own attributes, then the node's whose key they did not take.
  std::string& r = content_;
  r.clear();
  std::vector<std::string_view> keys;
  auto add = [&](std::string_view key, std::string_view value) {
    if (key.empty() || value.empty()) return;
    AppendAttribute(&r, key, value);
    keys.push_back(key);
  };
  const ContainerMetadata* m = c.id.meta.get();
  if (c.id.kind != CgroupKind::kPod) {
    add("container.id", !c.id.container_id.empty() ? std::string_view(c.id.container_id)
                        : m                        ? std::string_view(m->container_id)
                                                   : std::string_view());
    if (m) {
      add("k8s.container.name", m->container_name);
      auto [name, tag] = SplitImage(!m->image.empty() ? m->image : m->image_ref);
      if (selection_.Drops(metrics::CgroupLabel::kImage)) name = tag = {};
      add("container.image.name", name);
      if (!tag.empty()) {
        AppendArrayAttribute(&r, "container.image.tags", tag);
        keys.push_back("container.image.tags");
      }
    }
    add("container.runtime.name", RuntimeKindName(c.id.runtime));
  }
  if (m) {
    add("k8s.pod.name", m->pod_name);
    add("k8s.namespace.name", m->pod_namespace);
  }
  add("k8s.pod.uid", !c.id.pod_uid.empty() ? std::string_view(c.id.pod_uid)
                     : m                   ? std::string_view(m->pod_uid)
                                           : std::string_view());
  if (!metrics::DropsIdOf(selection_, c.id)) add("statlet.cgroup.path", c.id.cgroup_path);
  for (const auto& [key, field] : node_) {
    bool taken = false;
    for (std::string_view k : keys) taken |= k == key;
    if (taken) continue;
    r.append(field);
    keys.push_back(key);
  }
  e->encoded.clear();
  wire::AppendMessageField(&e->encoded, kRmResource, r);
  ++encoded_;
}

void ResourceCache::Sync(const Snapshot& s, size_t count) {
  // Both sides are sorted by path: merge them, moving entries still valid (moves keep
  // their buffers) and encoding only new or changed cgroups.
  scratch_.swap(entries_);
  size_t old = 0, kept = 0;
  for (size_t i = 0; i < count; ++i) {
    const CgroupStats& c = s.cgroups[i];
    const std::optional<ResourceKind> kind = ResourceOf(c);
    if (!kind) continue;
    while (old < scratch_.size() && scratch_[old].path < c.id.cgroup_path) ++old;
    if (kept == entries_.size()) entries_.emplace_back();
    Entry& slot = entries_[kept++];
    const bool same_path = old < scratch_.size() && scratch_[old].path == c.id.cgroup_path;
    if (same_path) {
      std::swap(slot, scratch_[old++]);  // a cumulative stream starts when its path was first seen
      if (!StillValid(slot, c)) Encode(c, &slot);
      slot.meta = c.id.meta;
    } else {
      slot.path = c.id.cgroup_path;
      slot.first_seen_ns = s.timestamp_ns;
      Encode(c, &slot);
    }
    slot.cgroup = i;
    slot.resource = *kind;
  }
  entries_.resize(kept);
  // The dropped entries' buffers stay for later encodes; their metadata goes now.
  for (Entry& e : scratch_) e.meta.reset();
}

}  // namespace statlet::otlp
