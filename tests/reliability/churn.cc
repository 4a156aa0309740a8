#include "tests/reliability/churn.h"

#include <gtest/gtest.h>

#include <cstdio>

#include "tests/support/http_client.h"
#include "tests/support/wait_for.h"

namespace statlet::testing {
namespace {

using Clock = std::chrono::steady_clock;

// Scrapes until every path in `present` is in the body and none of `absent` is (a removal
// is seen by the next collection, an addition too: a few scrapes at most).
bool ScrapeSees(int port, const std::vector<std::string>& present, const std::vector<std::string>& absent,
                std::string* why) {
  std::string body;
  bool ok = WaitFor(
      [&] {
        TimedResponse r = TimedGet(port, "/metrics", "", Millis(20000));
        if (!r.response || r.response->status != 200) {
          *why = "scrape failed";
          return false;
        }
        body = std::move(r.response->body);
        for (const auto& p : present) {
          if (body.find("id=\"" + p + "\"") == std::string::npos) {
            *why = p + " missing";
            return false;
          }
        }
        for (const auto& p : absent) {
          if (body.find("id=\"" + p + "\"") != std::string::npos) {
            *why = p + " still reported";
            return false;
          }
        }
        return true;
      },
      std::chrono::seconds(30));
  return ok;
}

}  // namespace

ChurnResult Churn(Daemon& d, ContainerTree& tree, int rounds, int per_round, int with_process_every) {
  ChurnResult r;
  const auto start = Clock::now();
  for (int round = 0; round < rounds; ++round) {
    std::vector<std::string> paths;
    if (!tree.Add(per_round, with_process_every, &paths)) {
      ADD_FAILURE() << tree.error();
      break;
    }
    std::string why;
    if (!ScrapeSees(d.port(), {paths.front(), paths.back()}, {}, &why)) {
      ADD_FAILURE() << "round " << round << ": new containers not reported: " << why;
      break;
    }
    tree.RemoveAll();
    if (!ScrapeSees(d.port(), {}, {paths.front(), paths.back()}, &why)) {
      ADD_FAILURE() << "round " << round << ": removed containers still reported: " << why;
      break;
    }
    r.churned += per_round;
    if (round == 0) r.warm = CostOf(d.pid());
  }
  r.end = CostOf(d.pid());
  r.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

void Report(const char* what, const ChurnResult& r) {
  std::printf(
      "figure: %s: %d containers churned in %.1f s; after the first round -> after the last: "
      "watches %d -> %d, fds %d -> %d, RSS %.1f -> %.1f MiB\n",
      what, r.churned, r.seconds, r.warm.inotify_watches, r.end.inotify_watches, r.warm.fds, r.end.fds,
      r.warm.rss_kib / 1024.0, r.end.rss_kib / 1024.0);
}

}  // namespace statlet::testing
