// The kubelet's settings (one configuration file per case), how statlet judges by them,
// re-reading the file when it changes, quantities, and pods as the API server writes them.
#include <gtest/gtest.h>
#include <unistd.h>

#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "collector/memory_qos_rules.h"
#include "kube/kubelet_config.h"
#include "kube/kubelet_settings.h"
#include "kube/pod_resources.h"
#include "kube/pod_watch.h"
#include "kube/quantity.h"
#include "tests/support/byte_units.h"

namespace statlet::kube {
namespace {

using testing::kMi;
const std::string kDir = STATLET_KUBE_TEST_DIR;

std::string Read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

KubeletConfigRead Config(const std::string& name) {
  KubeletConfigRead c;
  c.path = kDir + "/kubelet-config/" + name;
  auto facts = ParseKubeletConfig(Read(c.path));
  EXPECT_TRUE(facts.ok()) << name << ": " << facts.status().ToString();
  c.state = KubeletConfigRead::State::kRead;
  if (facts.ok()) c.facts = *facts;
  return c;
}

MemoryQosBasis Judge(const std::string& config, const std::string& version, MemoryQosFlags flags = {}) {
  return JudgeMemoryQos(flags, Config(config), version, 4096);
}

TEST(Quantity, ParsesWhatTheApiServerWrites) {
  struct Row {
    const char* text;
    std::optional<uint64_t> bytes;
  };
  const Row rows[] = {
      {"128Mi", 128 * kMi},
      {"1Gi", 1024 * kMi},
      {"0.5Gi", 512 * kMi},
      {"1.5Gi", 1536 * kMi},
      {"1G", 1000000000},
      {"129M", 129000000},
      {"1k", 1000},
      {"1Ki", 1024},
      {"134217728", 134217728},
      {"129e6", 129000000},
      {"1E3", 1000},
      {"1E", 1000000000000000000},
      {"128974848000m", 128974848},
      {"1m", 1},  // rounded up to a whole byte
      {"0", 0},
      {"+5", 5},
      {".5Ki", 512},
      {"", std::nullopt},
      {"Mi", std::nullopt},
      {"-1Mi", std::nullopt},
      {"1MiB", std::nullopt},
      {"1.2.3", std::nullopt},
      {"12x", std::nullopt},
      {"99999999999999999999999", std::nullopt},
  };
  for (const Row& r : rows) EXPECT_EQ(ParseQuantity(r.text), r.bytes) << r.text;
  EXPECT_EQ(ParseQuantity("2Ei"), uint64_t{2} << 60);
  EXPECT_EQ(ParseQuantity("16Ei"), std::nullopt);
}

TEST(KubeletConfig, EachCaseFile) {
  KubeletConfigFacts off = Config("gate-off.yaml").facts;
  EXPECT_EQ(off.memory_qos_gate, false);
  EXPECT_FALSE(off.throttling_factor);
  EXPECT_FALSE(off.reservation_policy);
  KubeletConfigFacts null = Config("factor-null.yaml").facts;
  EXPECT_EQ(null.memory_qos_gate, true);
  EXPECT_FALSE(null.throttling_factor);
  EXPECT_EQ(Config("factor-0.8.yaml").facts.throttling_factor, 0.8);
  EXPECT_EQ(Config("none.yaml").facts.reservation_policy, "None");
  EXPECT_EQ(Config("tiered.yaml").facts.reservation_policy, "TieredReservation");
  EXPECT_EQ(Config("json.json").facts.reservation_policy, "TieredReservation");
  EXPECT_TRUE(Config("tiered.yaml").facts.warnings.empty());
  // What is not a KubeletConfiguration, or has fields of the wrong type.
  EXPECT_FALSE(ParseKubeletConfig("- a\n- b\n").ok());
  EXPECT_FALSE(ParseKubeletConfig("featureGates: [MemoryQoS]\n").ok());
  EXPECT_FALSE(ParseKubeletConfig("memoryThrottlingFactor: lots\n").ok());
  EXPECT_FALSE(ParseKubeletConfig("featureGates: {MemoryQoS: perhaps}\n").ok());
  EXPECT_FALSE(ParseKubeletConfig("a: [\n").ok());
  EXPECT_TRUE(ParseKubeletConfig("").ok());  // an empty file sets nothing
  auto odd = ParseKubeletConfig("kind: Pod\nmemoryThrottlingFactor: 1.5\n");
  ASSERT_TRUE(odd.ok());
  EXPECT_EQ(odd->warnings.size(), 2u);
}

// One configuration file per case, judged as each kubelet version would apply it.
TEST(JudgeMemoryQos, EachCaseFileByVersion) {
  using P = MemoryReservationPolicy;
  // Gate off: nothing applies in any version.
  for (const char* v : {"v1.27.3", "v1.36.1", "v1.37.0"}) {
    MemoryQosBasis b = Judge("gate-off.yaml", v);
    EXPECT_FALSE(b.rules.Applies()) << v;
    EXPECT_EQ(b.gate_source, KubeletSettingSource::kConfigFile);
    EXPECT_STREQ(MemoryQosRulesLabel(b.rules), "off");
  }
  // Factor null: the version's default — 0.9 up to v1.36, none from v1.37.
  MemoryQosBasis n136 = Judge("factor-null.yaml", "v1.36.1");
  EXPECT_EQ(n136.rules.throttling_factor, 0.9);
  EXPECT_EQ(n136.factor_source, KubeletSettingSource::kDefault);
  EXPECT_EQ(n136.rules.reservation, P::kNone);
  MemoryQosBasis n137 = Judge("factor-null.yaml", "v1.37.2");
  EXPECT_FALSE(n137.rules.throttling_factor);
  EXPECT_TRUE(n137.rules.Applies());
  EXPECT_EQ(Judge("factor-null.yaml", "v1.22.4").rules.throttling_factor, 0.8);
  EXPECT_EQ(Judge("factor-null.yaml", "v1.30.0").rules.reservation, P::kMinForEveryRequest);
  // Factor 0.8: in every version.
  for (const char* v : {"v1.22.0", "v1.27.1", "v1.36.0", "v1.37.0"}) {
    MemoryQosBasis b = Judge("factor-0.8.yaml", v);
    EXPECT_EQ(b.rules.throttling_factor, 0.8) << v;
    EXPECT_EQ(b.factor_source, KubeletSettingSource::kConfigFile);
  }
  // None and TieredReservation: v1.36 and later; earlier kubelets know no policy.
  EXPECT_EQ(Judge("none.yaml", "v1.36.0").rules.reservation, P::kNone);
  EXPECT_EQ(Judge("none.yaml", "v1.36.0").reservation_source, KubeletSettingSource::kConfigFile);
  MemoryQosBasis t136 = Judge("tiered.yaml", "v1.36.0");
  EXPECT_EQ(t136.rules.reservation, P::kTieredReservation);
  EXPECT_EQ(t136.rules.generation, MemoryQosGeneration::kV1_36);
  EXPECT_TRUE(t136.rules.Applies());
  EXPECT_EQ(t136.version_source, KubeletSettingSource::kApiServer);
  EXPECT_TRUE(t136.note.empty()) << t136.note;
  MemoryQosBasis t127 = Judge("tiered.yaml", "v1.27.0");
  EXPECT_EQ(t127.rules.reservation, P::kMinForEveryRequest);
  EXPECT_NE(t127.note.find("predates"), std::string::npos) << t127.note;
  // The v1.37 defaults with no file at all.
  KubeletConfigRead absent;
  absent.path = "/nonexistent/config.yaml";
  absent.state = KubeletConfigRead::State::kAbsent;
  MemoryQosBasis d = JudgeMemoryQos({}, absent, "v1.37.0", 4096);
  EXPECT_TRUE(d.rules.Applies());
  EXPECT_FALSE(d.rules.throttling_factor);
  EXPECT_EQ(d.rules.reservation, P::kNone);
  EXPECT_EQ(d.gate_source, KubeletSettingSource::kDefault);
  EXPECT_NE(d.note.find("no kubelet configuration"), std::string::npos);
  EXPECT_EQ(d.config_state, "absent");
}

TEST(JudgeMemoryQos, FlagsOverrideTheFileAndTheVersionComesFirstFromTheApiServer) {
  MemoryQosFlags f;
  f.kubelet_version = "v1.36.0";
  f.feature_gate = true;
  f.throttling_factor_set = true;  // "none"
  f.reservation = MemoryReservationPolicy::kNone;
  MemoryQosBasis b = Judge("tiered.yaml", "", f);
  EXPECT_EQ(b.kubelet_version, "v1.36.0");
  EXPECT_EQ(b.version_source, KubeletSettingSource::kFlag);
  EXPECT_FALSE(b.rules.throttling_factor);
  EXPECT_EQ(b.factor_source, KubeletSettingSource::kFlag);
  EXPECT_EQ(b.rules.reservation, MemoryReservationPolicy::kNone);
  EXPECT_EQ(b.reservation_source, KubeletSettingSource::kFlag);
  MemoryQosBasis gate = Judge("gate-off.yaml", "v1.36.0", f);
  EXPECT_TRUE(gate.rules.enabled);
  EXPECT_EQ(gate.gate_source, KubeletSettingSource::kFlag);
  // The Node object's version wins over the flag's.
  MemoryQosBasis api = Judge("tiered.yaml", "v1.37.1", f);
  EXPECT_EQ(api.kubelet_version, "v1.37.1");
  EXPECT_EQ(api.rules.generation, MemoryQosGeneration::kV1_37);
}

TEST(JudgeMemoryQos, SaysWhyNothingIsJudged) {
  MemoryQosBasis none = Judge("tiered.yaml", "");
  EXPECT_EQ(none.rules.generation, MemoryQosGeneration::kUnknown);
  EXPECT_NE(none.note.find("version is unknown"), std::string::npos);
  EXPECT_NE(DescribeBasis(none).find("nothing judged"), std::string::npos);
  EXPECT_EQ(Judge("tiered.yaml", "garbage").rules.generation, MemoryQosGeneration::kUnknown);
  KubeletConfigRead bad;
  bad.path = "/etc/kubelet.yaml";
  bad.state = KubeletConfigRead::State::kError;
  bad.error = "not YAML";
  MemoryQosBasis e = JudgeMemoryQos({}, bad, "v1.36.0", 4096);
  EXPECT_EQ(e.rules.generation, MemoryQosGeneration::kUnknown);
  EXPECT_EQ(e.config_state, "error: not YAML");
  KubeletConfigRead odd = Config("tiered.yaml");
  odd.facts.reservation_policy = "HardReservation";
  EXPECT_EQ(JudgeMemoryQos({}, odd, "v1.36.0", 4096).rules.generation, MemoryQosGeneration::kUnknown);
  // A v1.38 kubelet: judged by v1.37's rules, and said so.
  MemoryQosBasis b138 = Judge("tiered.yaml", "v1.38.0");
  EXPECT_EQ(b138.rules.generation, MemoryQosGeneration::kV1_37);
  EXPECT_TRUE(b138.beyond_known);
  EXPECT_NE(b138.note.find("no upstream facts beyond v1.37"), std::string::npos);
  // v1.37 refuses factor or policy with the gate off.
  KubeletConfigRead refused = Config("gate-off.yaml");
  refused.facts.throttling_factor = 0.9;
  EXPECT_NE(JudgeMemoryQos({}, refused, "v1.37.0", 4096).note.find("refuses"), std::string::npos);
  EXPECT_EQ(JudgeMemoryQos({}, refused, "v1.36.0", 4096).note.find("refuses"), std::string::npos);
  EXPECT_STREQ(MemoryQosRulesLabel(Judge("tiered.yaml", "v1.21.0").rules), "off");
}

// The file is read again when it changes, and only then.
TEST(KubeletSettings, RereadsTheFileWhenItChanges) {
  const std::string dir = ::testing::TempDir() + "/kubelet-settings-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/config.yaml";
  MemoryQosFlags f;
  f.kubelet_config = path;
  f.kubelet_version = "v1.36.1";
  KubeletSettings settings(f, 4096);
  auto absent = settings.Current("");
  EXPECT_EQ(absent->config_state, "absent");
  EXPECT_EQ(absent->rules.reservation, MemoryReservationPolicy::kNone);
  EXPECT_EQ(settings.Current(""), absent);  // nothing changed: the same basis

  std::filesystem::copy_file(kDir + "/kubelet-config/tiered.yaml", path);
  auto tiered = settings.Current("");
  EXPECT_EQ(tiered->config_state, "read");
  EXPECT_EQ(tiered->config_file, path);
  EXPECT_EQ(tiered->rules.reservation, MemoryReservationPolicy::kTieredReservation);
  EXPECT_TRUE(tiered->rules.enabled);
  EXPECT_EQ(settings.Current(""), tiered);

  // Rewritten in place (same inode): size and mtime tell.
  std::ofstream(path, std::ios::trunc) << Read(kDir + "/kubelet-config/factor-0.8.yaml");
  auto factor = settings.Current("");
  EXPECT_EQ(factor->rules.throttling_factor, 0.8);
  EXPECT_EQ(factor->rules.reservation, MemoryReservationPolicy::kNone);
  // Replaced by a rename (a new inode).
  std::ofstream(dir + "/new.yaml") << Read(kDir + "/kubelet-config/gate-off.yaml");
  std::filesystem::rename(dir + "/new.yaml", path);
  EXPECT_FALSE(settings.Current("")->rules.enabled);
  // The API server's version arriving re-judges.
  EXPECT_EQ(settings.Current("v1.37.0")->rules.generation, MemoryQosGeneration::kV1_37);
  std::ofstream(path, std::ios::trunc) << "a: [\n";
  EXPECT_EQ(settings.Current("v1.37.0")->rules.generation, MemoryQosGeneration::kUnknown);
  std::filesystem::remove_all(dir);
}

TEST(PodResources, BurstableWithSidecarInitContainersAndOverhead) {
  auto spec = PodMemorySpecFromJson(nlohmann::json::parse(Read(kDir + "/pods/burstable.json")));
  ASSERT_TRUE(spec.ok()) << spec.status().ToString();
  EXPECT_EQ(spec->uid, "5f2b7c1e-8a3d-4e6f-9b0c-1d2e3f4a5b6c");
  EXPECT_EQ(spec->qos, QosClass::kBurstable);
  ASSERT_EQ(spec->containers.size(), 4u);  // app, logger, cpu-only and the sidecar
  const ContainerMemorySpec& app = spec->containers[0];
  EXPECT_EQ(app.name, "app");
  EXPECT_EQ(app.container_id, std::string(64, 'a'));
  EXPECT_EQ(app.request, 300 * kMi);  // what the kubelet applied (status), not the spec's 256Mi
  EXPECT_EQ(app.limit, 512 * kMi);
  EXPECT_EQ(spec->containers[1].container_id, std::string(64, 'b'));
  EXPECT_EQ(spec->containers[1].request, 128 * kMi);  // defaulted to its limit
  EXPECT_EQ(spec->containers[2].request, 0u);
  EXPECT_EQ(spec->containers[2].container_id, "");
  EXPECT_EQ(spec->containers[3].name, "proxy");
  EXPECT_EQ(spec->containers[3].request, 64 * kMi);
  // max(300 + 128 + 0 + 64 sidecar, the 1Gi init container) + 10Mi overhead.
  EXPECT_EQ(spec->request, 1034 * kMi);

  auto g = PodMemorySpecFromJson(nlohmann::json::parse(Read(kDir + "/pods/guaranteed.json")));
  ASSERT_TRUE(g.ok());
  EXPECT_EQ(g->qos, QosClass::kGuaranteed);
  EXPECT_EQ(g->containers[0].request, 1000000000u);
  EXPECT_EQ(g->request, 2048 * kMi);  // pod-level requests

  EXPECT_FALSE(PodMemorySpecFromJson(nlohmann::json::parse(R"({"metadata": {}})")).ok());
  EXPECT_FALSE(PodMemorySpecFromJson(nlohmann::json::parse(
                                         R"({"metadata": {"uid": "u"}, "spec": {"containers": [{"name": "a",
                      "resources": {"requests": {"memory": "lots"}}}]}})"))
                   .ok());
  EXPECT_EQ(RuntimeContainerId("containerd://abc"), "abc");
  EXPECT_EQ(RuntimeContainerId("abc"), "abc");
}

TEST(PodResources, FindByIdOrName) {
  PodMemorySpecs specs;
  PodMemorySpec& p = specs.by_uid["u1"];
  p.uid = "u1";
  p.containers = {{"app", "id-1", 1, 2}, {"side", "", 3, 4}};
  specs.uid_by_container_id["id-1"] = "u1";
  EXPECT_EQ(specs.Find("id-1", "", "")->request, 1u);
  EXPECT_EQ(specs.Find("id-9", "u1", "side")->request, 3u);
  EXPECT_EQ(specs.Find("", "u1", "app")->limit, 2u);
  EXPECT_EQ(specs.Find("id-9", "u2", "app"), nullptr);
  EXPECT_EQ(specs.Find("id-9", "u1", ""), nullptr);
}

TEST(PodWatch, QueryEscapeAndNodeNames) {
  EXPECT_EQ(QueryEscape("spec.nodeName=node-1"), "spec.nodeName%3Dnode-1");
  EXPECT_EQ(QueryEscape("eyJ2Ijo+/="), "eyJ2Ijo%2B%2F%3D");
  PodWatchOptions o;
  o.api.url = "http://127.0.0.1:1";
  for (const char* bad : {"", "Node_1", "a/b", "a b"}) {
    o.node_name = bad;
    EXPECT_FALSE(PodWatch::Create(o).ok()) << bad;
  }
  o.node_name = "node-1.example";
  EXPECT_TRUE(PodWatch::Create(o).ok());
  o.api.url = "ftp://x";
  EXPECT_FALSE(PodWatch::Create(o).ok());
}

}  // namespace
}  // namespace statlet::kube
