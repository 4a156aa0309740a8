// The exit records' node-level families (collector/exit_records.h): exits by reason, the
// lifetime histogram, and the records' own bounds, as extra families every edge renders.
#pragma once

#include <vector>

#include "collector/exit_records.h"
#include "metrics/extra_families.h"

namespace statlet::metrics {

class ExitFamilies final : public ExtraSource {
 public:
  explicit ExitFamilies(const ExitRecords* records) : records_(records) {}
  void Collect(std::vector<ExtraFamily>* out) const override;

 private:
  const ExitRecords* records_;
};

// The families of `totals` (what Collect appends), for tests.
void AppendExitFamilies(const ExitTotals& totals, std::vector<ExtraFamily>* out);

}  // namespace statlet::metrics
