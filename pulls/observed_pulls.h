// ObservedPulls: the image pulls statlet does not carry (the kubelet's straight on
// containerd, `ctr`, `crictl`), followed from what containerd keeps about them in each
// watched namespace, and shown in the same per-node view as the pulls statlet carries.
//
// What containerd allows (containerd 1.6; see docs/image-pulls.md):
//   * a pull made through containerd's client library holds one lease for its whole
//     length; the lease lists the pull's ingests in flight and its committed blobs, but
//     names no image. One lease that holds an ingest is one followed pull; it ends when
//     the lease is deleted (the client's Pull returned, success or not).
//   * ingests carry bytes written, expected size and times, per blob (ListStatuses).
//   * the manifest, committed first, carries the distribution-source label (registry host
//     without port, repository) and its config's and layers' digests; its body gives the
//     layer sizes. Until it is committed the pull is "Started" with no name.
//   * the image record appears only at the end; its name is the pull's result. A pull
//     whose lease went away without an image record failed: containerd keeps no error, the
//     client has it.
//   * nothing here can stop the pull: a pull without progress for the no-progress timeout
//     is shown "Stalled" while it goes on, and goes back to "Pulling" if bytes move again.
//
// A pull statlet carries itself also holds a lease in the CRI plugin's namespace; it is
// recognised by its manifest (or, before the engine knows its manifest, by repository) and
// left out, so it shows once.
//
// Cost of one Poll per namespace: one ListStatuses when nothing is in flight; otherwise
// also one Leases/List, one ListResources per followed pull (and per other lease when an
// ingest not seen before appeared), one content List per followed pull, and one manifest
// read per pull. Not thread-safe: one thread polls; Pulls() may be called from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "pulls/layer_tracker.h"
#include "pulls/observed_source.h"
#include "pulls/pull_view.h"

namespace statlet::pulls {

struct ObservedPullsOptions {
  std::chrono::seconds no_progress_timeout{0};  // 0: never "Stalled"
  // A pull whose manifest has not arrived is shown after this long (nameless): before, it
  // may still turn out to be one statlet carries.
  std::chrono::seconds show_unnamed_after{2};
  size_t max_pulls = 64;        // followed per namespace; more leases are not scanned
  size_t max_lease_scans = 64;  // ListResources calls per namespace per poll
  size_t history = 64;
  std::chrono::seconds history_ttl{600};
  std::function<Clock::time_point()> now = Clock::now;
  std::function<int64_t()> unix_now;  // empty: the system clock
};

// A pull statlet carries (in flight or just finished), to be left out.
struct CarriedPull {
  std::string namespace_;
  std::string manifest_digest;  // empty until the engine knows it
  std::string repository;       // "<registry host without port>/<path>"
};

struct ObservedCounters {
  uint64_t seen = 0;  // followed pulls that were shown
  uint64_t succeeded = 0, failed = 0;
  uint64_t stalls = 0;  // times a followed pull became Stalled
  uint64_t errors = 0;  // polls a namespace did not answer
};

struct ObservedPoll {
  bool busy = false;     // something is in flight: poll again at the fast pace
  bool changed = false;  // a view changed
};

class ObservedPulls {
 public:
  ObservedPulls(ObservedPullsOptions options, std::vector<std::unique_ptr<ObservedSource>> sources);
  ~ObservedPulls();

  ObservedPoll Poll(const std::vector<CarriedPull>& carried);
  // Shown pulls: in flight and recently finished.
  std::vector<PullViewPtr> Pulls() const;
  ObservedCounters counters() const;

 private:
  struct Followed;
  struct Space;
  bool PollSpace(Space* s, const std::vector<CarriedPull>& carried, bool* changed);
  void Refresh(Space* s, Followed* f, const std::vector<IngestStatus>& ingests);
  // The lease went away: the result from the image store; false to try again next poll.
  bool Finish(Space* s, Followed* f);
  // kYes: the same manifest as a pull statlet carries (for good); kMaybe: it may be one (a
  // carried pull whose manifest is not known yet): hidden for now.
  enum class Match { kNo, kMaybe, kYes };
  Match IsCarried(const Space& s, const Followed& f, const std::vector<CarriedPull>& carried) const;
  void Publish(const Space& s, Followed* f);
  int64_t UnixNow() const;

  ObservedPullsOptions options_;
  std::vector<std::unique_ptr<Space>> spaces_;
  mutable std::mutex mu_;  // guards what Pulls() and counters() read
  std::vector<PullViewPtr> current_;
  std::deque<PullViewPtr> history_;
  ObservedCounters counters_;
};

}  // namespace statlet::pulls
