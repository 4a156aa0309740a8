// Built when tests/e2e (the containerd stage) is not: there is no peer.
#include "bench/cri/containerd_peer.h"

namespace statlet::bench {

StatusOr<std::unique_ptr<ContainerdPeer>> ContainerdPeer::Start() {
  return Unimplemented("tests/e2e's containerd stage is not built here (needs containerd, runc and the cri area)");
}

}  // namespace statlet::bench
