// The API server as the Memory QoS view's request source, against a local stand-in that
// serves pods and nodes per the API's JSON (tests/kube/apiserver_pods_stub.py; no API server
// runs on these machines): the node-scoped list in pages, a watch that follows changes, is
// cut and resumes from its last resourceVersion, outlives a restart of the server, and lists
// again on 410 Gone. Then the statlet daemon over a cgroup v2 tree laid out as a v1.36
// TieredReservation kubelet writes it, its requests taken from the stand-in.
#include <gtest/gtest.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>

#include <nlohmann/json.hpp>

#include <fstream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>
#include <string>

#include "kube/pod_watch.h"
#include "tests/collector/fixture_tree.h"
#include "tests/support/byte_units.h"
#include "tests/support/child_process.h"
#include "tests/support/wait_for.h"

namespace statlet::kube {
namespace {

using Json = nlohmann::json;
using statlet::testing::WaitFor;
using namespace std::chrono_literals;

using testing::kMi;

Json Pod(const std::string& uid, const std::string& node, const std::string& request, const std::string& limit,
         const std::string& qos = "Burstable", const std::string& container_id = "") {
  Json c = {{"name", "app"}, {"image", "app:1"}, {"resources", {{"requests", {{"memory", request}}}}}};
  if (!limit.empty()) c["resources"]["limits"] = {{"memory", limit}};
  Json status = {{"phase", "Running"}, {"qosClass", qos}};
  if (!container_id.empty()) {
    status["containerStatuses"] = Json::array({{{"name", "app"}, {"containerID", "containerd://" + container_id}}});
  }
  return {{"apiVersion", "v1"},
          {"kind", "Pod"},
          {"metadata", {{"name", "pod-" + uid}, {"namespace", "default"}, {"uid", uid}}},
          {"spec", {{"nodeName", node}, {"containers", Json::array({c})}}},
          {"status", status}};
}

// The stand-in, run as a child process; restartable on the same port with the same state.
class Stub {
 public:
  explicit Stub(const std::string& dir) : dir_(dir) {}
  ~Stub() { Kill(); }
  void Seed(const std::vector<Json>& pods) {
    Json state = {{"rv", 10},
                  {"pods", Json::object()},
                  {"history", Json::array()},
                  {"compacted", 0},
                  {"kubelet_version", "v1.36.2"}};
    for (const Json& p : pods) state["pods"][p["metadata"]["uid"].get<std::string>()] = p;
    std::ofstream(dir_ + "/state.json") << state.dump();
  }
  bool Start() {
    const std::string port_file = dir_ + "/port";
    ::unlink(port_file.c_str());
    std::vector<std::string> argv = {"/usr/bin/python3", STATLET_PODS_STUB, "serve", dir_, port_file};
    if (port_ != 0) argv.push_back(std::to_string(port_));
    pid_ = statlet::testing::SpawnLogged(argv, dir_ + "/stub.log");
    if (!WaitFor([&] { return !statlet::testing::ReadWholeFile(port_file).empty(); }, 20s)) return false;
    port_ = std::stoi(statlet::testing::ReadWholeFile(port_file));
    return true;
  }
  void Kill() {
    if (pid_ > 0) {
      ::kill(pid_, SIGKILL);
      ::waitpid(pid_, nullptr, 0);
      pid_ = -1;
    }
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }
  bool Post(const std::string& path, const std::string& body = "") {
    httplib::Client c(url());
    c.set_read_timeout(10s);
    auto r = c.Post(path.c_str(), body, "application/json");
    return r && r->status == 200;
  }
  // The API requests logged so far, each {"path", "query"}.
  std::vector<Json> Requests() const {
    std::vector<Json> out;
    std::istringstream in(statlet::testing::ReadWholeFile(dir_ + "/requests.log"));
    for (std::string line; std::getline(in, line);) {
      if (!line.empty()) out.push_back(Json::parse(line));
    }
    return out;
  }

 private:
  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

uint64_t RequestOf(const PodWatch& w, const std::string& uid) {
  auto specs = const_cast<PodWatch&>(w).Current();
  const PodMemorySpec* p = specs->Pod(uid);
  return p == nullptr ? 0 : p->request;
}

TEST(PodWatchLive, ListsWatchesResumesAndListsAgainOnGone) {
  statlet::testing::TempDir dir;
  Stub stub(dir.path());
  stub.Seed({Pod("u1", "node-1", "100Mi", "200Mi"), Pod("u2", "node-1", "300Mi", "300Mi", "Guaranteed"),
             Pod("u3", "node-1", "64Mi", ""), Pod("other", "node-2", "1Gi", "")});
  ASSERT_TRUE(stub.Start());

  PodWatchOptions o;
  o.api.url = stub.url();
  o.node_name = "node-1";
  o.page_size = 2;  // three pods: two pages
  o.min_backoff = 20ms;
  o.max_backoff = 200ms;
  auto created = PodWatch::Create(o);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  PodWatch& w = **created;
  w.Start();

  // The list: this node's pods only, in pages; the Node's kubelet version.
  ASSERT_TRUE(WaitFor([&] { return w.Current()->by_uid.size() == 3 && !w.Current()->kubelet_version.empty(); }, 20s))
      << w.State().detail;
  EXPECT_EQ(w.Current()->kubelet_version, "v1.36.2");
  EXPECT_EQ(RequestOf(w, "u1"), 100 * kMi);
  EXPECT_EQ(w.Current()->Pod("u2")->qos, QosClass::kGuaranteed);
  EXPECT_EQ(w.Current()->Pod("other"), nullptr);
  EXPECT_TRUE(w.State().up);
  int list_pages = 0;
  for (const Json& r : stub.Requests()) {
    if (r["path"] != "/api/v1/pods" || r["query"].contains("watch")) continue;
    EXPECT_EQ(r["query"]["fieldSelector"], "spec.nodeName=node-1");
    ++list_pages;
  }
  EXPECT_EQ(list_pages, 2);

  // The watch follows additions, changes and deletions (and ignores other nodes).
  ASSERT_TRUE(stub.Post("/control/pod", Pod("u4", "node-1", "50Mi", "").dump()));
  ASSERT_TRUE(stub.Post("/control/pod", Pod("far", "node-2", "50Mi", "").dump()));
  ASSERT_TRUE(stub.Post("/control/pod", Pod("u1", "node-1", "150Mi", "200Mi").dump()));
  ASSERT_TRUE(stub.Post("/control/delete?uid=u3"));
  ASSERT_TRUE(WaitFor([&] { return RequestOf(w, "u1") == 150 * kMi && !w.Current()->Pod("u3"); }, 20s));
  EXPECT_EQ(RequestOf(w, "u4"), 50 * kMi);
  EXPECT_EQ(w.Current()->Pod("far"), nullptr);
  const uint64_t lists = w.counters().lists;
  EXPECT_EQ(lists, 1u);

  // The watch is cut mid-stream: resumed from the last version seen, no new list.
  auto watches_from = [&] {
    std::vector<std::string> rvs;
    for (const Json& r : stub.Requests()) {
      if (r["path"] == "/api/v1/pods" && r["query"].value("watch", "") == "true") {
        rvs.push_back(r["query"]["resourceVersion"]);
      }
    }
    return rvs;
  };
  const size_t watches_before = watches_from().size();
  ASSERT_TRUE(stub.Post("/control/break"));
  ASSERT_TRUE(WaitFor([&] { return watches_from().size() > watches_before; }, 20s));
  EXPECT_EQ(watches_from().back(), "14");  // seeded at 10, then four changes
  ASSERT_TRUE(stub.Post("/control/pod", Pod("u5", "node-1", "70Mi", "").dump()));
  ASSERT_TRUE(WaitFor([&] { return RequestOf(w, "u5") == 70 * kMi; }, 20s));
  EXPECT_EQ(w.counters().lists, lists);

  // The server restarts (same port, same state): the watch resumes once it answers again.
  stub.Kill();
  ASSERT_TRUE(WaitFor([&] { return !w.State().up; }, 20s));
  ASSERT_TRUE(stub.Start());
  ASSERT_TRUE(stub.Post("/control/pod", Pod("u6", "node-1", "80Mi", "").dump()));
  ASSERT_TRUE(WaitFor([&] { return RequestOf(w, "u6") == 80 * kMi; }, 30s)) << w.State().detail;
  EXPECT_EQ(w.counters().lists, lists);
  EXPECT_TRUE(WaitFor([&] { return w.State().up; }, 20s));

  // History compacted while the watch is cut: 410 Gone, then a new list.
  ASSERT_TRUE(stub.Post("/control/compact"));
  ASSERT_TRUE(stub.Post("/control/break"));
  ASSERT_TRUE(WaitFor([&] { return w.counters().gone >= 1 && w.counters().lists == lists + 1; }, 20s));
  ASSERT_TRUE(stub.Post("/control/delete?uid=u4"));
  ASSERT_TRUE(WaitFor([&] { return !w.Current()->Pod("u4"); }, 20s));
  EXPECT_EQ(w.Current()->by_uid.size(), 4u);  // u1, u2, u5, u6
  w.Stop();
}

// ------------------------------------------------------------------ the daemon

// One /metrics sample: name, labels, value.
struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

std::vector<Sample> ParseExposition(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    const size_t brace = line.find('{'), space = line.rfind(' ');
    s.name = line.substr(0, std::min(brace, space));
    if (brace != std::string::npos) {
      const std::string body = line.substr(brace + 1, line.rfind('}') - brace - 1);
      size_t i = 0;
      while (i < body.size()) {
        const size_t eq = body.find("=\"", i), end = body.find('"', eq + 2);
        s.labels[body.substr(i, eq - i)] = body.substr(eq + 2, end - eq - 2);
        i = end + 2;  // past '",'
      }
    }
    const std::string v = line.substr(space + 1);
    s.value = v == "+Inf" ? std::numeric_limits<double>::infinity() : std::stod(v);
    out.push_back(std::move(s));
  }
  return out;
}

std::optional<double> Find(const std::vector<Sample>& samples, const std::string& name,
                           const std::map<std::string, std::string>& labels) {
  for (const Sample& s : samples) {
    if (s.name != name) continue;
    bool match = true;
    for (const auto& [k, v] : labels) {
      auto it = s.labels.find(k);
      match &= it != s.labels.end() && it->second == v;
    }
    if (match) return s.value;
  }
  return std::nullopt;
}

std::string Hex64(char c) { return std::string(64, c); }

// A cgroup v2 tree as a v1.36 kubelet with TieredReservation and factor 0.9 leaves it (4 KiB
// pages): a Guaranteed pod (256Mi), a Burstable pod (request 128Mi, limit 512Mi), a
// BestEffort pod, under a 4Gi kubepods; no runtime, so every request comes from the API
// server's pods.
TEST(PodWatchLive, DaemonJudgesV136TieredReservationByTheApiServersPods) {
  using statlet::testing::WriteFile;
  statlet::testing::TempDir root, api;
  const std::string g_uid = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", b_uid = "5f2b7c1e-8a3d-4e6f-9b0c-1d2e3f4a5b6c",
                    e_uid = "3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f";
  auto under = [](std::string uid) {
    for (char& c : uid) c = c == '-' ? '_' : c;
    return uid;
  };
  const std::string kp = "/kubepods.slice", bu = kp + "/kubepods-burstable.slice",
                    be = kp + "/kubepods-besteffort.slice", gp = kp + "/kubepods-pod" + under(g_uid) + ".slice",
                    gc = gp + "/cri-containerd-" + Hex64('a') + ".scope",
                    bp = bu + "/kubepods-burstable-pod" + under(b_uid) + ".slice",
                    bc = bp + "/cri-containerd-" + Hex64('b') + ".scope",
                    ep = be + "/kubepods-besteffort-pod" + under(e_uid) + ".slice",
                    ec = ep + "/cri-containerd-" + Hex64('e') + ".scope";
  struct Knobs {
    std::string min = "0", low = "0", high = "max", max = "max", current = "0";
  };
  const std::map<std::string, Knobs> tree = {
      {kp, {"402653184", "0", "max", "4294967296", "209715200"}},
      {bu, {"0", "134217728", "max", "max", "67108864"}},
      {be, {}},
      {gp, {"268435456", "0", "max", "268435456", "104857600"}},
      {gc, {"268435456", "0", "max", "268435456", "104857600"}},
      {bp, {"0", "134217728", "max", "536870912", "67108864"}},
      {bc, {"0", "134217728", "496603136", "536870912", "67108864"}},  // 128 + 0.9 × 384 MiB, in pages
      {ep, {}},
      {ec, {"0", "0", "max", "max", "1048576"}},
  };
  WriteFile(root.path() + "/cgroup.controllers", "cpu io memory pids\n");
  WriteFile(root.path() + "/cgroup.procs", "");
  for (const auto& [path, k] : tree) {
    const std::string d = root.path() + path;
    statlet::testing::MakeDirs(d);
    WriteFile(d + "/cgroup.procs", "");
    WriteFile(d + "/memory.min", k.min + "\n");
    WriteFile(d + "/memory.low", k.low + "\n");
    WriteFile(d + "/memory.high", k.high + "\n");
    WriteFile(d + "/memory.max", k.max + "\n");
    WriteFile(d + "/memory.current", k.current + "\n");
  }
  Stub stub(api.path());
  stub.Seed({Pod(g_uid, "node-1", "256Mi", "256Mi", "Guaranteed", Hex64('a')),
             Pod(b_uid, "node-1", "128Mi", "512Mi", "Burstable", Hex64('b')), [&] {
               Json p = Pod(e_uid, "node-1", "0", "", "BestEffort", Hex64('e'));
               p["spec"]["containers"][0].erase("resources");
               return p;
             }()});
  ASSERT_TRUE(stub.Start());
  const int port = statlet::testing::FreeLoopbackPort();
  statlet::testing::BinaryProcess daemon(
      {STATLET_BINARY, "--web.listen-address=127.0.0.1:" + std::to_string(port),
       "--collector.cgroup-root=" + root.path(), "--collector.network=false", "--collector.process-fds=false",
       "--cri.listen=", "--runtime.endpoint=none", "--bpf=off", "--memory-qos.apiserver=" + stub.url(),
       "--memory-qos.node-name=node-1",
       std::string("--memory-qos.kubelet-config=") + STATLET_KUBE_TEST_DIR + "/kubelet-config/tiered.yaml"},
      api.path() + "/statlet.log");
  httplib::Client client("127.0.0.1", port);
  client.set_read_timeout(10s);
  std::vector<Sample> m;
  // Scraped until the pods from the API server have been judged.
  ASSERT_TRUE(WaitFor(
      [&] {
        auto r = client.Get("/metrics");
        if (!r || r->status != 200) return false;
        m = ParseExposition(r->body);
        return Find(m, "statlet_node_memory_qos_low_bytes", {}).has_value();
      },
      30s))
      << statlet::testing::ReadWholeFile(api.path() + "/statlet.log");

  EXPECT_EQ(Find(m, "statlet_node_memory_qos_info",
                 {{"id", kp},
                  {"kubelet_version", "v1.36.2"},
                  {"reservation_policy", "TieredReservation"},
                  {"rules", "v1.36"},
                  {"throttling_factor", "0.9"}}),
            1.0);
  EXPECT_EQ(Find(m, "statlet_node_memory_qos_min_bytes", {{"id", kp}}), 268435456.0);
  EXPECT_EQ(Find(m, "statlet_node_memory_qos_low_bytes", {{"id", kp}}), 134217728.0);
  // Expected equals what the kubelet wrote, knob by knob, at every level; memory.high only on
  // containers.
  auto knob_value = [](const std::string& v) {
    return v == "max" ? std::numeric_limits<double>::infinity() : std::stod(v);
  };
  for (const auto& [path, k] : tree) {
    EXPECT_EQ(Find(m, "statlet_container_memory_qos_expected_bytes", {{"id", path}, {"knob", "min"}}),
              knob_value(k.min))
        << path;
    EXPECT_EQ(Find(m, "statlet_container_memory_qos_expected_bytes", {{"id", path}, {"knob", "low"}}),
              knob_value(k.low))
        << path;
    const bool container = path == gc || path == bc || path == ec;
    EXPECT_EQ(Find(m, "statlet_container_memory_qos_expected_bytes", {{"id", path}, {"knob", "high"}}),
              container ? std::optional<double>(knob_value(k.high)) : std::nullopt)
        << path;
  }
  EXPECT_EQ(Find(m, "statlet_container_memory_qos_request_bytes", {{"id", bc}, {"source", "apiserver"}}), 134217728.0);
  EXPECT_EQ(Find(m, "statlet_container_memory_qos_request_bytes", {{"id", gc}, {"source", "apiserver"}}), 268435456.0);
  // kubepods passes no memory.low down in v1.36: the Burstable tier is capped; the
  // Guaranteed memory.min holds.
  for (const std::string& p : {bu, bp, bc}) {
    EXPECT_EQ(Find(m, "statlet_memory_protection_capped", {{"id", p}, {"knob", "low"}}), 1.0) << p;
  }
  EXPECT_EQ(Find(m, "statlet_memory_protection_capped", {{"id", gc}, {"knob", "min"}}), 0.0);
  EXPECT_EQ(Find(m, "statlet_memory_protection_capped", {{"id", gp}, {"knob", "min"}}), 0.0);
  EXPECT_EQ(Find(m, "statlet_container_memory_qos_zone", {{"id", gc}, {"zone", "below_request"}}), 1.0);
  EXPECT_EQ(Find(m, "statlet_container_memory_qos_zone", {{"id", bc}, {"zone", "above_request"}}), 1.0);
  EXPECT_EQ(Find(m, "statlet_container_memory_qos_applied", {{"id", bc}}), 1.0);
  EXPECT_EQ(Find(m, "statlet_node_memory_qos_protected_ratio", {{"id", kp}, {"knob", "min"}}),
            402653184.0 / 4294967296.0);
  EXPECT_EQ(daemon.Stop(), 0);
}

}  // namespace
}  // namespace statlet::kube
