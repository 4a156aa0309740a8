// The digests the pull engine's and the observed pulls' unit tests script their blobs with:
// well-formed sha256 digests, one letter repeated, declared once for both.
#pragma once

#include <string>

namespace statlet::pulls::scripted {

inline const std::string kLayer = "sha256:" + std::string(64, 'a');
inline const std::string kManifest = "sha256:" + std::string(64, 'b');
inline const std::string kConfig = "sha256:" + std::string(64, 'c');
inline const std::string kOtherLayer = "sha256:" + std::string(64, 'd');

}  // namespace statlet::pulls::scripted
