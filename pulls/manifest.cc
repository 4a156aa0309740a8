#include <nlohmann/json.hpp>

#include "pulls/content_source.h"

namespace statlet::pulls {
namespace {

bool IsDigest(const std::string& s) { return s.rfind("sha256:", 0) == 0 || s.rfind("sha512:", 0) == 0; }

}  // namespace

StatusOr<Manifest> ParseManifest(const std::string& digest, const std::string& json) {
  nlohmann::json doc = nlohmann::json::parse(json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) return InvalidArgument("manifest " + digest + ": not a JSON object");
  auto media = doc.find("mediaType");
  if (media != doc.end() && media->is_string()) {
    const std::string& m = media->get_ref<const std::string&>();
    if (m != "application/vnd.oci.image.manifest.v1+json" &&
        m != "application/vnd.docker.distribution.manifest.v2+json") {
      return InvalidArgument("manifest " + digest + ": media type " + m + " is not an image manifest");
    }
  }
  auto config = doc.find("config");
  auto layers = doc.find("layers");
  if (config == doc.end() || !config->is_object() || layers == doc.end() || !layers->is_array()) {
    return InvalidArgument("manifest " + digest + ": no config or layers");
  }
  Manifest out;
  out.digest = digest;
  auto cd = config->find("digest");
  if (cd == config->end() || !cd->is_string() || !IsDigest(cd->get_ref<const std::string&>())) {
    return InvalidArgument("manifest " + digest + ": config without a digest");
  }
  out.config_digest = cd->get<std::string>();
  for (const auto& l : *layers) {
    if (!l.is_object()) return InvalidArgument("manifest " + digest + ": a layer is not an object");
    auto d = l.find("digest");
    auto s = l.find("size");
    if (d == l.end() || !d->is_string() || !IsDigest(d->get_ref<const std::string&>()) || s == l.end() ||
        !s->is_number_unsigned()) {
      return InvalidArgument("manifest " + digest + ": a layer without digest or size");
    }
    out.layers.push_back({d->get<std::string>(), s->get<uint64_t>()});
  }
  return out;
}

}  // namespace statlet::pulls
