// ImageName: an image reference as CRI clients send it ("busybox", "registry:5000/a/b:1",
// "repo@sha256:…"), normalized the way the runtime does it (docker.io and library/ added,
// :latest when neither tag nor digest is given), so that two spellings of one image share
// one pull.
#pragma once

#include <string>
#include <string_view>

#include "base/status.h"

namespace statlet::pulls {

struct ImageName {
  std::string domain;  // "docker.io", "127.0.0.1:5000"
  std::string path;    // "library/busybox"
  std::string tag;     // empty when pinned by digest
  std::string digest;  // "sha256:<hex>" or empty

  // "docker.io/library/busybox:latest", "127.0.0.1:5000/a/b@sha256:…".
  std::string Normalized() const;
  // The domain without its port: what containerd names its distribution-source label after.
  std::string Hostname() const;
};

// Rejects what the runtime would reject (upper case in the path, bad tags or digests,
// empty components, more than 255 characters in the name).
StatusOr<ImageName> ParseImageName(std::string_view reference);

}  // namespace statlet::pulls
