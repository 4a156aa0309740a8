#include "pulls/pull_view.h"

#include "base/human_bytes.h"

#include <cstdio>

namespace statlet::pulls {

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
  // The states of the per-node view (deploy/kubernetes/nodeimagepulls-crd.yaml): the 2019 Image Pull Progress KEP's
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
      out += "layer " + l.digest + " not started (" + HumanBytes(static_cast<double>(l.size), " ") + ")";
    } else {
      out += "layer " + l.digest + " at " + HumanBytes(static_cast<double>(l.offset), " ") + " of " +
             HumanBytes(static_cast<double>(l.size), " ");
    }
    ++named;
  }
  if (more > 0) out += "; and " + std::to_string(more) + " more";
  return out.empty() ? "every layer is received" : out;
}

}  // namespace statlet::pulls
