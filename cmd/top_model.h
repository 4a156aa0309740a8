// statlet top's model: the rows one refresh shows, with rates computed from two samples of
// cumulative counters, then filtered and sorted. No terminal, no drawing, no I/O: the
// sources (cmd/top_source.h) fill samples, the renderer (cmd/top_render.h) draws rows.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace statlet::top {

// kSection: a heading of a mixed host's view (cmd/top_source.h), above the Kubernetes pods
// or the host's other cgroups, with the totals of what it heads where they are known.
enum class EntryKind : uint8_t { kPod, kContainer, kCgroup, kSection };

// The keys of the two sections of a mixed host, which View::show selects between.
inline constexpr char kKubernetesSection[] = "section/kubernetes";
inline constexpr char kHostSection[] = "section/host";

// One pod, container or cgroup at one instant, as its source reported it. Counters are
// cumulative, in base units; an absent value is unknown, never 0.
struct Entry {
  std::string key;     // unique within a sample: pod sandbox id, container id, cgroup path
  std::string parent;  // key of the entry this one is shown under; "" at the top
  std::string name;    // what the NAME column shows
  EntryKind kind = EntryKind::kCgroup;
  int64_t timestamp_ns = 0;  // when the counters were read; only differences are used
  std::optional<uint64_t> cpu_ns, user_ns, system_ns;
  std::optional<uint64_t> periods, throttled_periods, throttled_ns;  // CFS bandwidth
  std::optional<uint64_t> working_set_bytes;
  std::optional<uint64_t> memory_limit_bytes;  // absent: no limit
  std::optional<uint64_t> rx_bytes, tx_bytes;  // the entry's own network namespace, loopback left out
  std::optional<double> cpu_psi_some_avg10, memory_psi_some_avg10;  // percent
  // The Memory QoS zone of a container ("below_request", "above_request", "throttling",
  // "at_limit"; "" unknown), shown as a mark beside its memory (MemoryZoneMark).
  std::string memory_zone = "";
};

struct Sample {
  std::vector<Entry> entries;
  // Which Memory QoS rules the zones were judged by (DescribeMemoryQos); "" when the source
  // says nothing of them.
  std::string memory_qos = "";
};

// The mark the MEM column puts after a container's memory: '<' below its protected request,
// '^' throttling at memory.high, '!' at its limit; ' ' above its request or unknown.
char MemoryZoneMark(std::string_view zone);
// "memqos v1.36 TieredReservation factor 0.9, kubelet v1.36.2", "memqos off, kubelet
// v1.35.0", "memqos rules unknown": from the rules label, reservation policy, throttling
// factor and kubelet version the daemon or the collection reports.
std::string DescribeMemoryQos(std::string_view rules, std::string_view policy, std::string_view factor,
                              std::string_view kubelet_version);

// The table's columns, left to right; every one can be the sort column.
enum class Column : uint8_t {
  kName,
  kCpu,
  kUser,
  kSystem,
  kMemory,
  kLimit,
  kThrottled,
  kRx,
  kTx,
  kCpuPsi,
  kMemoryPsi,
};
inline constexpr int kColumnCount = 11;
// "name", "cpu", "user", "system", "memory", "limit", "throttled", "rx", "tx", "cpu-psi",
// "memory-psi": the --sort values and what the header says.
const char* ColumnName(Column c);
std::optional<Column> ColumnByName(std::string_view name);

struct Row {
  std::string key, parent, name;
  EntryKind kind = EntryKind::kCgroup;
  int depth = 0;  // nesting under its shown ancestors; set by Arrange
  // Rates over the window between the two samples; percent of one CPU.
  std::optional<double> cpu_percent, user_percent, system_percent;
  std::optional<uint64_t> working_set_bytes, memory_limit_bytes;
  std::optional<double> throttled_percent;  // of the CFS periods that elapsed in the window
  std::optional<double> throttled_seconds_per_second;
  std::optional<double> rx_bytes_per_second, tx_bytes_per_second;
  std::optional<double> cpu_psi_some_avg10, memory_psi_some_avg10;
  std::string memory_zone;

  // The value sorted on; absent for kName and for unknown values.
  std::optional<double> Value(Column c) const;
};

// One row per entry of `current`, in its order. Rates come from the entry with the same key
// in `previous`; without one, or when a counter went backwards (a cgroup recreated under the
// same path) or no time passed, they stay absent.
std::vector<Row> BuildRows(const Sample* previous, const Sample& current);

// Which section of a mixed host the view shows; a sample without sections shows whole.
enum class Show : uint8_t { kAll, kPods, kHost };
const char* ShowName(Show s);  // "all", "pods", "host": the --show values
std::optional<Show> ShowByName(std::string_view name);

struct View {
  Column sort = Column::kCpu;
  Show show = Show::kAll;
  bool reverse = false;  // flips the natural order: largest first, names A-Z
  std::string filter;    // case-insensitive substring of a row's name or key; "" = all
};

// The rows to show, in display order: a row stays when it, one of its ancestors or one of
// its descendants matches the filter (a pod keeps its containers, a container its pod), and
// it is in the section `show` asks for (when the rows have sections). Sections keep their
// order in `rows`; the rows under each are sorted.
// Siblings are sorted by the view's column (unknown values last, then by name), each row
// followed by its own children; `depth` says how deep. A row whose parent is not among
// `rows` is shown at the top.
std::vector<Row> Arrange(std::vector<Row> rows, const View& view);

}  // namespace statlet::top
