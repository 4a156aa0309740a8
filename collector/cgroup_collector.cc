// The Collector over cgroupfs: discovery keeps the set of cgroups, every cgroup keeps its
// files open, and one collection is two passes: process lists first (they decide which
// cgroups are reported and find each pod's network namespace), then every other file of
// the reported cgroups. Both passes read on the reading threads (CollectorOptions::
// read_threads), each taking a few cgroups at a time; what needs the collector's shared
// readers (network namespaces, the fd scan) follows on the collecting thread.
#include <fcntl.h>
#include <sched.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_map>

#include "base/log.h"
#include "base/parallel_for.h"
#include "collector/cgroup_discovery.h"
#include "collector/cgroup_file_source.h"
#include "collector/cgroup_files.h"
#include "collector/cgroup_path_classifier.h"
#include "collector/collector.h"
#include "collector/kept_file.h"
#include "collector/limit_watch.h"
#include "collector/netns_reader.h"
#include "collector/parse/cgroup_parsers.h"
#include "collector/process_fd_scanner.h"

namespace statlet {
namespace {

int64_t NowNs(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return int64_t{ts.tv_sec} * 1000000000 + ts.tv_nsec;
}

// The reading threads a collector may use: at most the CPUs this process may run on.
size_t ReadThreads(size_t wanted) {
  cpu_set_t set;
  const size_t cpus = sched_getaffinity(0, sizeof set, &set) == 0 ? static_cast<size_t>(CPU_COUNT(&set)) : 1;
  return std::max<size_t>(1, std::min(wanted, cpus));
}

// Cgroups a reading thread takes at a time: small enough that the threads end together
// (a cgroup's files take ~25-60 µs), large enough that taking them costs nothing.
constexpr size_t kCgroupsPerTake = 4;

// A reading thread's own state in a collection.
struct ReadWorker {
  ReadBuffer buf;
  uint64_t files_read = 0;    // cgroup files read (or rendered by the source)
  uint64_t files_cached = 0;  // limits served from memory
};

// A limit file's content as last read, served while its inotify watch reports no write.
struct CachedLimit {
  int wd = -1;               // its watch; -1: none yet
  bool valid = false;        // data holds the file's current content
  bool unwatchable = false;  // the watch was refused (e.g. no watches left): read every time
  uint8_t len = 0;
  char data[23];  // "18446744073709551615\n" and every shorter limit fit
};

// Per-cgroup state kept across collections.
struct Node {
  Node() { dir_fds.fill(-1); }
  ~Node() {
    for (int fd : dir_fds) {
      if (fd >= 0) ::close(fd);
    }
  }
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  std::string path;
  size_t parent_len = 0;  // the parent's path is path's first parent_len bytes; 0: the root
  const char* rel() const { return CgroupDiscovery::RelPath(path); }  // for openat on a root fd
  std::string_view parent_path() const { return std::string_view(path).substr(0, parent_len); }
  CgroupDiscovery::HierarchyMask mask = 0;
  PathClass cls;
  // The directory's inode number in each hierarchy the file source renders files of (its
  // cgroup id there; 0: not known), the unified one always (the snapshot's cgroup id).
  std::array<uint64_t, kNumHierarchies> ids{};
  Opt<int64_t> created_ns;
  // The directory in each hierarchy, opened O_PATH when a file there is first opened:
  // a file beyond the kept budget is then opened by its name alone, not by a path walk
  // from the hierarchy root (-1: none, the root and `rel` are used).
  std::array<int, kNumHierarchies> dir_fds;
  std::vector<KeptFile> files;      // parallel to the read plan
  std::vector<CachedLimit> limits;  // one per written_only plan entry (limit_slot_)
  KeptFile procs, threads;
  // The CPU counter as the last collection that read it saw it, for usage_nano_cores: a
  // collection that skips this cgroup (containers only) leaves it for the next that reads.
  Opt<uint64_t> mark_usage_ns;
  int64_t mark_at_ns = 0;  // that collection's CLOCK_MONOTONIC start
  uint32_t net_pid = 0;    // a process whose netns stands for this cgroup's
  uint64_t netns = 0;      // its namespace inode (0 = unknown)
  // Per-collection scratch.
  uint64_t own_procs = 0, own_threads = 0;
  uint64_t tree_procs = 0, tree_threads = 0;
  uint32_t first_pid = 0;
  std::vector<uint32_t> pids;     // own processes, kept only for the per-process scans
  int procs_h = kNumHierarchies;  // the hierarchy the process lists were read from
  bool gone = false;
  bool procs_known = false, threads_known = false;
};

bool PodOrContainer(const Node& n) { return n.cls.kind == CgroupKind::kPod || n.cls.kind == CgroupKind::kContainer; }

// A cgroup without processes of its own (a pod, whose containers all live in the
// sandbox's namespace) takes the namespace its populated descendants share; a container
// without processes (exited) takes its pod's.
void ShareNamespacesWithParents(Snapshot* snap) {
  struct Seen {
    uint64_t netns = 0;
    bool host = false, mixed = false, any = false;
    void Merge(uint64_t ns, bool h) {
      if (!any) {
        netns = ns;
        host = h;
        any = true;
        return;
      }
      if (ns != netns || h != host) mixed = true;
    }
  };
  const std::vector<int32_t> parent = snap->NearestAncestors();
  std::vector<Seen> below(snap->cgroups.size());
  for (size_t i = snap->cgroups.size(); i-- > 0;) {
    CgroupStats& c = snap->cgroups[i];
    const Seen& b = below[i];
    if (!c.netns_inode && !c.host_network && b.any && !b.mixed) {
      c.host_network = b.host;
      if (b.netns) c.netns_inode = b.netns;  // the host's only when it was read
    }
    if (!c.netns_inode && !c.host_network) continue;
    if (parent[i] >= 0) below[static_cast<size_t>(parent[i])].Merge(c.netns_inode.value_or(0), c.host_network);
  }
  for (auto& c : snap->cgroups) {
    if (c.id.kind != CgroupKind::kContainer || c.netns_inode || c.host_network || c.id.parent_path.empty()) continue;
    if (const CgroupStats* pod = snap->FindByPath(c.id.parent_path)) {
      c.netns_inode = pod->netns_inode;
      c.host_network = pod->host_network;
    }
  }
}

class CgroupCollector : public Collector {
 public:
  CgroupCollector(const CollectorOptions& o, CgroupHierarchies h)
      : opts_(o),
        discovery_(h, o.subtrees),
        plan_(BuildReadPlan(h, HugePageSizes(o.hugepages_dir), o.files)),
        netns_(o.proc_root),
        fd_scanner_(o.proc_root),
        budget_(FdBudget::ForKeptFiles(o.max_kept_files)),
        dir_budget_(FdBudget::FromRlimit(512) - budget_.limit()),
        mounts_(h.mount),
        mode_(h.Mode()),
        workers_(ReadThreads(o.read_threads)),
        pool_(workers_.size()) {
    num_cpus_ = static_cast<uint32_t>(sysconf(_SC_NPROCESSORS_CONF));
    SetUpFileSource();
    SetUpLimitWatch();
  }

  Status Init() {
    Status s = discovery_.Init();
    if (!s.ok()) return s;
    for (const auto& [path, mask] : discovery_.paths()) AddNode(path, mask);
    return Status::Ok();
  }

  StatusOr<Snapshot> Collect(CollectParts parts) override;
  StatusOr<Snapshot> CollectKnowing(CollectParts parts, const MetadataMap& metadata) override;
  const char* CgroupMode() const override { return mode_; }

 private:
  // Pass 2's bookkeeping: the snapshot entry of each container id and pod uid, the further
  // paths read into an entry (aliases), and the cgroups found gone on the way.
  struct Entry {
    size_t index;
    CgroupDiscovery::HierarchyMask mask;
  };
  struct Alias {
    Node* n;
    size_t index;  // its entry
    CgroupDiscovery::HierarchyMask extra;
  };
  struct Reported {
    std::unordered_map<std::string, Entry> entries;
    std::vector<Alias> aliases;
    std::vector<std::string> gone;
    uint64_t dropped = 0, merged = 0;
  };

  // Collect's phases, in order.
  Snapshot StartCollection(CollectParts parts);
  void Refresh();
  void ReadProcessLists();
  // Whether this collection reads the cgroup's files (its parts, the cgroup's kind).
  bool ReadsFilesOf(const Node& n) const;
  void EndWalks(const Status& walk_status);
  Reported ChooseReported(Snapshot* snap);
  void ReadReportedFiles(Snapshot* snap, const Reported& r);
  void FillReported(Snapshot* snap, Reported* r);
  void ReadNetwork(Node* n, Snapshot* snap, CgroupStats* s);
  void FinishCollection(Snapshot* snap, const Reported& r, uint64_t dirs_before);

  void AddNode(const std::string& path, CgroupDiscovery::HierarchyMask mask);
  // `vanished`: the cgroup is gone (not just changed hierarchies): its identity goes into
  // this collection's Snapshot::vanished.
  void RemoveNode(const std::string& path, bool vanished = false);
  void CloseNode(Node* n);
  void ReadProcesses(Node* n, ReadWorker* w);
  // Where to open a file of hierarchy `h` from: the node's directory fd and "", or the
  // hierarchy root and the node's path below it.
  std::pair<int, std::string_view> OpenAt(Node* n, Hierarchy h);
  void SetUpFileSource();
  void SetUpLimitWatch();
  void DrainLimitEvents();
  void WatchLimit(Node* n, size_t i, CachedLimit* cl);
  bool RenderFromSource(Node* n, size_t i, CgroupStats* out, ReadWorker* w);
  // Reads (or renders) the files of `n` in `mask` into *out. Runs on several threads at
  // once, each on cgroups of its own: what it shares is either atomic (the fd budgets),
  // read-only during the reads (the plan, the walks' results), or under shared_mu_.
  void ReadFiles(Node* n, CgroupDiscovery::HierarchyMask mask, CgroupStats* out, ReadWorker* w);
  void ScanProcesses(const Node& n, ProcessStats* out);
  void CountError(const char* file, const char* reason);
  void ApplyChanges(const CgroupDiscovery::Changes& ch);
  Node* Parent(const Node& n);

  CollectorOptions opts_;
  CgroupDiscovery discovery_;
  std::vector<const CgroupFileReader*> plan_;
  // The file source's index of each plan entry (-1: read from cgroupfs), and whether this
  // collection's walk succeeded.
  CgroupFileSource* source_ = nullptr;
  std::vector<int> source_index_;
  uint32_t source_hierarchies_ = 0;                     // bit h: the source renders files of hierarchy h
  std::array<size_t, kNumHierarchies> source_files_{};  // files it renders per cgroup there
  std::array<size_t, kNumHierarchies> cgroups_in_{};    // tracked cgroups in each hierarchy
  uint32_t walking_ = 0;  // hierarchies whose files are taken from the source (min_walked_files)
  uint32_t walked_ = 0;   // of those, the ones this collection's walk covered
  bool source_failure_logged_ = false;
  NetnsReader netns_;
  ProcessFdScanner fd_scanner_;
  FdBudget budget_;
  // O_PATH directory fds (Node::dir_fds): what RLIMIT_NOFILE leaves beside the kept files.
  // They hold no seq_file buffer (~0.25 KiB of kernel memory each, not ~4.5 KiB).
  FdBudget dir_budget_;
  uint32_t num_cpus_ = 0;
  bool scan_fds_ = false;                  // this collection scans container processes' fds
  CollectParts parts_;                     // this collection's parts (which plan entries it reads)
  const MetadataMap* metadata_ = nullptr;  // this collection's: which containers are sandboxes
  // Limits served from memory between writes (null: every file read every time).
  std::unique_ptr<LimitWatch> limits_;
  std::vector<int> limit_slot_;  // per plan entry: its CachedLimit in Node::limits, or -1
  size_t max_limit_watches_ = 0;
  size_t limit_slots_ = 0;
  std::unordered_map<int, std::pair<Node*, size_t>> watched_;  // watch → (node, slot)
  std::vector<int> written_, ended_;                           // Drain's scratch
  std::array<std::string, kNumHierarchies> mounts_;
  const char* mode_;  // CgroupHierarchies::Mode(), a static string
  // By path; a key views its node's own path (no second copy of every path).
  std::map<std::string_view, std::unique_ptr<Node>> nodes_;
  std::map<std::pair<std::string, std::string>, uint64_t> errors_;
  uint64_t sequence_ = 0;
  // Guards errors_, watched_ and limits_ while the reading threads run.
  std::mutex shared_mu_;
  std::vector<Node*> order_;         // this collection's nodes, in path order
  std::vector<Node*> reported_;      // the node of each snapshot entry
  std::vector<Identity> vanished_;   // this collection's Snapshot::vanished
  std::vector<ReadWorker> workers_;  // one per reading thread; [0] is the collecting one
  ParallelFor pool_;                 // last: its threads stop before the rest goes
};

// What the snapshot says of the cgroup `n` is, from its path alone (a container's pod: the
// pod's path; the report loop points it at the pod's entry).
void FillIdentity(const Node& n, Identity* id) {
  id->cgroup_path = n.path;
  id->cgroup_id = n.ids[kUnified];
  id->kind = n.cls.kind;
  id->qos = n.cls.qos;
  id->runtime = n.cls.runtime;
  id->driver = n.cls.driver;
  id->container_id = n.cls.container_id;
  id->pod_uid = n.cls.pod_uid;
  if (n.cls.kind == CgroupKind::kContainer) id->parent_path = n.cls.pod_path;
  id->created_ns = n.created_ns;
}

// usage_nano_cores as the kubelet computes it: the CPU time used since the last collection
// that read this cgroup over the wall time between the two. A counter that went back (a
// cgroup made again under the same path) gives no rate.
void FillRate(Node* n, int64_t now_ns, CpuStats* cpu) {
  if (!cpu->usage_ns) return;
  if (n->mark_usage_ns && now_ns > n->mark_at_ns && *cpu->usage_ns >= *n->mark_usage_ns) {
    const double dt = static_cast<double>(now_ns - n->mark_at_ns);
    cpu->usage_nano_cores = static_cast<uint64_t>(static_cast<double>(*cpu->usage_ns - *n->mark_usage_ns) * 1e9 / dt);
  }
  n->mark_usage_ns = cpu->usage_ns;
  n->mark_at_ns = now_ns;
}

void CgroupCollector::AddNode(const std::string& path, CgroupDiscovery::HierarchyMask mask) {
  auto n = std::make_unique<Node>();
  n->path = path;
  if (path != "/") {
    const size_t slash = path.rfind('/');
    n->parent_len = slash == 0 ? 1 : slash;
  }
  n->mask = mask;
  n->cls = ClassifyCgroupPath(path);
  n->files = std::vector<KeptFile>(plan_.size());
  n->limits = std::vector<CachedLimit>(limit_slots_);
  struct stat st;
  for (int h = 0; h < kNumHierarchies; ++h) {
    const bool id_wanted = h == kUnified || (source_hierarchies_ & (1u << h));
    if (!(mask & (1u << h)) || (n->created_ns && !id_wanted)) continue;
    if (::fstatat(discovery_.root_fd(static_cast<Hierarchy>(h)), n->rel(), &st, 0) != 0) continue;
    if (!n->created_ns) n->created_ns = int64_t{st.st_ctim.tv_sec} * 1000000000 + st.st_ctim.tv_nsec;
    if (id_wanted) n->ids[h] = st.st_ino;
  }
  for (int h = 0; h < kNumHierarchies; ++h) cgroups_in_[h] += (mask >> h) & 1u;
  RemoveNode(path);  // a node's key views its own path: never keep an old key
  const std::string_view key = n->path;
  nodes_.emplace(key, std::move(n));
}

void CgroupCollector::CloseNode(Node* n) {
  for (auto& cl : n->limits) {
    if (cl.wd < 0) continue;
    limits_->Remove(cl.wd);
    watched_.erase(cl.wd);
    cl.wd = -1;
  }
  for (auto& f : n->files) f.Close(&budget_);
  n->procs.Close(&budget_);
  n->threads.Close(&budget_);
  for (int& fd : n->dir_fds) {
    if (fd < 0) continue;
    ::close(fd);
    fd = -1;
    dir_budget_.Release();
  }
}

std::pair<int, std::string_view> CgroupCollector::OpenAt(Node* n, Hierarchy h) {
  int& fd = n->dir_fds[h];
  if (fd < 0 && dir_budget_.TryAcquire()) {
    fd = ::openat(discovery_.root_fd(h), n->rel(), O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) dir_budget_.Release();  // gone: its reads below say so
  }
  if (fd >= 0) return {fd, std::string_view()};
  return {discovery_.root_fd(h), n->rel()};
}

void CgroupCollector::RemoveNode(const std::string& path, bool vanished) {
  auto it = nodes_.find(path);
  if (it == nodes_.end()) return;
  if (vanished) FillIdentity(*it->second, &vanished_.emplace_back());
  CloseNode(it->second.get());
  for (int h = 0; h < kNumHierarchies; ++h) cgroups_in_[h] -= (it->second->mask >> h) & 1u;
  nodes_.erase(it);
}

void CgroupCollector::ApplyChanges(const CgroupDiscovery::Changes& ch) {
  for (const auto& p : ch.removed) RemoveNode(p, /*vanished=*/true);
  for (const auto& p : ch.added) AddNode(p, discovery_.paths().at(p));
  for (const auto& p : ch.changed) {
    // A hierarchy appeared or vanished for this path: start over with fresh files.
    RemoveNode(p);
    AddNode(p, discovery_.paths().at(p));
  }
}

void CgroupCollector::CountError(const char* file, const char* reason) {
  std::lock_guard<std::mutex> lk(shared_mu_);
  ++errors_[{file, reason}];
}

Node* CgroupCollector::Parent(const Node& n) {
  if (n.parent_len == 0) return nullptr;
  auto it = nodes_.find(n.parent_path());
  return it == nodes_.end() ? nullptr : it->second.get();
}

void CgroupCollector::ReadProcesses(Node* n, ReadWorker* w) {
  n->own_procs = n->own_threads = 0;
  n->first_pid = 0;
  n->pids.clear();
  n->procs_known = n->threads_known = false;
  // The unified hierarchy when the path is there (it has cgroup.threads even without
  // controllers), else the first v1 hierarchy holding it.
  Hierarchy procs_h = kNumHierarchies;
  for (int h = 0; h < kNumHierarchies; ++h) {
    if (n->mask & (1u << h)) {
      procs_h = static_cast<Hierarchy>(h);
      break;
    }
  }
  n->procs_h = procs_h;
  if (procs_h == kNumHierarchies) return;
  int err = 0;
  const auto [fd, dir] =
      n->procs.is_open() && n->threads.is_open() ? std::pair<int, std::string_view>(-1, "") : OpenAt(n, procs_h);
  ReadOutcome r = n->procs.Read(fd, dir, "cgroup.procs", &budget_, &w->buf, &err);
  // Every cgroup of every hierarchy has cgroup.procs: when it cannot be found, the
  // directory is gone (whatever discovery has heard so far).
  if (r == ReadOutcome::kGone || r == ReadOutcome::kAbsent) {
    n->procs.ForgetAbsent();
    n->gone = true;
    return;
  }
  if (r == ReadOutcome::kError) {
    CountError("cgroup.procs", "io");
    return;
  }
  if (r == ReadOutcome::kOk) {
    ++w->files_read;
    bool has_net_pid = false;
    const bool keep_pids = scan_fds_ && n->cls.kind == CgroupKind::kContainer;
    n->own_procs =
        parse::CountIds(w->buf.view(), n->net_pid, &has_net_pid, &n->first_pid, keep_pids ? &n->pids : nullptr);
    n->procs_known = true;
    if (!has_net_pid) n->net_pid = 0;  // pick again below
  }
  r = n->threads.Read(fd, dir, procs_h == kUnified ? "cgroup.threads" : "tasks", &budget_, &w->buf, &err);
  if (r == ReadOutcome::kGone) {
    n->gone = true;
    return;
  }
  if (r == ReadOutcome::kError) {
    CountError(procs_h == kUnified ? "cgroup.threads" : "tasks", "io");
    return;
  }
  if (r == ReadOutcome::kOk) {
    ++w->files_read;
    bool unused;
    uint32_t unused_first;
    n->own_threads = parse::CountIds(w->buf.view(), 0, &unused, &unused_first);
    n->threads_known = true;
  }
}

void CgroupCollector::SetUpFileSource() {
  source_ = opts_.file_source;
  source_index_.assign(plan_.size(), -1);
  if (source_ == nullptr) return;
  std::string names;
  for (size_t i = 0; i < plan_.size(); ++i) {
    const CgroupFileReader& r = *plan_[i];
    if (r.apply == nullptr || r.written_only) continue;  // hugetlb; limits are served from memory
    source_index_[i] = source_->FileIndex(r.hierarchy, r.name);
    if (source_index_[i] < 0) continue;
    source_hierarchies_ |= 1u << r.hierarchy;
    source_files_[r.hierarchy]++;
    // Each file with its hierarchy: cpu.stat of cpu and of the unified tree are two files.
    names += std::string(names.empty() ? "" : ", ") + r.name + " (" + HierarchyName(r.hierarchy) + ")";
  }
  // Which files come from where asks nothing of the operator: debug level.
  if (names.empty()) {
    log::Debug(
        "collector: the eBPF cgroup iterator renders none of the files this host's read plan has; all read from "
        "cgroupfs");
    source_ = nullptr;  // no walk per collection for nothing
  } else {
    log::Debug("collector: " + names +
               " from the eBPF cgroup iterator (one kernel walk per hierarchy and collection, where at least " +
               std::to_string(opts_.min_walked_files) + " of its files are read), the other files from cgroupfs");
  }
}

void CgroupCollector::SetUpLimitWatch() {
  limit_slot_.assign(plan_.size(), -1);
  if (!opts_.watch_limits) return;
  limits_ = std::make_unique<LimitWatch>();
  if (!limits_->ok()) {
    log::Warn("collector: inotify is not available; limits are read on every collection");
    limits_.reset();
    return;
  }
  for (size_t i = 0; i < plan_.size(); ++i) {
    if (plan_[i]->written_only) limit_slot_[i] = static_cast<int>(limit_slots_++);
  }
  max_limit_watches_ = opts_.max_limit_watches;
  unsigned long user_watches = 0;
  if (FILE* f = std::fopen("/proc/sys/fs/inotify/max_user_watches", "re")) {
    if (std::fscanf(f, "%lu", &user_watches) != 1) user_watches = 0;
    std::fclose(f);
  }
  if (user_watches > 0) max_limit_watches_ = std::min<size_t>(max_limit_watches_, user_watches / 8);
}

// Every limit written since the last collection is read again in this one.
void CgroupCollector::DrainLimitEvents() {
  if (!limits_) return;
  if (limits_->Drain(&written_, &ended_)) {
    for (auto& [wd, at] : watched_) at.first->limits[at.second].valid = false;
  }
  for (int wd : written_) {
    if (auto it = watched_.find(wd); it != watched_.end()) it->second.first->limits[it->second.second].valid = false;
  }
  for (int wd : ended_) {  // the kernel dropped the watch: watch the file again when read
    auto it = watched_.find(wd);
    if (it == watched_.end()) continue;
    CachedLimit& cl = it->second.first->limits[it->second.second];
    cl.wd = -1;
    cl.valid = false;
    watched_.erase(it);
  }
}

// Watched before it is read, so that no write after the read goes unseen.
void CgroupCollector::WatchLimit(Node* n, size_t i, CachedLimit* cl) {
  const CgroupFileReader& r = *plan_[i];
  std::string path = mounts_[r.hierarchy];
  path.append("/").append(n->rel()).append("/").append(r.name);
  int err = 0;
  {
    std::lock_guard<std::mutex> lk(shared_mu_);
    if (watched_.size() >= max_limit_watches_) return;  // read every time; watched once there is room
    const int wd = limits_->Add(path);
    if (wd >= 0) {
      cl->wd = wd;
      watched_[wd] = {n, static_cast<size_t>(limit_slot_[i])};
      return;
    }
    err = errno;
  }
  // ENOENT: no such file (remembered as absent by its read) or cgroup gone.
  if (err != ENOENT) {
    cl->unwatchable = true;
    CountError(r.name, "watch");
  }
}

// A file the source renders: its existence is still checked once per cgroup (a controller
// not enabled there, a file not on the root), then its content comes from this
// collection's walk. False: read it from cgroupfs (the walk did not see the cgroup).
bool CgroupCollector::RenderFromSource(Node* n, size_t i, CgroupStats* out, ReadWorker* w) {
  const CgroupFileReader& r = *plan_[i];
  if (!(walked_ & (1u << r.hierarchy)) || source_index_[i] < 0 || n->ids[r.hierarchy] == 0) return false;
  int err = 0;
  switch (n->files[i].Check(discovery_.root_fd(r.hierarchy), n->rel(), r.name, &err)) {  // once
    case ReadOutcome::kAbsent: return true;                                              // nothing to fill
    case ReadOutcome::kGone: n->gone = true; return true;
    case ReadOutcome::kError: return false;
    case ReadOutcome::kOk: break;
  }
  if (!source_->Render(n->ids[r.hierarchy], source_index_[i], &w->buf)) return false;
  n->files[i].Close(&budget_);  // kept while the walk was not worth it: its fd is better spent
  ++w->files_read;
  if (!ApplyReader(r, w->buf.view(), out)) CountError(r.name, "parse");
  return true;
}

void CgroupCollector::ReadFiles(Node* n, CgroupDiscovery::HierarchyMask mask, CgroupStats* out, ReadWorker* w) {
  for (size_t i = 0; i < plan_.size() && !n->gone; ++i) {
    const CgroupFileReader& r = *plan_[i];
    if (!(mask & (1u << r.hierarchy))) continue;
    if (!r.ReadIn(parts_)) continue;
    if (n->files[i].absent()) continue;
    CachedLimit* cl = limit_slot_[i] >= 0 ? &n->limits[static_cast<size_t>(limit_slot_[i])] : nullptr;
    if (cl != nullptr) {
      if (cl->valid) {
        ++w->files_cached;
        if (!ApplyReader(r, std::string_view(cl->data, cl->len), out)) CountError(r.name, "parse");
        continue;
      }
      if (cl->wd < 0 && !cl->unwatchable) WatchLimit(n, i, cl);
    }
    if (RenderFromSource(n, i, out, w)) continue;
    int err = 0;
    const auto [dir_fd, dir] =
        n->files[i].is_open() ? std::pair<int, std::string_view>(-1, "") : OpenAt(n, r.hierarchy);
    switch (n->files[i].Read(dir_fd, dir, r.name, &budget_, &w->buf, &err)) {
      case ReadOutcome::kOk:
        ++w->files_read;
        if (!ApplyReader(r, w->buf.view(), out)) CountError(r.name, "parse");
        if (cl != nullptr && cl->wd >= 0 && w->buf.view().size() <= sizeof cl->data) {
          std::memcpy(cl->data, w->buf.view().data(), w->buf.view().size());
          cl->len = static_cast<uint8_t>(w->buf.view().size());
          cl->valid = true;
          n->files[i].Close(&budget_);  // its fd is better spent on a file read every time
        }
        break;
      case ReadOutcome::kGone: n->gone = true; break;
      case ReadOutcome::kError: CountError(r.name, err == EACCES || err == EPERM ? "permission" : "io"); break;
      case ReadOutcome::kAbsent: break;
    }
  }
}

// A process that exits during the scan is left out; one that cannot be read is counted
// as a read error and left out too, so the sums cover the processes that answered.
void CgroupCollector::ScanProcesses(const Node& n, ProcessStats* out) {
  ProcessFdCounts counts;
  for (uint32_t pid : n.pids) {
    int err = 0;
    if (fd_scanner_.Count(pid, &counts, &err) == ReadOutcome::kError) {
      CountError("/proc/<pid>/fd", err == EACCES || err == EPERM ? "permission" : "io");
    }
  }
  out->file_descriptors = counts.fds;
  out->sockets = counts.sockets;
  // The first process that answers stands for the container (cAdvisor: its root process).
  for (uint32_t pid : n.pids) {
    int err = 0;
    uint64_t soft = 0;
    ReadOutcome r = fd_scanner_.MaxOpenFilesSoft(pid, &soft, &err);
    if (r == ReadOutcome::kOk) {
      out->max_open_files_soft = soft;
      break;
    }
    if (r == ReadOutcome::kError) {
      CountError("/proc/<pid>/limits", err == EACCES || err == EPERM ? "permission" : err == EINVAL ? "parse" : "io");
      break;
    }
  }
}

// One collection, phase by phase: the snapshot's header; discovery's changes, limit writes
// and which walks pay (refresh); pass 1, the process lists, with the walks beside it;
// pass 2, the reported cgroups' files; what the shared readers add; the collection's own
// figures.
StatusOr<Snapshot> CgroupCollector::CollectKnowing(CollectParts parts, const MetadataMap& metadata) {
  metadata_ = &metadata;
  StatusOr<Snapshot> snap = Collect(parts);
  metadata_ = nullptr;
  return snap;
}

StatusOr<Snapshot> CgroupCollector::Collect(CollectParts parts) {
  Snapshot snap = StartCollection(parts);
  const uint64_t dirs_before = discovery_.directories_read();
  Refresh();
  ReadProcessLists();
  Reported r = ChooseReported(&snap);
  ReadReportedFiles(&snap, r);
  FillReported(&snap, &r);
  FinishCollection(&snap, r, dirs_before);
  return snap;
}

Snapshot CgroupCollector::StartCollection(CollectParts parts) {
  scan_fds_ = opts_.process_fds && parts.Has(CollectParts::kProcessFds);
  parts_ = parts;
  for (ReadWorker& w : workers_) w.files_read = w.files_cached = 0;
  Snapshot snap;
  // A part the options turn off is as complete as any other collection would make it.
  snap.parts = opts_.process_fds ? parts : parts | CollectParts(CollectParts::kProcessFds);
  snap.timestamp_ns = NowNs(CLOCK_REALTIME);
  snap.monotonic_ns = NowNs(CLOCK_MONOTONIC);
  snap.sequence = ++sequence_;
  snap.num_cpus = num_cpus_;
  return snap;
}

void CgroupCollector::Refresh() {
  vanished_.clear();
  ApplyChanges(discovery_.Poll());
  DrainLimitEvents();
  // One kernel walk per hierarchy for the files the source renders, where the collection
  // reads enough of them to pay for it (run beside pass 1); if it fails, they are read in
  // pass 2.
  walked_ = 0;
  if (source_ != nullptr) {
    for (int h = 0; h < kNumHierarchies; ++h) {
      const bool walk =
          CgroupFileSource::WalkPays(cgroups_in_[h] * source_files_[h], walking_ & (1u << h), opts_.min_walked_files);
      walking_ = walk ? walking_ | (1u << h) : walking_ & ~(1u << h);
    }
  }
}

void CgroupCollector::ReadProcessLists() {
  // Pass 1: process lists (on the reading threads), and subtree totals (a parent sorts
  // before its children, so a reverse walk sees every child before its parent). The walks
  // run beside it, as its first item: only pass 2 needs them.
  order_.clear();
  for (auto& [path, n] : nodes_) order_.push_back(n.get());
  const bool walk = source_ != nullptr && walking_ != 0;
  Status walk_status;
  pool_.Run(order_.size() + walk, kCgroupsPerTake, opts_.min_parallel_cgroups, [&](size_t w, size_t i) {
    if (walk) {
      if (i == 0) {
        walk_status = source_->Refresh(walking_);
        return;
      }
      --i;
    }
    Node* n = order_[i];
    n->gone = false;
    if (!parts_.Lists(PodOrContainer(*n))) {
      n->own_procs = n->own_threads = 0;
      n->procs_known = n->threads_known = false;
      n->tree_procs = n->tree_threads = 0;
      return;
    }
    ReadProcesses(n, &workers_[w]);
    n->tree_procs = n->own_procs;
    n->tree_threads = n->own_threads;
  });
  if (walk) EndWalks(walk_status);
  for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
    Node* n = *it;
    if (n->gone) continue;
    // Only within one hierarchy: on a hybrid host a path may exist in v1 hierarchies only,
    // and its processes are then already counted at the unified root.
    Node* p = Parent(*n);
    if (p != nullptr && p->procs_h == n->procs_h) {
      p->tree_procs += n->tree_procs;
      p->tree_threads += n->tree_threads;
    }
  }
}

void CgroupCollector::EndWalks(const Status& walk_status) {
  walked_ = walk_status.ok() ? walking_ : 0;
  if (walk_status.ok()) return;
  CountError("cgroup iterator", "io");
  if (!source_failure_logged_) {
    log::Warn("collector: the eBPF cgroup iterator failed, reading its files from cgroupfs: " + walk_status.message());
    source_failure_logged_ = true;
  }
}

CgroupCollector::Reported CgroupCollector::ChooseReported(Snapshot* snap) {
  // Pass 2 starts with which cgroups are reported, in path order. One entry per container
  // id and per pod uid. On a v1 host a runtime given a relative cgroup parent nests one
  // container under different paths in different hierarchies (each under the runtime's own
  // cgroup there): the first path (in path order) is the entry, and each alias fills in the
  // hierarchies it lacks.
  Reported r;
  reported_.clear();
  snap->cgroups.reserve(nodes_.size());
  for (Node* n : order_) {
    if (n->gone) {
      r.gone.push_back(n->path);
      continue;
    }
    if (!parts_.Lists(PodOrContainer(*n))) continue;
    bool populated = n->tree_procs > 0;
    bool k8s = n->cls.kind != CgroupKind::kOther;
    if (!(k8s || populated || opts_.include_empty)) continue;
    std::string key;
    if (n->cls.kind == CgroupKind::kContainer && !n->cls.container_id.empty()) key = "c/" + n->cls.container_id;
    if (n->cls.kind == CgroupKind::kPod && !n->cls.pod_uid.empty()) key = "p/" + n->cls.pod_uid;
    if (auto it = key.empty() ? r.entries.end() : r.entries.find(key); it != r.entries.end()) {
      const auto extra = static_cast<CgroupDiscovery::HierarchyMask>(n->mask & ~it->second.mask);
      it->second.mask |= extra;
      r.aliases.push_back({n, it->second.index, extra});
      ++r.merged;
      continue;
    }
    if (opts_.max_cgroups != 0 && snap->cgroups.size() >= opts_.max_cgroups) {
      ++r.dropped;
      continue;
    }
    snap->cgroups.emplace_back();
    reported_.push_back(n);
    if (!key.empty()) r.entries.emplace(key, Entry{snap->cgroups.size() - 1, n->mask});
  }
  return r;
}

bool CgroupCollector::ReadsFilesOf(const Node& n) const {
  const bool container = n.cls.kind == CgroupKind::kContainer;
  bool sandbox = false;
  if (container && metadata_ != nullptr) {
    auto it = metadata_->by_container_id.find(n.cls.container_id);
    sandbox = it != metadata_->by_container_id.end() && it->second->is_sandbox;
  }
  return parts_.ReadsFilesOf(container, sandbox);
}

void CgroupCollector::ReadReportedFiles(Snapshot* snap, const Reported& r) {
  // The reported cgroups' files on the reading threads, then what each alias adds.
  pool_.Run(reported_.size(), kCgroupsPerTake, opts_.min_parallel_cgroups, [&](size_t w, size_t i) {
    Node* n = reported_[i];
    if (ReadsFilesOf(*n)) ReadFiles(n, n->mask, &snap->cgroups[i], &workers_[w]);
  });
  for (const Alias& a : r.aliases) {
    const bool read = ReadsFilesOf(*a.n);
    if (read && a.extra != 0 && !reported_[a.index]->gone)
      ReadFiles(a.n, a.extra, &snap->cgroups[a.index], &workers_[0]);
  }
}

void CgroupCollector::FillReported(Snapshot* snap, Reported* r) {
  // What the collector's shared readers give (identity, process counts, the fd scan, rates,
  // network namespaces), in path order on the collecting thread; gone cgroups leave.
  std::vector<bool> alias_populated(reported_.size());
  for (const Alias& a : r->aliases) {
    if (a.n->tree_procs > 0) alias_populated[a.index] = true;
    if (a.n->gone) r->gone.push_back(a.n->path);
  }
  size_t kept = 0;
  for (size_t i = 0; i < reported_.size(); ++i) {
    Node* n = reported_[i];
    if (n->gone) {
      r->gone.push_back(n->path);
      continue;
    }
    CgroupStats& s = snap->cgroups[i];
    Identity& id = s.id;
    FillIdentity(*n, &id);
    if (n->cls.kind == CgroupKind::kContainer) {
      // The pod's entry, which may sit at another of its paths.
      auto pod = n->cls.pod_uid.empty() ? r->entries.end() : r->entries.find("p/" + n->cls.pod_uid);
      if (pod != r->entries.end() && !reported_[pod->second.index]->gone)
        id.parent_path = reported_[pod->second.index]->path;
    }
    s.populated = n->tree_procs > 0 || alias_populated[i];
    if (n->procs_known) s.process.processes = n->tree_procs;
    if (n->threads_known) s.process.threads = n->tree_threads;
    if (scan_fds_ && n->cls.kind == CgroupKind::kContainer && n->procs_known) ScanProcesses(*n, &s.process);
    FinishCgroupStats(&s);
    FillRate(n, snap->monotonic_ns, &s.cpu);
    ReadNetwork(n, snap, &s);
    if (kept != i) snap->cgroups[kept] = std::move(s);
    ++kept;
  }
  snap->cgroups.resize(kept);
}

void CgroupCollector::ReadNetwork(Node* n, Snapshot* snap, CgroupStats* s) {
  // Network namespace of a process in this cgroup (own processes only: a parent's
  // namespace comes from its children below).
  if (!opts_.network || n->own_procs == 0) return;
  if (n->net_pid == 0 || n->netns == 0) {
    n->net_pid = n->first_pid;
    n->netns = netns_.NetnsOf(n->net_pid);
  }
  if (n->netns != 0 && n->netns == netns_.host_netns()) s->host_network = true;
  if (n->netns != 0 && (!s->host_network || opts_.host_network_interfaces)) {
    auto [it, fresh] = snap->netns.try_emplace(n->netns);
    ReadOutcome r = fresh ? netns_.Read(n->netns, n->net_pid, &it->second) : ReadOutcome::kOk;
    if (r == ReadOutcome::kGone) {
      snap->netns.erase(it);
      n->net_pid = 0;
      n->netns = 0;
    } else {
      if (r == ReadOutcome::kError) CountError("net/dev", "parse");
      s->netns_inode = n->netns;
    }
  }
}

void CgroupCollector::FinishCollection(Snapshot* snap, const Reported& r, uint64_t dirs_before) {
  // Cgroups gone during the collection: discovery looks again; a path still there in some
  // hierarchy (a v1 directory removed first) is reopened next time.
  for (const auto& p : r.gone) {
    CgroupDiscovery::Changes ch;
    discovery_.Revalidate(p, &ch);
    ApplyChanges(ch);
    if (nodes_.count(p)) {
      RemoveNode(p);
      auto m = discovery_.paths().find(p);
      if (m != discovery_.paths().end()) AddNode(p, m->second);
    }
  }
  netns_.EndCollection();

  ShareNamespacesWithParents(snap);
  snap->vanished = std::move(vanished_);

  for (const auto& [key, count] : errors_) snap->read_errors.push_back({key.first, key.second, count});
  CollectionStats& c = snap->collection;
  c.cgroups_tracked = nodes_.size();
  c.cgroups_reported = snap->cgroups.size();
  c.cgroups_vanished = r.gone.size();
  c.cgroups_dropped = r.dropped;
  c.cgroups_merged = r.merged;
  c.discovery_rescans = discovery_.directories_read() - dirs_before;
  c.fds_kept = budget_.used();
  for (const ReadWorker& w : workers_) {
    c.files_read += w.files_read;
    c.files_cached += w.files_cached;
  }
  c.duration_ns = NowNs(CLOCK_MONOTONIC) - snap->monotonic_ns;
}

}  // namespace

StatusOr<std::unique_ptr<Collector>> Collector::Create(const CollectorOptions& options) {
  auto h = DetectHierarchies(options.cgroup_mount, options.proc_root);
  if (!h.ok()) return h.status();
  auto c = std::make_unique<CgroupCollector>(options, *h);
  Status s = c->Init();
  if (!s.ok()) return s;
  log::Debug(std::string("cgroup mode ") + h->Mode());
  return std::unique_ptr<Collector>(std::move(c));
}

}  // namespace statlet
