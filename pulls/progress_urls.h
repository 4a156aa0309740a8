// ProgressUrls: the URLs KEP-5334's ImagePullProgress answers with, and what opening one
// does. A URL is <base>/imagepullprogress/<token>, <base> being statlet's web listener
// (its TLS and authorization apply, as a runtime's exec URLs are served by its streaming
// server); the token is single use and expires unused (pulls/progress_tokens.h).
#pragma once

#include <memory>
#include <mutex>
#include <string>

#include "base/byte_stream.h"
#include "base/status.h"
#include "pulls/progress_streams.h"
#include "pulls/progress_tokens.h"

namespace statlet::pulls {

inline constexpr char kProgressPathPrefix[] = "/imagepullprogress/";

class ProgressUrls {
 public:
  // `streams` must outlive this.
  ProgressUrls(ProgressTokensOptions tokens, ProgressStreams* streams);

  // Where the web listener answers ("https://127.0.0.1:10340"); URLs are refused
  // (UNAVAILABLE) until it is set.
  void SetBase(std::string base);
  // A URL for `target`.
  StatusOr<std::string> Issue(ProgressTarget target);

  // Opening <prefix><token>: the stream (status 200), or 404 for a token that is unknown,
  // used or expired, 503 when max_streams are open (the token is spent either way).
  struct Opened {
    int status = 200;
    std::string text;
    std::shared_ptr<ByteStream> stream;
  };
  Opened Open(const std::string& token);

 private:
  ProgressTokens tokens_;
  ProgressStreams* streams_;
  std::mutex mu_;
  std::string base_;  // guarded by mu_
};

}  // namespace statlet::pulls
