// The whole snapshot as JSON (statlet stats -o json): every field, raw counters in base
// units (nanoseconds, bytes, counts); absent values are omitted, never zero.
#pragma once

#include <string>

#include "snapshot/snapshot.h"

namespace statlet {
std::string SnapshotToJson(const Snapshot& snap, int indent);
}  // namespace statlet
