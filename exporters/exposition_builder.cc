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
  if (!head.head || head.sequence != snap->sequence) {
    head.sequence = UINT64_MAX;
    // The plain head of this snapshot (a gzip head compresses it): encoded unless it is.
    Cached& plain = heads_[f][0];
    if (!plain.head || plain.sequence != snap->sequence) {
      plain.sequence = UINT64_MAX;
      encoder_.EncodeKept(*snap, format, &plain.head);
      plain.sequence = snap->sequence;
      plain.dropped_cgroups = encoder_.dropped_cgroups();
      plain.dropped_interfaces = encoder_.dropped_interfaces();
      ++encodes_;
    }
    if (gzip) {
      // Reuse the last gzip buffer unless a response still sends it.
      head.head.reset();
      if (!head.gzip || head.gzip.use_count() > 1) {
        const size_t hint = head.gzip ? head.gzip->capacity() : 0;
        head.gzip = std::make_shared<std::string>();
        head.gzip->reserve(hint);
      }
      if (Status s = gzip_[f].CompressHead(plain.head->pieces, head.gzip.get()); !s.ok()) return s;
      auto rope = std::make_shared<TextRope>();
      rope->Append(head.gzip->data(), head.gzip->size());
      rope->holds.push_back(head.gzip);
      head.head = std::move(rope);
      head.dropped_cgroups = plain.dropped_cgroups;
      head.dropped_interfaces = plain.dropped_interfaces;
    }
    head.sequence = snap->sequence;
  }
  if (self_) self_->Update(*snap, sampler, head.dropped_cgroups, head.dropped_interfaces);

  Body body;
  body.head = head.head;
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
