#include "pulls/progress_urls.h"

#include <utility>

namespace statlet::pulls {

ProgressUrls::ProgressUrls(ProgressTokensOptions tokens, ProgressStreams* streams)
    : tokens_(std::move(tokens)), streams_(streams) {}

void ProgressUrls::SetBase(std::string base) {
  std::lock_guard<std::mutex> lock(mu_);
  base_ = std::move(base);
}

StatusOr<std::string> ProgressUrls::Issue(ProgressTarget target) {
  std::string base;
  {
    std::lock_guard<std::mutex> lock(mu_);
    base = base_;
  }
  if (base.empty()) return Unavailable("ImagePullProgress: statlet's web listener is not serving yet");
  auto token = tokens_.Issue(std::move(target));
  if (!token.ok()) return token.status();
  return base + kProgressPathPrefix + *token;
}

ProgressUrls::Opened ProgressUrls::Open(const std::string& token) {
  Opened o;
  std::optional<ProgressTarget> target;
  if (token.size() == kProgressTokenHexDigits) target = tokens_.Redeem(token);
  if (!target) {
    o.status = 404;
    o.text =
        "no such image pull progress URL: it is unknown, was used already (a URL serves one stream), or "
        "expired unused; ask ImagePullProgress for a new one\n";
    return o;
  }
  o.stream = streams_->Open(*target);
  if (!o.stream) {
    o.status = 503;
    o.text = "too many image pull progress streams open; ask ImagePullProgress for a new URL later\n";
  }
  return o;
}

}  // namespace statlet::pulls
