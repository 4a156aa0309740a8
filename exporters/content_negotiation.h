// HTTP content negotiation for /metrics: which exposition format the Accept header asks for
// and whether Accept-Encoding allows gzip.
#pragma once

#include <string_view>

#include "exporters/exposition_text.h"

namespace statlet {

// OpenMetrics 1.0 when Accept lists application/openmetrics-text (version 1.0.0, or no
// version) with a q-value at least as high as any text/plain or */* entry; else text 0.0.4.
ExpositionFormat NegotiateFormat(std::string_view accept);
// True when Accept-Encoding lists gzip (or *) with a non-zero q-value.
bool AcceptsGzip(std::string_view accept_encoding);

std::string_view ContentType(ExpositionFormat format);

}  // namespace statlet
