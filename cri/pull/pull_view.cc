#include "cri/pull/pull_view.h"

#include <cstdio>

namespace statlet::cri::pull {

const char* LayerStageName(LayerStage s) {
  switch (s) {
    case LayerStage::kWaiting: return "waiting";
    case LayerStage::kDownloading: return "downloading";
    case LayerStage::kDownloaded: return "done";
    case LayerStage::kPresent: return "exists";
  }
  return "waiting";
}

const char* PullPhaseName(PullPhase p) {
  // The states of the per-node view (deploy/kubernetes/nodeimagepulls-crd.yaml): seed 000's
  // STARTED, PULLING, FAILED and DONE, with the unpacking, stalled and cancelled cases
  // told apart.
  switch (p) {
    case PullPhase::kResolving: return "Started";
    case PullPhase::kDownloading: return "Pulling";
    case PullPhase::kUnpacking: return "Unpacking";
    case PullPhase::kSucceeded: return "Done";
    case PullPhase::kFailed: return "Failed";
    case PullPhase::kStalled: return "Stalled";
    case PullPhase::kCancelled: return "Cancelled";
  }
  return "Started";
}

std::string HumanBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double v = static_cast<double>(bytes);
  int u = 0;
  while (v >= 1024 && u < 5) {
    v /= 1024;
    ++u;
  }
  char buf[32];
  std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.1f %s", v, kUnits[u]);
  return buf;
}

std::string DescribeUnfinishedLayers(const PullView& view) {
  if (!view.total) return "the image's manifest has not arrived";
  constexpr size_t kMaxNamed = 8;
  std::string out;
  size_t named = 0, more = 0;
  for (const auto& l : view.layers) {
    if (LayerDone(l.stage)) continue;
    if (named == kMaxNamed) {
      ++more;
      continue;
    }
    if (!out.empty()) out += "; ";
    if (l.stage == LayerStage::kWaiting) {
      out += "layer " + l.digest + " not started (" + HumanBytes(l.size) + ")";
    } else {
      out += "layer " + l.digest + " at " + HumanBytes(l.offset) + " of " + HumanBytes(l.size);
    }
    ++named;
  }
  if (more > 0) out += "; and " + std::to_string(more) + " more";
  return out.empty() ? "every layer is received" : out;
}

}  // namespace statlet::cri::pull
