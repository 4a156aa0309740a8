// ExtraFamilies: metric families served on /metrics beside the snapshot's, from parts of
// statlet that are not collectors (image pulls). The exposition builder renders them for
// every scrape after the snapshot's families and the self metrics, before OpenMetrics'
// "# EOF", in the negotiated format.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "exporters/exposition_text.h"

namespace statlet {

class ExtraFamilies {
 public:
  virtual ~ExtraFamilies() = default;
  // Appends whole families (metadata and samples) in `format`; never "# EOF".
  virtual void Append(ExpositionFormat format, std::string* out) const = 0;
};

// The metadata lines of one family. `name` is the text-format name (a counter's ends in
// _total; OpenMetrics names the family without it); `type` is counter, gauge or histogram;
// `unit` (OpenMetrics only) is empty or the name's unit suffix ("bytes", "seconds").
void AppendFamilyHeader(std::string* out, ExpositionFormat format, std::string_view name, std::string_view type,
                        std::string_view help, std::string_view unit = {});

}  // namespace statlet
