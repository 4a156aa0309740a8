// EncodeKept, which renders again only the segments whose values or labels changed, must
// write byte for byte what a fresh encoder's Encode writes: a seeded churn of values,
// cgroups, labels, interfaces, devices and events, compared at every step in text 0.0.4,
// OpenMetrics and gzip; a rope handed out stays what it was while later encodes run.
#include <gtest/gtest.h>

#include <random>

#include "exporters/gzip_compressor.h"
#include "exporters/prometheus_encoder.h"
#include "tests/prometheus/test_snapshots.h"

namespace statlet {
namespace {

std::string FakeDevice(uint32_t major, uint32_t minor) {
  return "/dev/d" + std::to_string(major) + "_" + std::to_string(minor);
}

std::string Fresh(const Snapshot& s, ExpositionFormat f, metrics::SampleRules rules = {}) {
  PrometheusEncoder enc(std::move(rules), FakeDevice);
  std::string out;
  enc.Encode(s, f, &out);
  return out;
}

// One step of churn: a tenth of the values move, and now and then cgroups come and go, are
// relabelled, gain or lose interfaces, devices, drop reasons, OOM events, or a value.
class Churn {
 public:
  explicit Churn(uint32_t seed) : rng_(seed) {}

  void Step(Snapshot* s) {
    s->sequence++;
    s->timestamp_ns += 15'000'000'000;
    for (CgroupStats& c : s->cgroups) {
      if (Chance(10)) *c.cpu.usage_ns += Below(5'000'000'000);
      if (Chance(10) && c.cpu.user_ns) *c.cpu.user_ns += Below(1'000'000);
      if (Chance(10) && c.memory.usage_bytes) *c.memory.usage_bytes += 4096 * Below(100);
      if (Chance(10) && c.memory.psi.some) c.memory.psi.some->avg10 = static_cast<double>(Below(10000)) / 100;
      if (Chance(10) && !c.io.devices.empty() && c.io.devices[0].read_bytes) *c.io.devices[0].read_bytes += 512;
      if (Chance(10) && !c.bpf.runq_latency_log2_us.empty()) c.bpf.runq_latency_log2_us[Below(6) + 1] += 3;
      if (Chance(30)) c.bpf.tcp_retransmits = *c.bpf.tcp_retransmits + 1;
      if (Chance(40)) c.memory.swap_bytes = c.memory.swap_bytes ? Opt<uint64_t>() : Opt<uint64_t>(uint64_t{4096});
      if (Chance(40)) {  // a second device, or one less
        if (c.io.devices.size() == 1) {
          IoDeviceStats d = c.io.devices[0];
          d.minor = 16;
          c.io.devices.push_back(d);
        } else if (c.io.devices.size() > 1) {
          c.io.devices.pop_back();
        }
      }
      if (Chance(30) && c.io.devices.size() > 1) c.io.devices[1].minor ^= 32;  // another device, same values
      if (Chance(30) && c.bpf.tcp_drop_reasons.size() > 1) {                   // another reason, same count
        const auto last = std::prev(c.bpf.tcp_drop_reasons.end());
        const uint64_t n = last->second;
        c.bpf.tcp_drop_reasons.erase(last);
        c.bpf.tcp_drop_reasons["reason-" + std::to_string(Below(5))] = n;
      }
      if (Chance(40)) {  // drop reasons change
        if (c.bpf.tcp_drop_reasons.empty()) {
          c.bpf.tcp_drop_reasons = {{"NO_SOCKET", Below(9)}, {"reason-" + std::to_string(Below(5)), 1}};
        } else {
          c.bpf.tcp_drop_reasons.clear();
        }
      }
      if (Chance(60) && c.id.meta && !c.id.meta->is_sandbox) {  // relabelled: a new image
        auto m = std::make_shared<ContainerMetadata>(*c.id.meta);
        m->image = "registry.example/app:2." + std::to_string(Below(9));
        c.id.meta = m;
      }
      if (Chance(30) && c.id.meta) {  // metadata republished with stats only (the writable layer)
        auto m = std::make_shared<ContainerMetadata>(*c.id.meta);
        m->writable_layer.timestamp_ns = s->timestamp_ns;
        m->writable_layer.device = "/dev/vda1";
        m->writable_layer.used_bytes = Below(1 << 20);
        m->writable_layer.capacity_bytes = uint64_t{1} << 34;
        c.id.meta = m;
      }
    }
    for (auto& [inode, ns] : s->netns) {
      for (NetInterfaceStats& itf : ns.interfaces) {
        if (Chance(10)) itf.rx_bytes += 1500 * Below(10);
      }
      if (Chance(20) && ns.interfaces.size() > 2) ns.interfaces[2].name = Chance(2) ? "eth1" : "net1";  // renamed
      if (Chance(40)) {  // an interface comes or goes
        if (ns.interfaces.size() == 2) {
          ns.interfaces.push_back({"eth1", Below(100), 1, 0, 0, 7, 1, 0, 0});
        } else if (ns.interfaces.size() > 2) {
          ns.interfaces.pop_back();
        }
      }
    }
    if (Chance(5) && s->cgroups.size() > 10) {  // a container goes (and maybe comes back later)
      const size_t i = 4 + Below(s->cgroups.size() - 5);
      gone_.push_back(s->cgroups[i]);
      s->cgroups.erase(s->cgroups.begin() + static_cast<std::ptrdiff_t>(i));
    }
    if (Chance(8) && !gone_.empty()) {
      CgroupStats back = gone_.back();
      gone_.pop_back();
      back.id.cgroup_id += 100000;  // a new cgroup under the old path
      auto at = std::lower_bound(
          s->cgroups.begin(), s->cgroups.end(), back,
          [](const CgroupStats& a, const CgroupStats& b) { return a.id.cgroup_path < b.id.cgroup_path; });
      s->cgroups.insert(at, std::move(back));
    }
    if (Chance(10) && !s->recent_ooms.empty()) s->recent_ooms.erase(s->recent_ooms.begin());
  }

  void AllValues(Snapshot* s) {
    s->sequence++;
    for (CgroupStats& c : s->cgroups) {
      if (c.cpu.usage_ns) *c.cpu.usage_ns += 1 + Below(1000);
      if (c.memory.usage_bytes) *c.memory.usage_bytes += 4096;
    }
  }

 private:
  bool Chance(uint32_t one_in) { return rng_() % one_in == 0; }
  uint64_t Below(uint64_t n) { return rng_() % n; }

  std::mt19937 rng_;
  std::vector<CgroupStats> gone_;
};

std::string Kept(PrometheusEncoder& enc, const Snapshot& s, ExpositionFormat f) {
  std::shared_ptr<const TextRope> rope;
  enc.EncodeKept(s, f, &rope);
  EXPECT_EQ(rope->ToString().size(), rope->size);
  return rope->ToString();
}

TEST(PrometheusEncoderKept, ChurnGivesTheTextOfAFreshEncoderAtEveryStep) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 16, .containers_per_pod = 3, .with_bpf = true});
  // Small chunks: many of them, retired, reused and evacuated as the churn goes.
  PrometheusEncoder enc({}, FakeDevice, 8 * 1024);
  Churn churn(7);
  uint64_t whole = 0;  // families rendered whole after every value of theirs moved
  for (int step = 0; step < 80; ++step) {
    if (step % 17 == 16) {
      churn.AllValues(&s);
    } else if (step > 0) {
      churn.Step(&s);
    }
    for (ExpositionFormat f : {ExpositionFormat::kText004, ExpositionFormat::kOpenMetrics100}) {
      ASSERT_EQ(Kept(enc, s, f), Fresh(s, f)) << "step " << step << " format " << static_cast<int>(f);
      whole += enc.kept_stats().families_whole;
    }
    // Dead text stays bounded: at most as much as is live (chunks at least half live),
    // plus two chunks.
    const auto st = enc.kept_stats();
    EXPECT_LE(st.text_chunk_bytes, 2 * st.text_live_bytes + 2 * 8 * 1024 + 8 * 1024) << "step " << step;
  }
  EXPECT_GT(whole, 0u);
}

TEST(PrometheusEncoderKept, LabelChurnKeepsTheLabelCombinationsBounded) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 8, .containers_per_pod = 3, .with_bpf = true});
  PrometheusEncoder enc({}, FakeDevice);
  size_t most = 0;
  for (int step = 0; step < 40; ++step) {
    s.sequence++;
    int n = 0;
    for (CgroupStats& c : s.cgroups)
      c.bpf.tcp_drop_reasons = {{"r" + std::to_string(step) + "-" + std::to_string(n++), 1}};
    ASSERT_EQ(Kept(enc, s, ExpositionFormat::kText004), Fresh(s, ExpositionFormat::kText004)) << "step " << step;
    most = std::max(most, enc.kept_stats().label_combinations);
  }
  // Every step brings a new reason per cgroup (40 steps x 40 cgroups): the table starts over
  // instead of keeping them all.
  EXPECT_LT(most, 40u * 40u / 2);
}

TEST(PrometheusEncoderKept, CapsAndPerCpuRulesToo) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 6, .containers_per_pod = 2, .num_cpus = 4, .with_bpf = true});
  const metrics::SampleRules rules{.per_cpu = true, .max_cgroups = 15, .max_interfaces = 2};
  PrometheusEncoder enc(rules, FakeDevice);
  Churn churn(11);
  for (int step = 0; step < 40; ++step) {
    if (step > 0) churn.Step(&s);
    ASSERT_EQ(Kept(enc, s, ExpositionFormat::kText004), Fresh(s, ExpositionFormat::kText004, rules)) << "step " << step;
  }
}

TEST(PrometheusEncoderKept, QuietScrapesSpliceAndRenderOnlyWhatChanged) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 20, .containers_per_pod = 3});
  PrometheusEncoder enc({}, FakeDevice);
  Kept(enc, s, ExpositionFormat::kText004);
  const auto first = enc.kept_stats();
  EXPECT_EQ(first.series_spliced, 0u);
  s.sequence++;
  *s.cgroups[5].cpu.usage_ns += 1;  // one value of one cgroup
  EXPECT_EQ(Kept(enc, s, ExpositionFormat::kText004), Fresh(s, ExpositionFormat::kText004));
  const auto quiet = enc.kept_stats();
  EXPECT_EQ(quiet.series_rendered, 1u);
  EXPECT_GT(quiet.series_spliced, 1000u);
  EXPECT_EQ(quiet.series_rendered + quiet.series_spliced, first.series_rendered);
  // The other format shares the segments: nothing renders again.
  EXPECT_EQ(Kept(enc, s, ExpositionFormat::kOpenMetrics100), Fresh(s, ExpositionFormat::kOpenMetrics100));
  EXPECT_EQ(enc.kept_stats().series_rendered, 0u);
  EXPECT_GE(enc.kept_stats().text_live_bytes, Fresh(s, ExpositionFormat::kText004).size() * 9 / 10);
}

TEST(PrometheusEncoderKept, AHandedOutRopeStaysWhatItWas) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 10, .containers_per_pod = 3});
  PrometheusEncoder enc({}, FakeDevice);
  Churn churn(3);
  std::vector<std::pair<std::shared_ptr<const TextRope>, std::string>> held;
  for (int step = 0; step < 30; ++step) {
    if (step > 0) churn.Step(&s);
    std::shared_ptr<const TextRope> rope;
    enc.EncodeKept(s, ExpositionFormat::kText004, &rope);
    held.emplace_back(rope, rope->ToString());
    if (held.size() > 4) held.erase(held.begin());  // responses finish, out of order of nothing
    for (const auto& [r, text] : held) ASSERT_EQ(r->ToString(), text) << "step " << step;
  }
}

TEST(PrometheusEncoderKept, GzipOfTheRopeIsTheGzipOfTheText) {
  Snapshot s = testing::MakeNodeSnapshot({.pods = 10, .containers_per_pod = 3});
  PrometheusEncoder enc({}, FakeDevice);
  Churn churn(5);
  GzipCompressor kept_gz(1), fresh_gz(1);
  for (int step = 0; step < 20; ++step) {
    if (step > 0) churn.Step(&s);
    std::shared_ptr<const TextRope> rope;
    enc.EncodeKept(s, ExpositionFormat::kText004, &rope);
    std::string a, b, tail_a, tail_b;
    ASSERT_TRUE(kept_gz.CompressHead(rope->pieces, &a).ok());
    ASSERT_TRUE(kept_gz.FinishTail("# EOF\n", &tail_a).ok());
    ASSERT_TRUE(fresh_gz.CompressHead(Fresh(s, ExpositionFormat::kText004), &b).ok());
    ASSERT_TRUE(fresh_gz.FinishTail("# EOF\n", &tail_b).ok());
    ASSERT_GT(rope->pieces.size(), 1u);
    ASSERT_EQ(a + tail_a, b + tail_b) << "step " << step;
  }
}

}  // namespace
}  // namespace statlet
