// Basic auth for the HTTP server: credentials that passed bcrypt once are remembered (a
// scraper sends the same header every time and should not pay bcrypt per scrape), and so
// are recently refused ones (repeating a wrong guess costs nothing). Both are kept as
// SHA-256 digests, compared in constant time; both are bounded. Anything else needs the
// bcrypt check (CheckBasicAuth), which BasicHttpAuthorizer runs on a thread of its own.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>

#include "exporters/http_authorizer.h"
#include "exporters/web_config.h"
#include "exporters/worker_pool.h"

namespace statlet {

class BasicAuthenticator {
 public:
  explicit BasicAuthenticator(WebConfig config);

  bool enabled() const { return !config_.basic_auth_users.empty(); }
  enum class Verdict { kAllowed, kDenied, kUnknown };
  // From the remembered verdicts only: cheap.
  Verdict Remembered(std::string_view authorization_header);
  // The bcrypt check (milliseconds); remembers its verdict.
  bool Verify(std::string_view authorization_header);

 private:
  using Digest = std::array<uint8_t, 32>;
  static Digest Hash(std::string_view header);
  static bool Contains(const std::deque<Digest>& set, const Digest& d);
  static void Remember(std::deque<Digest>* set, const Digest& d, size_t cap);

  WebConfig config_;
  std::mutex mu_;
  std::deque<Digest> allowed_;  // newest last
  std::deque<Digest> denied_;
};

// Basic auth for the HTTP server. The bcrypt check of unknown credentials runs on one
// thread of its own at nice 10, with a short queue (429 when it is full): a flood of wrong
// passwords costs at most a tenth of a busy core and never waits in front of a scraper
// whose credentials were verified before. (Nice 19 starved a new scraper's first check for
// seconds on a busy node; nice 0 let a flood slow verified scrapes.)
class BasicHttpAuthorizer : public HttpAuthorizer {
 public:
  explicit BasicHttpAuthorizer(WebConfig config);
  std::optional<AuthVerdict> Remembered(const Request& request) override;
  void Check(const Request& request, std::function<void(AuthVerdict)> done) override;
  void Stop() override { pool_.Stop(); }

 private:
  static AuthVerdict Unauthorized();
  BasicAuthenticator auth_;
  WorkerPool pool_;
};

}  // namespace statlet
