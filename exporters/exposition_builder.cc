#include "exporters/exposition_builder.h"

#include "exporters/extra_exposition.h"

namespace statlet {

ExpositionBuilder::ExpositionBuilder(metrics::SampleRules rules, SelfMetrics* self, int gzip_level)
    : self_(self),
      selection_(rules.selection),
      encoder_(std::move(rules)),
      gzip_{GzipCompressor(gzip_level), GzipCompressor(gzip_level)} {}

uint64_t ExpositionBuilder::encodes() const {
  std::lock_guard<std::mutex> lock(const_cast<std::mutex&>(mu_));
  return encodes_;
}

StatusOr<ExpositionBuilder::Body> ExpositionBuilder::Build(const SnapshotPtr& snap, const SamplerStats& sampler,
                                                           ExpositionFormat format, bool gzip) {
  std::lock_guard<std::mutex> lock(mu_);
  const int f = static_cast<int>(format);
  Cached& head = heads_[f][gzip ? 1 : 0];
  if (!head.bytes || head.sequence != snap->sequence) {
    // A new head; reuse the previous buffer's capacity unless a response still streams it.
    if (!head.bytes || head.bytes.use_count() > 1) {
      const size_t hint = head.bytes ? head.bytes->capacity() : 0;
      head.bytes = std::make_shared<std::string>();
      head.bytes->reserve(hint);
    }
    head.sequence = UINT64_MAX;
    if (gzip) {
      encoder_.Encode(*snap, format, &plain_scratch_);
      if (Status s = gzip_[f].CompressHead(plain_scratch_, head.bytes.get()); !s.ok()) return s;
    } else {
      encoder_.Encode(*snap, format, head.bytes.get());
    }
    head.sequence = snap->sequence;
    head.dropped_cgroups = encoder_.dropped_cgroups();
    head.dropped_interfaces = encoder_.dropped_interfaces();
    ++encodes_;
  }
  if (self_) self_->Update(*snap, sampler, head.dropped_cgroups, head.dropped_interfaces);

  Body body;
  body.head = head.bytes;
  std::string& tail = gzip ? tail_scratch_ : body.tail;
  tail.clear();
  if (self_) self_->AppendExposition(format, &tail);
  if (!extras_.empty()) {
    std::vector<metrics::ExtraFamily> families;
    for (const metrics::ExtraSource* e : extras_) e->Collect(&families);
    std::erase_if(families, [&](const metrics::ExtraFamily& x) { return !selection_.ServesExtra(x.name); });
    AppendExtraFamilies(families, format, &tail);
  }
  if (format == ExpositionFormat::kOpenMetrics100) tail.append("# EOF\n");
  if (gzip) {
    if (Status s = gzip_[f].FinishTail(tail_scratch_, &body.tail); !s.ok()) return s;
  }
  return body;
}

}  // namespace statlet
