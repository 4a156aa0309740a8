// The daemon's machine families against this host's own files, read here independently: the
// online CPUs of /sys/devices/system/cpu, MemTotal of /proc/meminfo, machine-id and boot_id;
// on /metrics and /metrics/cadvisor alike, parsed by promtool; and left out (with nothing
// read) when --metrics.disable names their groups.
#include <dirent.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "tests/prometheus/promtool.h"
#include "tests/support/http_client.h"
#include "tests/support/statlet_daemon.h"

namespace statlet {
namespace {

using std::chrono::milliseconds;

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  std::string out = s.str();
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// The online CPUs as `nproc --all` would count them when none is offline: the cpuN
// directories of /sys/devices/system/cpu that the `online` list names.
uint64_t OnlineCpuDirs() {
  std::vector<bool> online;
  std::stringstream list(ReadFile("/sys/devices/system/cpu/online"));
  std::string range;
  while (std::getline(list, range, ',')) {
    const size_t dash = range.find('-');
    const unsigned lo = std::stoul(range.substr(0, dash));
    const unsigned hi = dash == std::string::npos ? lo : std::stoul(range.substr(dash + 1));
    if (online.size() <= hi) online.resize(hi + 1);
    for (unsigned c = lo; c <= hi; ++c) online[c] = true;
  }
  uint64_t n = 0;
  DIR* d = opendir("/sys/devices/system/cpu");
  while (const dirent* e = d ? readdir(d) : nullptr) {
    const std::string name = e->d_name;
    if (name.size() < 4 || name.rfind("cpu", 0) != 0 || name.find_first_not_of("0123456789", 3) != std::string::npos) {
      continue;
    }
    const unsigned id = std::stoul(name.substr(3));
    if (id < online.size() && online[id]) ++n;
  }
  if (d) closedir(d);
  return n;
}

uint64_t MemTotalBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  uint64_t kb = 0;
  std::string unit;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return 0;
}

// The one sample line of `family` (labels and value), or nothing.
std::optional<std::string> SampleLine(const std::string& body, const std::string& family) {
  std::istringstream in(body);
  std::string line;
  std::optional<std::string> found;
  while (std::getline(in, line)) {
    if (line.rfind(family + "{", 0) == 0 || line.rfind(family + " ", 0) == 0) {
      if (found) return std::nullopt;  // more than one series
      found = line;
    }
  }
  return found;
}

std::string ValueOf(const std::string& line) { return line.substr(line.rfind(' ') + 1); }

std::string Scrape(const testing::Daemon& d, const std::string& path) {
  auto r = testing::TimedGet(d.port(), path, "", milliseconds(10000)).response;
  if (!r || r->status != 200) return "";
  return r->body;
}

TEST(MachineLive, CoresAndMemoryAsThisHostsFilesSayOnBothPaths) {
  testing::DaemonOptions o;
  o.wait_until_ready = true;
  testing::Daemon d(o);
  ASSERT_TRUE(d.ok()) << d.error();
  const uint64_t cpus = OnlineCpuDirs();
  const uint64_t mem = MemTotalBytes();
  ASSERT_GT(cpus, 0u);
  ASSERT_GT(mem, 0u);
  const std::string machine_id = ReadFile("/etc/machine-id");
  const std::string boot_id = ReadFile("/proc/sys/kernel/random/boot_id");
  std::printf("host: %llu online CPUs (sysconf NPROCESSORS_CONF %ld), MemTotal %llu bytes\n",
              static_cast<unsigned long long>(cpus), sysconf(_SC_NPROCESSORS_CONF),
              static_cast<unsigned long long>(mem));
  for (const char* path : {"/metrics", "/metrics/cadvisor"}) {
    SCOPED_TRACE(path);
    const std::string body = Scrape(d, path);
    ASSERT_FALSE(body.empty());
    const auto cores = SampleLine(body, "machine_cpu_cores");
    ASSERT_TRUE(cores.has_value()) << body.substr(0, 2000);
    std::printf("%s: %s\n", path, cores->c_str());
    EXPECT_EQ(ValueOf(*cores), std::to_string(cpus));
    const auto memory = SampleLine(body, "machine_memory_bytes");
    ASSERT_TRUE(memory.has_value());
    EXPECT_EQ(ValueOf(*memory), std::to_string(mem));
    if (!machine_id.empty()) {
      EXPECT_NE(cores->find("machine_id=\"" + machine_id + "\""), std::string::npos);
    }
    EXPECT_NE(cores->find("boot_id=\"" + boot_id + "\""), std::string::npos);
    const auto error = SampleLine(body, "machine_scrape_error");
    ASSERT_TRUE(error.has_value());
    EXPECT_EQ(*error, "machine_scrape_error 0");
    const testing::PromtoolResult check = testing::PromtoolCheckMetrics(body);
    EXPECT_TRUE(check.Parsed()) << check.output;
    EXPECT_TRUE(check.unexpected_findings.empty()) << check.output;
  }
}

TEST(MachineLive, DisabledGroupsLeaveThemOut) {
  testing::DaemonOptions o;
  o.wait_until_ready = true;
  o.flags = {"--metrics.disable=machine,cpu_topology"};
  testing::Daemon d(o);
  ASSERT_TRUE(d.ok()) << d.error();
  const std::string body = Scrape(d, "/metrics");
  ASSERT_FALSE(body.empty());
  EXPECT_EQ(body.find("\nmachine_"), std::string::npos);
  EXPECT_EQ(body.find("# HELP machine_"), std::string::npos);

  testing::DaemonOptions t;
  t.wait_until_ready = true;
  t.flags = {"--metrics.disable=cpu_topology"};
  testing::Daemon flat(t);
  ASSERT_TRUE(flat.ok()) << flat.error();
  const std::string b = Scrape(flat, "/metrics");
  EXPECT_NE(b.find("\nmachine_cpu_cores{"), std::string::npos);
  EXPECT_EQ(b.find("machine_thread_siblings_count"), std::string::npos);
}

}  // namespace
}  // namespace statlet
