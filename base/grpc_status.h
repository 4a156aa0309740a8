// ToGrpc: a statlet Status as the gRPC status an edge answers with, one mapping for every
// gRPC edge (the CRI stats server, the image pull services). A library of its own
// (statlet_grpc_status) so that base/ itself needs no gRPC.
#pragma once

#include <grpcpp/support/status.h>

#include "base/status.h"

namespace statlet {

// The gRPC code of the same meaning (status codes as in grpc's doc/statuscodes.md);
// kGone is NOT_FOUND (the object is not there any more), the message is kept as it is.
grpc::Status ToGrpc(const Status& s);

}  // namespace statlet
