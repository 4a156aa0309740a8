#include "pulls/observed_pulls.h"

#include <algorithm>
#include <unordered_set>

#include "base/log.h"

namespace statlet::pulls {
namespace {

constexpr char kIngestsResource[] = "ingests";
constexpr char kContentResource[] = "content";
// The children labels an index carries (images.ChildGCLabels of containerd 1.6).
constexpr char kManifestChildLabelPrefix[] = "containerd.io/gc.ref.content.m.";

bool StartsWith(const std::string& s, const char* prefix) { return s.rfind(prefix, 0) == 0; }

// "<host>/<first repository>" from a blob's distribution-source label, or "".
std::string SourceOf(const BlobInfo& b) {
  const std::string prefix = kSourceLabelPrefix;
  for (const auto& [key, value] : b.labels) {
    if (!StartsWith(key, kSourceLabelPrefix) || value.empty()) continue;
    return key.substr(prefix.size()) + "/" + value.substr(0, value.find(','));
  }
  return "";
}

// The image record's name to show: a tagged name before a digest-pinned one before the
// CRI plugin's "sha256:<config>" id.
std::string PreferredName(const std::vector<ImageRecord>& images) {
  std::string best;
  int best_rank = 4;
  for (const auto& i : images) {
    int rank = StartsWith(i.name, "sha256:") ? 3 : i.name.find('@') != std::string::npos ? 2 : 1;
    if (rank < best_rank || (rank == best_rank && i.name < best)) {
      best = i.name;
      best_rank = rank;
    }
  }
  return best;
}

}  // namespace

struct ObservedPulls::Followed {
  Followed(std::string lease_, Clock::time_point now, int64_t created)
      : lease(std::move(lease_)), tracker(now, created), first_seen(now), started_unix_ns(created) {}
  std::string lease;
  LayerTracker tracker;
  Clock::time_point first_seen;
  int64_t started_unix_ns;
  std::set<std::string> ingest_refs;  // the lease's, at its last scan
  std::vector<std::string> contents;  // committed digests the lease holds
  std::vector<std::string> indexes;   // index digests among them
  std::string repository;             // from the manifest's (or index's) source label
  bool stalled = false;
  bool carried = false;  // one statlet carries: never shown
  bool shown = false;
  bool ended = false;  // the lease is gone; the result is being read
  uint64_t version = 0;
  PullViewPtr view;
};

struct ObservedPulls::Space {
  std::unique_ptr<ObservedSource> source;
  std::map<std::string, std::unique_ptr<Followed>> pulls;  // by lease
  std::set<std::string> scanned;                           // leases scanned that held no ingest then
  std::set<std::string> seen_refs;                         // ingests of the previous poll
  bool down = false;
};

ObservedPulls::ObservedPulls(ObservedPullsOptions options, std::vector<std::unique_ptr<ObservedSource>> sources)
    : options_(std::move(options)) {
  for (auto& src : sources) {
    auto s = std::make_unique<Space>();
    s->source = std::move(src);
    spaces_.push_back(std::move(s));
  }
}

ObservedPulls::~ObservedPulls() = default;

int64_t ObservedPulls::UnixNow() const {
  if (options_.unix_now) return options_.unix_now();
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

ObservedPoll ObservedPulls::Poll(const std::vector<CarriedPull>& carried) {
  ObservedPoll out;
  for (auto& s : spaces_) {
    if (PollSpace(s.get(), carried, &out.changed)) out.busy = true;
  }
  std::vector<PullViewPtr> current;
  for (auto& s : spaces_) {
    for (auto& [lease, f] : s->pulls) {
      if (f->shown && f->view) current.push_back(f->view);
    }
  }
  std::lock_guard<std::mutex> lock(mu_);
  current_ = std::move(current);
  const int64_t cutoff = UnixNow() - std::chrono::duration_cast<std::chrono::nanoseconds>(options_.history_ttl).count();
  while (!history_.empty() && history_.front()->finished_unix_ns < cutoff) {
    history_.pop_front();
    out.changed = true;
  }
  return out;
}

bool ObservedPulls::PollSpace(Space* s, const std::vector<CarriedPull>& carried, bool* changed) {
  ObservedSource& src = *s->source;
  auto fail = [&](const Status& error) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.errors;
    }
    if (!s->down) {
      log::Warn("pulls in containerd namespace " + src.namespace_name() + " cannot be followed: " + error.message() +
                "; trying again at every poll");
    }
    s->down = true;
    return !s->pulls.empty();
  };
  auto ingests = src.Ingests();
  if (!ingests.ok()) return fail(ingests.status());
  if (ingests->empty() && s->pulls.empty()) {
    // The idle case: one call.
    s->seen_refs.clear();
    s->scanned.clear();
    if (s->down) log::Info("pulls in containerd namespace " + src.namespace_name() + " are followed again");
    s->down = false;
    return false;
  }
  auto leases = src.Leases();
  if (!leases.ok()) return fail(leases.status());
  if (s->down) log::Info("pulls in containerd namespace " + src.namespace_name() + " are followed again");
  s->down = false;

  std::set<std::string> refs;
  bool new_refs = false;
  for (const auto& in : *ingests) {
    refs.insert(in.ref);
    if (!s->seen_refs.count(in.ref)) new_refs = true;
  }
  s->seen_refs = refs;
  std::set<std::string> live;
  for (const auto& l : *leases) live.insert(l.id);
  std::erase_if(s->scanned, [&](const std::string& id) { return !live.count(id); });

  // Leases to scan: every followed one (its new ingests and blobs), and, when an ingest
  // not seen before appeared, the others (the new ingest's pull may be new).
  size_t scans = 0;
  const auto now = options_.now();
  for (const auto& l : *leases) {
    auto it = s->pulls.find(l.id);
    const bool followed = it != s->pulls.end();
    if (!followed && !(new_refs || !s->scanned.count(l.id))) continue;
    if (!followed && s->pulls.size() >= options_.max_pulls) continue;
    if (scans == options_.max_lease_scans) break;
    ++scans;
    auto res = src.LeaseResources(l.id);
    if (!res.ok()) {
      if (res.status().code() == StatusCode::kNotFound) continue;  // deleted meanwhile
      return fail(res.status());
    }
    std::set<std::string> lease_refs;
    std::vector<std::string> contents;
    for (const auto& r : *res) {
      if (r.type == kIngestsResource) lease_refs.insert(r.id);
      if (r.type == kContentResource) contents.push_back(r.id);
    }
    bool holds_ingest = false;
    for (const auto& r : lease_refs) holds_ingest = holds_ingest || refs.count(r);
    if (!followed) {
      if (!holds_ingest) {
        s->scanned.insert(l.id);
        continue;
      }
      s->scanned.erase(l.id);
      it = s->pulls.emplace(l.id, std::make_unique<Followed>(l.id, now, l.created_unix_ns)).first;
    }
    it->second->ingest_refs = std::move(lease_refs);
    it->second->contents = std::move(contents);
  }

  for (auto it = s->pulls.begin(); it != s->pulls.end();) {
    Followed* f = it->second.get();
    if (!live.count(f->lease)) f->ended = true;
    if (f->ended) {
      if (!Finish(s, f)) {
        ++it;
        continue;
      }
      *changed = true;
      it = s->pulls.erase(it);
      continue;
    }
    Refresh(s, f, *ingests);
    const Match match = IsCarried(*s, *f, carried);
    f->carried = f->carried || match == Match::kYes;
    const bool shown = !f->carried && match == Match::kNo &&
                       (f->tracker.has_manifest() || now - f->first_seen >= options_.show_unnamed_after);
    if (shown && !f->shown) {
      std::lock_guard<std::mutex> lock(mu_);
      ++counters_.seen;
    }
    f->shown = shown;
    Publish(*s, f);
    *changed = true;
    ++it;
  }
  return !s->pulls.empty() || !ingests->empty();
}

void ObservedPulls::Refresh(Space* s, Followed* f, const std::vector<IngestStatus>& ingests) {
  ObservedSource& src = *s->source;
  const auto now = options_.now();
  if (!f->tracker.has_manifest() && !f->contents.empty()) {
    // The manifest is the committed blob naming a config; an index names manifests.
    auto blobs = src.Committed(f->contents);
    if (blobs.ok()) {
      const BlobInfo* manifest = nullptr;
      f->indexes.clear();
      for (const auto& b : *blobs) {
        if (b.labels.count(kConfigLabel)) manifest = &b;
        for (const auto& [key, value] : b.labels) {
          if (StartsWith(key, kManifestChildLabelPrefix)) {
            f->indexes.push_back(b.digest);
            if (f->repository.empty()) f->repository = SourceOf(b);
            break;
          }
        }
      }
      if (manifest != nullptr) {
        if (std::string r = SourceOf(*manifest); !r.empty()) f->repository = r;
        auto m = src.ReadManifest(manifest->digest);
        if (m.ok()) {
          f->tracker.SetManifest(*m);
        } else {
          log::Debug("manifest " + manifest->digest + " of lease " + f->lease + ": " + m.status().message());
        }
      }
    }
  }
  std::vector<Ingest> layer_ingests;
  for (const auto& in : ingests) {
    RefParts p = ParseIngestRef(in.ref);
    if (p.kind == "layer") layer_ingests.push_back({p.digest, in.offset, in.total});
  }
  std::vector<BlobInfo> committed;
  if (f->tracker.has_manifest()) {
    auto c = src.Committed(f->tracker.Unfinished());
    if (!c.ok()) return;  // nothing said about bytes: no progress, no stall either
    committed = std::move(*c);
  }
  f->tracker.Observe(now, layer_ingests, committed);
  const bool expecting = !f->tracker.all_done();
  const bool stalled = expecting && options_.no_progress_timeout.count() > 0 &&
                       now - f->tracker.last_progress() >= options_.no_progress_timeout;
  if (stalled && !f->stalled) {
    std::lock_guard<std::mutex> lock(mu_);
    ++counters_.stalls;
    log::Info("image pull in containerd namespace " + src.namespace_name() + " (lease " + f->lease +
              ") has made no progress for " + std::to_string(options_.no_progress_timeout.count()) +
              "s; statlet does not carry it and cannot cancel it");
  }
  f->stalled = stalled;
}

ObservedPulls::Match ObservedPulls::IsCarried(const Space& s, const Followed& f,
                                              const std::vector<CarriedPull>& carried) const {
  Match m = Match::kNo;
  for (const auto& c : carried) {
    if (c.namespace_ != s.source->namespace_name()) continue;
    if (!c.manifest_digest.empty()) {
      if (c.manifest_digest == f.tracker.manifest_digest()) return Match::kYes;
      continue;
    }
    // The engine does not know its pull's manifest yet: one of the same repository (or one
    // whose repository is not known yet) may be it, until either manifest tells.
    if (f.repository.empty() || f.repository == c.repository) m = Match::kMaybe;
  }
  return m;
}

void ObservedPulls::Publish(const Space& s, Followed* f) {
  auto v = std::make_shared<PullView>();
  if (!f->repository.empty() && f->tracker.has_manifest()) {
    v->image = f->repository + "@" + f->tracker.manifest_digest();
  } else if (!f->repository.empty()) {
    v->image = f->repository;
  } else {
    v->image = "(not known yet: containerd lease " + f->lease + ")";
  }
  f->tracker.Fill(v.get());
  if (!f->tracker.has_manifest()) {
    v->phase = f->stalled ? PullPhase::kStalled : PullPhase::kResolving;
  } else if (f->tracker.all_done()) {
    v->phase = PullPhase::kUnpacking;
  } else {
    v->phase = f->stalled ? PullPhase::kStalled : PullPhase::kDownloading;
  }
  if (f->stalled) {
    v->reason = "no progress for " + std::to_string(options_.no_progress_timeout.count()) +
                "s; statlet does not carry this pull and cannot cancel it";
  }
  v->started = f->first_seen;
  v->started_unix_ns = f->started_unix_ns;
  v->observed = true;
  v->containerd_namespace = s.source->namespace_name();
  v->version = ++f->version;
  f->view = std::move(v);
}

bool ObservedPulls::Finish(Space* s, Followed* f) {
  if (f->carried || !f->shown) return true;  // never shown: nothing to keep
  std::vector<std::string> targets = f->indexes;
  if (f->tracker.has_manifest()) targets.push_back(f->tracker.manifest_digest());
  std::vector<ImageRecord> images;
  if (!targets.empty()) {
    auto r = s->source->ImagesWithTarget(targets);
    if (!r.ok()) return false;  // asked again at the next poll
    images = std::move(*r);
  }
  auto v = std::make_shared<PullView>(*f->view);
  v->finished_unix_ns = UnixNow();
  v->eta_seconds.reset();
  const double secs = static_cast<double>(v->finished_unix_ns - f->started_unix_ns) / 1e9;
  if (!images.empty()) {
    f->tracker.Complete(options_.now());
    f->tracker.Fill(v.get());
    v->eta_seconds.reset();
    v->phase = PullPhase::kSucceeded;
    v->image = PreferredName(images);
    v->image_ref = f->tracker.config_digest();
    v->reason.clear();
  } else {
    v->phase = f->stalled ? PullPhase::kStalled : PullPhase::kFailed;
    v->reason = std::string(f->stalled ? "stalled, then " : "") +
                "ended without an image in containerd's image store (containerd keeps no error: its client has it)";
  }
  v->bytes_per_second = secs > 0 ? static_cast<double>(v->offset) / secs : 0;
  v->version = ++f->version;
  std::lock_guard<std::mutex> lock(mu_);
  if (v->phase == PullPhase::kSucceeded) {
    ++counters_.succeeded;
  } else {
    ++counters_.failed;
  }
  history_.push_back(std::move(v));
  while (history_.size() > options_.history) history_.pop_front();
  return true;
}

std::vector<PullViewPtr> ObservedPulls::Pulls() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<PullViewPtr> out(history_.begin(), history_.end());
  out.insert(out.end(), current_.begin(), current_.end());
  return out;
}

ObservedCounters ObservedPulls::counters() const {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

}  // namespace statlet::pulls
