// Who may use the HTTP server's main address: basic auth (basic_auth.h) or the Kubernetes
// API server's token and access reviews (kubernetes_authorizer.h). The server asks for a
// remembered verdict on its event loop first (microseconds); only without one does it
// start a check, which runs off the loop and answers through a callback.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace statlet {

struct AuthVerdict {
  int status = 0;  // 0: allowed; else the status to answer with (401, 403, 429, 503)
  std::string text;
  std::vector<std::pair<std::string, std::string>> headers;

  bool allowed() const { return status == 0; }
  static AuthVerdict Allow() { return {}; }
};

class HttpAuthorizer {
 public:
  struct Request {
    std::string method;  // GET or HEAD
    std::string path;    // without the query
    std::string authorization;
  };
  virtual ~HttpAuthorizer() = default;

  // On the event loop, cheap: the verdict from what is remembered, or none when a check
  // must run.
  virtual std::optional<AuthVerdict> Remembered(const Request& request) = 0;
  // Starts the check; `done` is called exactly once, from any thread (at once when the
  // check cannot even be queued), unless Stop() ran first.
  virtual void Check(const Request& request, std::function<void(AuthVerdict)> done) = 0;
  // Ends the checks: running ones finish, queued ones are dropped with their callbacks.
  // Idempotent.
  virtual void Stop() {}
};

}  // namespace statlet
