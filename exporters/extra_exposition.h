// Extra families (metrics/extra_families.h) in the Prometheus text 0.0.4 and OpenMetrics
// 1.0 formats: each family's metadata, then its samples. The exposition builder appends
// them to every scrape after the snapshot's families and the self metrics, before
// OpenMetrics' "# EOF".
#pragma once

#include <span>
#include <string>

#include "exporters/exposition_text.h"
#include "metrics/extra_families.h"

namespace statlet {

// Appends whole families (metadata and samples) in `format`; never "# EOF".
void AppendExtraFamilies(std::span<const metrics::ExtraFamily> families, ExpositionFormat format, std::string* out);

}  // namespace statlet
