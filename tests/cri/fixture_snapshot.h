// A deterministic snapshot for the CRI tests: two pods (one with runtime metadata and a
// pause container, one without), a bare runtime container outside Kubernetes and the
// root, with distinct values in every field the CRI carries. Plain C++ (no protobuf), so
// both the statlet-proto and the upstream-proto test binaries can build it.
#pragma once

#include <string>

#include "snapshot/snapshot.h"

namespace statlet::testing {

inline const std::string kPodAUid = "11111111-2222-3333-4444-555555555555";
inline const std::string kPodBUid = "99999999-8888-7777-6666-555555555555";
inline const std::string kSandboxA = std::string(64, 'a');        // pause container of pod A
inline const std::string kNginx = std::string(64, 'b');           // pod A, metadata
inline const std::string kSidecar = "bc" + std::string(62, '0');  // pod A, shares prefix "b"
inline const std::string kPlainC = std::string(64, 'd');          // pod B, no metadata
inline const std::string kBare = std::string(64, 'e');            // /docker/<id>, no pod
inline constexpr int64_t kTimestampNs = 1700000000123456789;
inline constexpr uint64_t kNetnsA = 4026532001;

Snapshot FixtureSnapshot();

}  // namespace statlet::testing
