// /metrics encode that re-renders only what changed (PrometheusEncoder::EncodeKept) against
// the full encode (Encode) of the same snapshots, in one run: a node of pods of a sandbox
// plus 3 containers, with the eBPF values, whose snapshots alternate between A and a copy
// of A in which a tenth of the values moved (or every value). Each side encodes the two in
// turn, so every kept encode meets the changes of a new collection.
//
//   full_10 / kept_10    A and B10 (each value of each cgroup moved with probability 1/10)
//   full_all / kept_all  A and Ball (every value moved, the snapshot time too)
//   kept_0               A and a copy of A (nothing moved): the floor of a kept encode, the
//                        value path's walk and the comparisons
//
// Rounds measure the five sides in rotating order (this thread's CPU time per encode over a
// batch); figures are medians over rounds with their min–max, ratios medians of per-round
// ratios. The share of series that changed is counted from the texts, and every round
// checks that a kept rope is byte for byte the full text of the same snapshot. The kept
// state's memory is what the encoder reports (PrometheusEncoder::kept_stats).
//
//   bench_prometheus_kept [--pods N] [--rounds R] [--json FILE] [--only SIDE]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "bench/support/rounds.h"
#include "exporters/prometheus_encoder.h"
#include "tests/prometheus/test_snapshots.h"

namespace statlet {
namespace {

std::string Dev(uint32_t a, uint32_t b) { return std::to_string(a) + ":" + std::to_string(b); }

// Moves each value of the snapshot with probability 1/one_in (1: all of them).
class Mover {
 public:
  Mover(uint32_t seed, uint32_t one_in) : rng_(seed), one_in_(one_in) {}

  void Move(Snapshot* s) {
    if (one_in_ == 1) s->timestamp_ns += 1'000'000'000;
    for (CgroupStats& c : s->cgroups) {
      CpuStats& cpu = c.cpu;
      for (Opt<uint64_t>* v : {&cpu.usage_ns, &cpu.user_ns, &cpu.system_ns, &cpu.nr_periods, &cpu.nr_throttled,
                               &cpu.throttled_ns, &cpu.period_us, &cpu.shares, &cpu.quota_us}) {
        Bump(v);
      }
      MemoryStats& m = c.memory;
      for (Opt<uint64_t>* v : {&m.usage_bytes,
                               &m.max_usage_bytes,
                               &m.working_set_bytes,
                               &m.rss_bytes,
                               &m.cache_bytes,
                               &m.mapped_file_bytes,
                               &m.swap_bytes,
                               &m.kernel_bytes,
                               &m.failcnt,
                               &m.pgfault,
                               &m.pgmajfault,
                               &m.pgscan_direct,
                               &m.pgscan_kswapd,
                               &m.pgsteal_direct,
                               &m.pgsteal_kswapd,
                               &m.workingset_refault_anon,
                               &m.workingset_refault_file,
                               &m.min_bytes,
                               &m.low_bytes,
                               &m.high_bytes,
                               &m.max_bytes,
                               &m.swap_max_bytes,
                               &m.events.low,
                               &m.events.high,
                               &m.events.max,
                               &m.events.oom,
                               &m.events.oom_kill,
                               &m.events.oom_group_kill,
                               &m.events_local.low,
                               &m.events_local.high,
                               &m.events_local.max,
                               &m.events_local.oom,
                               &m.events_local.oom_kill,
                               &m.events_local.oom_group_kill}) {
        Bump(v);
      }
      for (Psi* p : {&cpu.psi, &m.psi, &c.io.psi}) {
        for (Opt<PsiLine>* line : {&p->some, &p->full}) {
          if (!*line) continue;
          if (Hit()) (*line)->total_us += 7;
          if (Hit()) (*line)->avg10 += 0.01;
          if (Hit()) (*line)->avg60 += 0.01;
          if (Hit()) (*line)->avg300 += 0.01;
        }
      }
      ProcessStats& p = c.process;
      for (Opt<uint64_t>* v : {&p.processes, &p.threads, &p.pids_current, &p.pids_max, &p.pids_events_max}) Bump(v);
      for (IoDeviceStats& d : c.io.devices) {
        for (Opt<uint64_t>* v : {&d.read_bytes, &d.write_bytes, &d.read_ios, &d.write_ios}) Bump(v);
      }
      BpfCgroupStats& b = c.bpf;
      for (Opt<uint64_t>* v : {&b.minor_faults, &b.major_faults, &b.oom_kills, &b.tcp_retransmits}) Bump(v);
      for (auto& [reason, n] : b.tcp_drop_reasons) {
        if (Hit()) ++n;
      }
      if (!b.runq_latency_log2_us.empty() && Hit()) {
        ++b.runq_latency_log2_us[1];
        if (b.runq_latency_sum_ns) *b.runq_latency_sum_ns += 3000;
      }
    }
    for (auto& [inode, ns] : s->netns) {
      for (NetInterfaceStats& i : ns.interfaces) {
        for (uint64_t* v : {&i.rx_bytes, &i.rx_packets, &i.rx_errors, &i.rx_dropped, &i.tx_bytes, &i.tx_packets,
                            &i.tx_errors, &i.tx_dropped}) {
          if (Hit()) ++*v;
        }
      }
    }
  }

 private:
  bool Hit() { return one_in_ == 1 || rng_() % one_in_ == 0; }
  void Bump(Opt<uint64_t>* v) {
    if (!*v || **v == kUnlimited || !Hit()) return;
    **v += 1;
  }
  std::mt19937 rng_;
  uint32_t one_in_;
};

// Share of the series of `a` whose line differs in `b` (same series order).
double ChangedShare(const std::string& a, const std::string& b, size_t* series) {
  size_t n = 0, changed = 0, pa = 0, pb = 0;
  while (pa < a.size() && pb < b.size()) {
    const size_t ea = a.find('\n', pa), eb = b.find('\n', pb);
    const std::string_view la(a.data() + pa, ea - pa), lb(b.data() + pb, eb - pb);
    if (!la.empty() && la[0] != '#') {
      ++n;
      changed += la != lb;
    }
    pa = ea + 1;
    pb = eb + 1;
  }
  *series = n;
  return n ? static_cast<double>(changed) / static_cast<double>(n) : 0;
}

struct Side {
  const char* name;
  bool kept;
  const Snapshot* other;  // alternates with A
  PrometheusEncoder enc{{}, Dev};
  std::string out;
  std::shared_ptr<const TextRope> rope;
  size_t batch = 1;
  std::vector<double> ms;  // per encode, one per round
  size_t bytes = 0;

  void EncodeOnce(const Snapshot& s) {
    if (kept) {
      enc.EncodeKept(s, ExpositionFormat::kText004, &rope);
      bytes = rope->size;
    } else {
      enc.Encode(s, ExpositionFormat::kText004, &out);
      bytes = out.size();
    }
  }
};

int Main(int argc, char** argv) {
  size_t pods = 250;
  int rounds = 15;
  std::string json, only;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--pods" && i + 1 < argc) pods = std::strtoul(argv[++i], nullptr, 10);
    if (a == "--rounds" && i + 1 < argc) rounds = std::atoi(argv[++i]);
    if (a == "--json" && i + 1 < argc) json = argv[++i];
    if (a == "--only" && i + 1 < argc) only = argv[++i];  // one side alone, for a profiler
  }
  const Snapshot a = testing::MakeNodeSnapshot({.pods = pods, .containers_per_pod = 3, .with_bpf = true});
  Snapshot b10 = a, ball = a, same = a;
  b10.sequence = ball.sequence = same.sequence = a.sequence + 1;
  Mover(1, 10).Move(&b10);
  Mover(2, 1).Move(&ball);

  std::string ta, t10, tall;
  {
    PrometheusEncoder enc({}, Dev);
    enc.Encode(a, ExpositionFormat::kText004, &ta);
    enc.Encode(b10, ExpositionFormat::kText004, &t10);
    enc.Encode(ball, ExpositionFormat::kText004, &tall);
  }
  size_t series = 0;
  const double share10 = ChangedShare(ta, t10, &series), share_all = ChangedShare(ta, tall, &series);
  std::printf("containers=%zu cgroups=%zu series=%zu bytes=%zu changed_10=%.1f%% changed_all=%.1f%%\n", pods * 4,
              a.cgroups.size(), series, ta.size(), share10 * 100, share_all * 100);

  std::vector<std::unique_ptr<Side>> sides;
  for (auto [name, kept, other] :
       {std::tuple{"full_10", false, &b10}, std::tuple{"kept_10", true, &b10}, std::tuple{"full_all", false, &ball},
        std::tuple{"kept_all", true, &ball}, std::tuple{"kept_0", true, &same}}) {
    auto s = std::make_unique<Side>();
    s->name = name;
    s->kept = kept;
    s->other = other;
    // Warm up, then size a batch to about 40 ms.
    for (int k = 0; k < 4; ++k) s->EncodeOnce(k % 2 ? *other : a);
    const int64_t t0 = bench::ThreadCpuNs();
    for (int k = 0; k < 4; ++k) s->EncodeOnce(k % 2 ? *other : a);
    const double per = static_cast<double>(bench::ThreadCpuNs() - t0) / 4;
    s->batch = std::max<size_t>(2, static_cast<size_t>(40e6 / per) / 2 * 2);
    sides.push_back(std::move(s));
  }

  if (!only.empty()) {
    for (auto& s : sides) {
      if (s->name != only) continue;
      for (int r = 0; r < rounds * 20; ++r) s->EncodeOnce(r % 2 ? *s->other : a);
      return 0;
    }
    return 2;
  }
  std::vector<double> ratio10, ratio_all, ratio0;
  bool same_work = true;
  for (int r = 0; r < rounds; ++r) {
    double round_ms[5] = {};
    for (size_t k = 0; k < sides.size(); ++k) {
      Side& s = *sides[(k + static_cast<size_t>(r)) % sides.size()];
      const int64_t t0 = bench::ThreadCpuNs();
      for (size_t n = 0; n < s.batch; ++n) s.EncodeOnce(n % 2 ? *s.other : a);
      const double ms = static_cast<double>(bench::ThreadCpuNs() - t0) / 1e6 / static_cast<double>(s.batch);
      s.ms.push_back(ms);
      round_ms[(k + static_cast<size_t>(r)) % sides.size()] = ms;
      // The same work: after A (even batches end on the other snapshot), one more of A, whose
      // text must be the full encode's.
      s.EncodeOnce(a);
      const std::string text = s.kept ? s.rope->ToString() : s.out;
      if (text != ta) {
        std::fprintf(stderr, "round %d side %s: text differs from the full encode of A\n", r, s.name);
        same_work = false;
      }
    }
    ratio10.push_back(round_ms[1] / round_ms[0]);
    ratio_all.push_back(round_ms[3] / round_ms[2]);
    ratio0.push_back(round_ms[4] / round_ms[0]);
  }

  std::string js = "{\"containers\":" + std::to_string(pods * 4) + ",\"cgroups\":" + std::to_string(a.cgroups.size()) +
                   ",\"series\":" + std::to_string(series) + ",\"bytes\":" + std::to_string(ta.size()) +
                   ",\"changed_10\":" + std::to_string(share10) + ",\"changed_all\":" + std::to_string(share_all) +
                   ",\"rounds\":" + std::to_string(rounds) + ",\"sides\":[";
  for (size_t k = 0; k < sides.size(); ++k) {
    const Side& s = *sides[k];
    const bench::Spread sp = bench::SpreadOf(s.ms);
    std::printf("side=%s ms_p50=%.3f ms_min=%.3f ms_max=%.3f bytes=%zu batch=%zu\n", s.name, sp.median, sp.min, sp.max,
                s.bytes, s.batch);
    char buf[256];
    std::snprintf(buf, sizeof buf, "%s{\"side\":\"%s\",\"ms_p50\":%.4f,\"ms_min\":%.4f,\"ms_max\":%.4f,\"bytes\":%zu}",
                  k ? "," : "", s.name, sp.median, sp.min, sp.max, s.bytes);
    js += buf;
  }
  const bench::Spread r10 = bench::SpreadOf(ratio10), rall = bench::SpreadOf(ratio_all), r0 = bench::SpreadOf(ratio0);
  std::printf("ratio=kept/full changed=10%% p50=%.3f min=%.3f max=%.3f (target <= 0.30)\n", r10.median, r10.min,
              r10.max);
  std::printf("ratio=kept/full changed=all p50=%.3f min=%.3f max=%.3f (target <= 1.00)\n", rall.median, rall.min,
              rall.max);
  std::printf("ratio=kept/full changed=0 p50=%.3f min=%.3f max=%.3f (the floor)\n", r0.median, r0.min, r0.max);
  // The kept state after the 10% side's last encode (of A).
  const PrometheusEncoder::KeptStats st = sides[1]->enc.kept_stats();
  std::printf(
      "kept_memory text_live=%zu text_chunks=%zu text_spare=%zu index=%zu label_combinations=%zu output=%zu "
      "(cap: chunks <= 2 x live + 2 chunks; nothing kept past 512 MiB of text)\n",
      st.text_live_bytes, st.text_chunk_bytes, st.text_spare_bytes, st.index_bytes, st.label_combinations, ta.size());
  // And after the all-moved side's (its families rendered whole: their text lives one encode).
  const PrometheusEncoder::KeptStats all = sides[3]->enc.kept_stats();
  std::printf("kept_memory_all_moved text_live=%zu text_chunks=%zu text_spare=%zu index=%zu\n", all.text_live_bytes,
              all.text_chunk_bytes, all.text_spare_bytes, all.index_bytes);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "],\"ratio_10\":{\"p50\":%.4f,\"min\":%.4f,\"max\":%.4f},"
                "\"ratio_all\":{\"p50\":%.4f,\"min\":%.4f,\"max\":%.4f},"
                "\"ratio_0\":{\"p50\":%.4f,\"min\":%.4f,\"max\":%.4f},"
                "\"kept\":{\"text_live\":%zu,\"text_chunks\":%zu,\"text_spare\":%zu,\"index\":%zu,"
                "\"label_combinations\":%zu},"
                "\"kept_all\":{\"text_live\":%zu,\"text_chunks\":%zu,\"text_spare\":%zu,\"index\":%zu},"
                "\"same_work\":%s}",
                r10.median, r10.min, r10.max, rall.median, rall.min, rall.max, r0.median, r0.min, r0.max,
                st.text_live_bytes, st.text_chunk_bytes, st.text_spare_bytes, st.index_bytes, st.label_combinations,
                all.text_live_bytes, all.text_chunk_bytes, all.text_spare_bytes, all.index_bytes,
                same_work ? "true" : "false");
  js += buf;
  if (!json.empty()) std::ofstream(json) << js << "\n";
  return same_work ? 0 : 1;
}

}  // namespace
}  // namespace statlet

int main(int argc, char** argv) { return statlet::Main(argc, argv); }
