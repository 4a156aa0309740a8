// ProgressStreams: the streams behind KEP-5334 progress URLs. Each stream follows the
// pulls of one target (pulls/progress_target.h): the pulls in flight when it opens, then
// every new one, until its reader leaves. It keeps the latest Progress object per layer,
// not a queue of changes: a slow reader gets the newest values when it next takes, and
// a stream costs at most max_entries objects however long it lives. A finished pull's
// last objects are sent once and then forgotten (a failed one adds an image object with
// its `error`).
//
// One thread looks at the pulls every `interval` while some stream is open and not at all
// otherwise; it asks only when the engine's generation moved.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "base/byte_stream.h"
#include "pulls/progress_target.h"
#include "pulls/pull_view.h"

namespace statlet::pulls {

struct ProgressStreamsOptions {
  size_t max_streams = 128;
  size_t max_entries = 1024;  // per stream: layers (and failed images) it keeps at once
  std::chrono::milliseconds interval{250};
};

// Where the pulls come from (PullEngine::Pulls and ::generation in the daemon).
struct ProgressFeed {
  std::function<std::vector<PullViewPtr>()> pulls;
  std::function<uint64_t()> generation;
};

class ProgressStreams {
 public:
  ProgressStreams(ProgressFeed feed, ProgressStreamsOptions options);
  ~ProgressStreams();
  // A stream of the target's pulls, or null when max_streams are open.
  std::shared_ptr<ByteStream> Open(const ProgressTarget& target);
  size_t open() const { return open_->load(std::memory_order_relaxed); }
  // Ends every stream (their readers get the end of the answer); idempotent.
  void Stop();

  class Stream;

 private:
  // `seen`: the generation the streams were last brought up to.
  void Loop(uint64_t seen);

  const ProgressFeed feed_;
  const ProgressStreamsOptions options_;
  std::shared_ptr<std::atomic<size_t>> open_;  // shared with the streams, which may outlive this
  std::mutex mu_;
  std::condition_variable cv_;
  bool stop_ = false;                           // guarded by mu_
  std::vector<std::weak_ptr<Stream>> streams_;  // guarded by mu_
  std::thread thread_;
};

}  // namespace statlet::pulls
