#include "cmd/cri_stats_view.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <thread>
#include <unordered_map>
#include <vector>

#include <google/protobuf/util/json_util.h>
#include <grpcpp/grpcpp.h>

#include "base/human_bytes.h"
#include "base/unix_socket.h"
#include "cmd/flag_suggest.h"
#include "cmd/structured_output.h"
#include "proto/api.grpc.pb.h"

namespace statlet {
namespace v1 = ::runtime::v1;
namespace {

const char kCriViewUsage[] =
    "usage: statlet stats --cri.endpoint unix:///PATH [--pods] [-o table|json|yaml]\n"
    "                     [--id ID] [--pod POD_ID] [--label KEY=VALUE]... [--timeout SECONDS]\n";

// Binary units, as every statlet view prints bytes (base/human_bytes.h).
std::string Human(uint64_t bytes) { return HumanBytes(static_cast<double>(bytes)); }

std::string Percent(double p) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.2f", p);
  return buf;
}

std::string Seconds(uint64_t ns) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.3fs", static_cast<double>(ns) / 1e9);
  return buf;
}

// A table with column widths taken from the content.
class Table {
 public:
  explicit Table(std::vector<std::string> header) { rows_.push_back(std::move(header)); }
  void Add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  void Print(std::ostream& out) const {
    std::vector<size_t> w(rows_[0].size(), 0);
    for (const auto& r : rows_) {
      for (size_t i = 0; i < r.size(); ++i) w[i] = std::max(w[i], r[i].size());
    }
    for (const auto& r : rows_) {
      std::string line;
      for (size_t i = 0; i < r.size(); ++i) {
        line += r[i];
        if (i + 1 < r.size()) line += std::string(w[i] - r[i].size() + 3, ' ');
      }
      out << line << "\n";
    }
  }

 private:
  std::vector<std::vector<std::string>> rows_;
};

int PrintStructured(const google::protobuf::Message& m, const std::string& format, std::ostream& out,
                    std::ostream& err) {
  std::string json;
  google::protobuf::util::JsonPrintOptions opts;
  opts.add_whitespace = true;
  opts.preserve_proto_field_names = false;
  auto st = google::protobuf::util::MessageToJsonString(m, &json, opts);
  if (!st.ok()) {
    err << "statlet stats: encoding JSON: " << st.ToString() << "\n";
    return 1;
  }
  if (format == "json") {
    out << json;
    return 0;
  }
  out << JsonAsYaml(json) << "\n";
  return 0;
}

std::string Short(const std::string& id) { return id.substr(0, 13); }

std::string CpuPercent(const v1::CpuUsage& cpu, const std::unordered_map<std::string, double>& fallback,
                       const std::string& id) {
  if (cpu.has_usage_nano_cores()) return Percent(static_cast<double>(cpu.usage_nano_cores().value()) / 1e7);
  auto it = fallback.find(id);
  return it == fallback.end() ? "-" : Percent(it->second);
}

// Per-id CPU % from two samples, for endpoints that leave usage_nano_cores empty.
template <typename Item, typename GetId, typename GetCpu>
std::unordered_map<std::string, double> CpuFromTwoSamples(const google::protobuf::RepeatedPtrField<Item>& a,
                                                          const google::protobuf::RepeatedPtrField<Item>& b,
                                                          GetId id_of, GetCpu cpu_of) {
  std::unordered_map<std::string, const v1::CpuUsage*> first;
  for (const auto& x : a) first[id_of(x)] = &cpu_of(x);
  std::unordered_map<std::string, double> out;
  for (const auto& y : b) {
    auto it = first.find(id_of(y));
    if (it == first.end()) continue;
    const v1::CpuUsage& c0 = *it->second;
    const v1::CpuUsage& c1 = cpu_of(y);
    if (!c0.has_usage_core_nano_seconds() || !c1.has_usage_core_nano_seconds()) continue;
    int64_t dt = c1.timestamp() - c0.timestamp();
    if (dt <= 0 || c1.usage_core_nano_seconds().value() < c0.usage_core_nano_seconds().value()) continue;
    double used = static_cast<double>(c1.usage_core_nano_seconds().value() - c0.usage_core_nano_seconds().value());
    out[id_of(y)] = used / static_cast<double>(dt) * 100.0;
  }
  return out;
}

std::string NetColumn(const v1::NetworkUsage& n, bool rx) {
  const NetworkTotals t = SumNetworkUsage(n);
  return Human(rx ? t.rx_bytes : t.tx_bytes);
}

int Fail(std::ostream& err, const char* call, const std::string& endpoint, const grpc::Status& s) {
  err << "statlet stats: " << call << " on " << endpoint << " failed: " << s.error_message() << " (gRPC code "
      << s.error_code() << ")";
  if (s.error_code() == grpc::StatusCode::UNAVAILABLE) err << "; is a CRI endpoint there? (--cri.endpoint)";
  err << "\n";
  return 1;
}

int ContainersView(v1::RuntimeService::Stub& stub, const CriStatsViewOptions& o, std::ostream& out, std::ostream& err) {
  v1::ListContainerStatsRequest req;
  req.mutable_filter()->set_id(o.id);
  req.mutable_filter()->set_pod_sandbox_id(o.pod);
  req.mutable_filter()->mutable_label_selector()->insert(o.labels.begin(), o.labels.end());
  auto call = [&](v1::ListContainerStatsResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + o.timeout);
    return stub.ListContainerStats(&ctx, req, resp);
  };
  v1::ListContainerStatsResponse resp;
  if (auto s = call(&resp); !s.ok()) return Fail(err, "ListContainerStats", o.endpoint, s);
  if (o.output != "table") return PrintStructured(resp, o.output, out, err);

  auto id_of = [](const v1::ContainerStats& c) -> const std::string& { return c.attributes().id(); };
  auto cpu_of = [](const v1::ContainerStats& c) -> const v1::CpuUsage& { return c.cpu(); };
  std::unordered_map<std::string, double> fallback;
  bool need_second = false, enhanced = false;
  for (const auto& c : resp.stats()) {
    need_second |= !c.cpu().has_usage_nano_cores();
    enhanced |= c.cpu().has_usage_kernel_nano_seconds() || c.has_process() || c.has_network();
  }
  if (need_second && resp.stats_size() > 0) {
    // Like crictl: a second sample one second later gives the rate.
    std::this_thread::sleep_for(std::chrono::seconds(1));
    v1::ListContainerStatsResponse second;
    if (call(&second).ok()) fallback = CpuFromTwoSamples(resp.stats(), second.stats(), id_of, cpu_of);
  }
  // crictl's columns, each saying what it holds: MEM is the working set, DISK and INODES the
  // writable layer's; then statlet's additions (CPU seconds since start, totals in bytes).
  std::vector<std::string> header = {"CONTAINER", "NAME", "CPU %", "WORKING SET", "WRITABLE LAYER", "INODES", "SWAP"};
  if (enhanced) header.insert(header.end(), {"KERNEL CPU", "USER CPU", "PROCS", "RX TOTAL", "TX TOTAL"});
  Table t(header);
  for (const auto& c : resp.stats()) {
    std::vector<std::string> row = {
        Short(c.attributes().id()),
        c.attributes().metadata().name(),
        CpuPercent(c.cpu(), fallback, id_of(c)),
        c.memory().has_working_set_bytes() ? Human(c.memory().working_set_bytes().value()) : "-",
        c.writable_layer().has_used_bytes() ? Human(c.writable_layer().used_bytes().value()) : "-",
        c.writable_layer().has_inodes_used() ? std::to_string(c.writable_layer().inodes_used().value()) : "-",
        c.swap().has_swap_usage_bytes() ? Human(c.swap().swap_usage_bytes().value()) : "-"};
    if (enhanced) {
      row.push_back(c.cpu().has_usage_kernel_nano_seconds() ? Seconds(c.cpu().usage_kernel_nano_seconds().value())
                                                            : "-");
      row.push_back(c.cpu().has_usage_user_nano_seconds() ? Seconds(c.cpu().usage_user_nano_seconds().value()) : "-");
      row.push_back(c.process().has_process_count() ? std::to_string(c.process().process_count().value()) : "-");
      row.push_back(c.has_network() ? NetColumn(c.network(), true) : "-");
      row.push_back(c.has_network() ? NetColumn(c.network(), false) : "-");
    }
    t.Add(std::move(row));
  }
  t.Print(out);
  return 0;
}

int PodsView(v1::RuntimeService::Stub& stub, const CriStatsViewOptions& o, std::ostream& out, std::ostream& err) {
  v1::ListPodSandboxStatsRequest req;
  req.mutable_filter()->set_id(!o.id.empty() ? o.id : o.pod);
  req.mutable_filter()->mutable_label_selector()->insert(o.labels.begin(), o.labels.end());
  auto call = [&](v1::ListPodSandboxStatsResponse* resp) {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + o.timeout);
    return stub.ListPodSandboxStats(&ctx, req, resp);
  };
  v1::ListPodSandboxStatsResponse resp;
  if (auto s = call(&resp); !s.ok()) return Fail(err, "ListPodSandboxStats", o.endpoint, s);
  if (o.output != "table") return PrintStructured(resp, o.output, out, err);

  auto id_of = [](const v1::PodSandboxStats& p) -> const std::string& { return p.attributes().id(); };
  auto cpu_of = [](const v1::PodSandboxStats& p) -> const v1::CpuUsage& { return p.linux().cpu(); };
  std::unordered_map<std::string, double> fallback;
  bool need_second = false, enhanced = false;
  for (const auto& p : resp.stats()) {
    need_second |= !p.linux().cpu().has_usage_nano_cores();
    enhanced |= p.linux().cpu().has_usage_kernel_nano_seconds();
  }
  if (need_second && resp.stats_size() > 0) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    v1::ListPodSandboxStatsResponse second;
    if (call(&second).ok()) fallback = CpuFromTwoSamples(resp.stats(), second.stats(), id_of, cpu_of);
  }
  std::vector<std::string> header = {"POD", "POD ID", "CPU %", "WORKING SET", "PROCS", "RX TOTAL", "TX TOTAL"};
  if (enhanced) header.insert(header.end(), {"KERNEL CPU", "USER CPU"});
  Table t(header);
  for (const auto& p : resp.stats()) {
    const auto& l = p.linux();
    std::string name = p.attributes().metadata().name();
    if (!p.attributes().metadata().namespace_().empty()) name = p.attributes().metadata().namespace_() + "/" + name;
    std::vector<std::string> row = {
        name.empty() ? "-" : name,
        Short(p.attributes().id()),
        CpuPercent(l.cpu(), fallback, id_of(p)),
        l.memory().has_working_set_bytes() ? Human(l.memory().working_set_bytes().value()) : "-",
        l.process().has_process_count() ? std::to_string(l.process().process_count().value()) : "-",
        l.has_network() ? NetColumn(l.network(), true) : "-",
        l.has_network() ? NetColumn(l.network(), false) : "-"};
    if (enhanced) {
      row.push_back(l.cpu().has_usage_kernel_nano_seconds() ? Seconds(l.cpu().usage_kernel_nano_seconds().value())
                                                            : "-");
      row.push_back(l.cpu().has_usage_user_nano_seconds() ? Seconds(l.cpu().usage_user_nano_seconds().value()) : "-");
    }
    t.Add(std::move(row));
  }
  t.Print(out);
  return 0;
}

}  // namespace

bool WantsCriStatsView(int argc, char** argv) {
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--cri.endpoint", 14) == 0) return true;
  }
  return false;
}

StatusOr<CriStatsViewOptions> ParseCriStatsViewArgs(int argc, char** argv) {
  CriStatsViewOptions o;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i == 0 && arg == "stats") continue;
    std::string value;
    bool has_inline = false;
    if (auto eq = arg.find('='); arg.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = arg.substr(eq + 1);
      arg = arg.substr(0, eq);
      has_inline = true;
    }
    auto next = [&]() -> StatusOr<std::string> {
      if (has_inline) return value;
      if (i + 1 >= argc) return InvalidArgument(arg + " needs a value");
      return std::string(argv[++i]);
    };
    if (arg == "--pods") {
      o.pods = true;
      continue;
    }
    static const std::vector<std::string> kFlags = {"--cri.endpoint", "--output",  "--id",  "--pod",
                                                    "--label",        "--timeout", "--pods"};
    if (arg != "-o" && std::find(kFlags.begin(), kFlags.end(), arg) == kFlags.end()) {
      const std::string near = NearestName(arg, kFlags);
      return InvalidArgument("unknown flag " + arg + (near.empty() ? "" : "; did you mean " + near + "?") +
                             " (with --cri.endpoint, statlet stats takes these)\n" + kCriViewUsage);
    }
    auto v = next();
    if (!v.ok()) return v.status();
    if (arg == "--cri.endpoint") {
      o.endpoint = *v;
    } else if (arg == "-o" || arg == "--output") {
      if (*v != "table" && *v != "json" && *v != "yaml") {
        return InvalidArgument("--output " + *v + ": expected table, json or yaml");
      }
      o.output = *v;
    } else if (arg == "--id") {
      o.id = *v;
    } else if (arg == "--pod") {
      o.pod = *v;
    } else if (arg == "--label") {
      auto eq = v->find('=');
      if (eq == std::string::npos || eq == 0) return InvalidArgument("--label wants KEY=VALUE, got \"" + *v + "\"");
      o.labels[v->substr(0, eq)] = v->substr(eq + 1);
    } else if (arg == "--timeout") {
      char* end = nullptr;
      double secs = std::strtod(v->c_str(), &end);
      if (end == v->c_str() || *end != '\0' || secs <= 0) {
        return InvalidArgument("--timeout " + *v + ": expected seconds above 0 (e.g. 10)");
      }
      o.timeout = std::chrono::milliseconds(static_cast<int64_t>(secs * 1000));
    }
  }
  if (o.endpoint.empty()) return InvalidArgument(std::string("--cri.endpoint is required\n") + kCriViewUsage);
  if (auto p = ParseUnixEndpoint(o.endpoint); !p.ok()) return p.status();
  return o;
}

int RunCriStatsView(const CriStatsViewOptions& o, std::ostream& out, std::ostream& err) {
  auto path = ParseUnixEndpoint(o.endpoint);
  if (!path.ok()) {
    err << "statlet stats: " << path.status().message() << "\n";
    return 2;
  }
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(256 << 20);
  auto channel = grpc::CreateCustomChannel("unix:" + *path, grpc::InsecureChannelCredentials(), args);
  auto stub = v1::RuntimeService::NewStub(channel);
  return o.pods ? PodsView(*stub, o, out, err) : ContainersView(*stub, o, out, err);
}

int RunCriStatsCommand(int argc, char** argv) {
  auto o = ParseCriStatsViewArgs(argc, argv);
  if (!o.ok()) {
    std::cerr << "statlet stats: " << o.status().message() << "\n";
    return 2;
  }
  return RunCriStatsView(*o, std::cout, std::cerr);
}

NetworkTotals SumNetworkUsage(const v1::NetworkUsage& n) {
  NetworkTotals t;
  auto add = [&](const v1::NetworkInterfaceUsage& i) {
    t.rx_bytes += i.rx_bytes().value();
    t.tx_bytes += i.tx_bytes().value();
  };
  if (n.has_default_interface()) add(n.default_interface());
  for (const auto& i : n.interfaces()) add(i);
  return t;
}

}  // namespace statlet
