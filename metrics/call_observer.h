// What an edge reports about the calls it answers, for statlet's own instrumentation: the
// CRI server tells every call (method, gRPC status, duration) to a CallObserver; the
// self metrics (exporters/self_metrics.h) implement it. Edges depend on this interface,
// never on the exporter that records it.
//
// Implementations are called from the edge's threads, concurrently.
#pragma once

#include <string_view>

namespace statlet::metrics {

class CallObserver {
 public:
  virtual ~CallObserver() = default;
  // A call of `method` ("RuntimeService/ListContainerStats") ended with the gRPC status
  // `code` (its canonical name: "OK", "NOT_FOUND"...) after `seconds`.
  virtual void ObserveCall(std::string_view method, std::string_view code, double seconds) = 0;
};

}  // namespace statlet::metrics
