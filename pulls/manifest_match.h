// Which committed manifest a running pull is fetching. containerd 1.6 does not say: the
// CRI plugin resolves the tag itself and records the image only at the end. Every manifest
// it fetches is labelled with the repositories it came from and with its config and layer
// digests, so the candidates are the manifests of the image's repository and the choice is:
//   1. the manifest named by the reference's digest, if it is one of them;
//   2. else those committed since the pull started (this pull fetched them), preferring one
//      whose layers are being downloaded, then the newest;
//   3. else the one with the most of its layers being downloaded now.
// An image already on the node downloads nothing and matches nothing: the runtime's answer
// (the config digest) settles it when the pull ends.
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "pulls/content_source.h"
#include "pulls/image_name.h"

namespace statlet::pulls {

// Layer digests of a manifest, from its garbage-collection labels, in layer order.
std::vector<std::string> LabelledLayers(const BlobInfo& manifest);

// Index into `candidates`, or empty while none can be told to be this pull's.
std::optional<size_t> PickManifest(const std::vector<BlobInfo>& candidates, const ImageName& image,
                                   int64_t pull_started_unix_ns, const std::set<std::string>& downloading);

// Among manifests with the image's config (the runtime's answer), the one from the image's
// repository if several are.
std::optional<size_t> PickByConfig(const std::vector<BlobInfo>& candidates, const ImageName& image);

}  // namespace statlet::pulls
