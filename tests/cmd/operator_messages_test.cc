// What an operator reads when something is wrong, and what the daemon says when it starts:
// each message names what failed, the value, and the flag or file to change
// (docs/errors.md). The real binary, as the operator runs it: daemons on loopback ports and
// sockets of their own (tests/reliability/daemon_under_test.h), the CLI against them.
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "tests/support/child_process.h"
#include "tests/support/http_client.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/silent_unix_socket.h"
#include "tests/support/statlet_daemon.h"
#include "tests/support/wait_for.h"

namespace statlet::testing {
namespace {

struct Outcome {
  int code = -1;
  std::string out, err;
};

// Runs the statlet binary with `args`; its exit code, stdout and stderr.
Outcome Statlet(const std::vector<std::string>& args) {
  char dir[] = "/tmp/statlet-messages-XXXXXX";
  Outcome r;
  if (::mkdtemp(dir) == nullptr) return r;
  const std::string out = std::string(dir) + "/out", err = std::string(dir) + "/err";
  std::vector<std::string> argv = {StatletBinary()};
  argv.insert(argv.end(), args.begin(), args.end());
  std::string cmd;
  for (const std::string& a : argv) cmd += "'" + a + "' ";
  const int status = std::system((cmd + "</dev/null >" + out + " 2>" + err).c_str());
  r.code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  r.out = ReadWholeFile(out);
  r.err = ReadWholeFile(err);
  ::unlink(out.c_str());
  ::unlink(err.c_str());
  ::rmdir(dir);
  return r;
}

std::vector<std::string> Lines(const std::string& text, const std::string& containing) {
  std::vector<std::string> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.find(containing) != std::string::npos) out.push_back(line);
  }
  return out;
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// ------------------------------------------------------------------ the daemon starting

TEST(DaemonStart, OneSummaryLineSaysWhatItIsFoundAndServes) {
  Daemon d({.flags = {"--web.health-listen-address=127.0.0.1:0"}, .serve_cri = true});
  ASSERT_TRUE(d.ok()) << d.error();
  ASSERT_TRUE(WaitFor([&] { return !Lines(d.log(), "started:").empty(); }, std::chrono::seconds(10))) << d.log();
  const std::string log = d.log();
  const std::vector<std::string> started = Lines(log, "started:");
  ASSERT_EQ(started.size(), 1u) << log;
  const std::string& line = started[0];
  std::printf("figure: %s\n", line.c_str());
  const Outcome version = Statlet({"--version"});
  // "statlet 0.1.0 (revision abc1234)" is how the line begins, as --version prints it.
  EXPECT_TRUE(Has(line, version.out.substr(0, version.out.find('\n')) + " started:")) << line << "\n" << version.out;
  EXPECT_FALSE(Has(line, "revision unknown")) << line;
  EXPECT_TRUE(Has(line, "cgroup v2 at") || Has(line, "cgroup hybrid at") || Has(line, "cgroup v1 at")) << line;
  EXPECT_TRUE(Has(line, "runtime none (--runtime.endpoint=none)")) << line;
  EXPECT_TRUE(Has(line, "eBPF probes off (--bpf=off)")) << line;
  EXPECT_TRUE(Has(line, "serving http://127.0.0.1:" + std::to_string(d.port()) + "/metrics")) << line;
  EXPECT_TRUE(Has(line, "probes http://127.0.0.1:")) << line;
  EXPECT_FALSE(Has(line, "127.0.0.1:0")) << "the bound port, not the requested 0: " << line;
  EXPECT_TRUE(Has(line, "CRI unix://" + d.cri_socket())) << line;
  EXPECT_TRUE(Has(line, "image pulls off (--runtime.endpoint=none)")) << line;
  EXPECT_TRUE(Has(line, "OTLP off")) << line;
  // The serving line says where, once: no "(port N)" glued to the path.
  const std::vector<std::string> serving = Lines(log, "serving metrics on ");
  ASSERT_EQ(serving.size(), 1u) << log;
  EXPECT_TRUE(Has(serving[0], "http://127.0.0.1:" + std::to_string(d.port()) + "/metrics,")) << serving[0];
  EXPECT_FALSE(Has(serving[0], "(port ")) << serving[0];
}

TEST(DaemonStart, ProbesThatLoadAreNamedAndTheirFileNotesWaitForDebug) {
  // The eBPF probes as the daemon loads them by default; what they render and what the
  // kernel lacks is for whoever asks for debug.
  Daemon info({.flags = {"--bpf=auto"}});
  ASSERT_TRUE(info.ok()) << info.error();
  ASSERT_TRUE(WaitFor([&] { return !Lines(info.log(), "started:").empty(); }, std::chrono::seconds(20)));
  const std::string line = Lines(info.log(), "started:")[0];
  EXPECT_TRUE(Has(line, "eBPF probes ")) << line;
  EXPECT_FALSE(Has(line, "not selected")) << "probes left out by choice are no failure: " << line;
  for (const std::string& l : Lines(info.log(), "level=info")) {
    EXPECT_FALSE(Has(l, "from the eBPF cgroup iterator")) << "a file list at info level: " << l;
    EXPECT_FALSE(Has(l, "is read from cgroupfs")) << "a kernel note at info level: " << l;
    if (!Has(l, "started:")) {
      EXPECT_LT(l.size(), 300u) << l;
    }
  }
  if (Has(line, "cgroup_stats")) {
    Daemon debug({.flags = {"--bpf=auto", "--log.level=debug"}});
    ASSERT_TRUE(debug.ok()) << debug.error();
    ASSERT_TRUE(WaitFor([&] { return !Lines(debug.log(), "started:").empty(); }, std::chrono::seconds(20)));
    const std::vector<std::string> files = Lines(debug.log(), "from the eBPF cgroup iterator");
    ASSERT_EQ(files.size(), 1u) << debug.log();
    EXPECT_TRUE(Has(files[0], "level=debug")) << files[0];
    // Each file with its hierarchy: no name stands twice without saying which tree.
    EXPECT_FALSE(Has(files[0], "cpu.stat, ")) << files[0];
  }
}

TEST(DaemonStart, PortInUseNamesTheAddressAndFlagWithoutACodePrefix) {
  Daemon first;
  ASSERT_TRUE(first.ok()) << first.error();
  const std::string address = "127.0.0.1:" + std::to_string(first.port());
  Daemon second({.flags = {"--web.listen-address=" + address}, .wait_until_serving = false});
  ASSERT_TRUE(WaitFor([&] { return !second.running(); }, std::chrono::seconds(10))) << second.log();
  const std::vector<std::string> errors = Lines(second.log(), "level=error");
  ASSERT_EQ(errors.size(), 1u) << second.log();
  EXPECT_TRUE(Has(errors[0], "cannot listen on " + address + " (--web.listen-address): address already in use"))
      << errors[0];
  EXPECT_FALSE(Has(errors[0], "UNAVAILABLE")) << errors[0];
  EXPECT_EQ(WEXITSTATUS(second.Stop()), 1);
}

TEST(DaemonStart, BusyCriSocketStopsItBeforeAnyCollectionAndNamesTheFlag) {
  SilentUnixSocket busy("cri.sock");
  ASSERT_TRUE(busy.ok());
  Daemon d({.flags = {"--cri.listen=" + busy.path()}, .wait_until_serving = false});
  ASSERT_TRUE(WaitFor([&] { return !d.running(); }, std::chrono::seconds(10))) << d.log();
  const std::string log = d.log();
  const std::vector<std::string> errors = Lines(log, "level=error");
  ASSERT_EQ(errors.size(), 1u) << log;
  EXPECT_TRUE(Has(errors[0], busy.path())) << errors[0];
  EXPECT_TRUE(Has(errors[0], "--cri.listen")) << errors[0];
  EXPECT_TRUE(Has(errors[0], "accepts connections on it")) << errors[0];
  EXPECT_FALSE(Has(errors[0], "UNAVAILABLE")) << errors[0];
  // Before anything was served or collected.
  EXPECT_FALSE(Has(log, "serving metrics")) << log;
  EXPECT_FALSE(Has(log, "started:")) << log;
}

TEST(DaemonStart, ImagePullsRouteSaysWhyItIsOff) {
  Daemon d({.serve_cri = true});
  ASSERT_TRUE(d.ok()) << d.error();
  TimedResponse r = TimedGet(d.port(), "/imagepulls");
  ASSERT_TRUE(r.response.has_value());
  EXPECT_EQ(r.response->status, 404);
  EXPECT_TRUE(Has(r.response->body, "image pulls are off on this statlet (--runtime.endpoint=none)"))
      << r.response->body;
  Daemon off({.flags = {"--runtime.endpoint=", "--pull.enabled=false"}, .serve_cri = true});
  ASSERT_TRUE(off.ok()) << off.error();
  r = TimedGet(off.port(), "/imagepulls");
  ASSERT_TRUE(r.response.has_value());
  EXPECT_EQ(r.response->status, 404);
  EXPECT_TRUE(Has(r.response->body, "(--pull.enabled=false)")) << r.response->body;
}

// ------------------------------------------------------------------ statlet pull

TEST(PullCommand, WithoutAnImageSaysItIsMissing) {
  const Outcome r = Statlet({"pull"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "statlet pull: no image given")) << r.err;
  EXPECT_TRUE(Has(r.err, "e.g. statlet pull ")) << r.err;
}

TEST(PullCommand, WithoutADaemonAsksWhetherItRunsAndNamesTheFlag) {
  const Outcome r = Statlet({"pull", "--cri.endpoint", "unix:///tmp/statlet-messages-none/cri.sock", "busybox"});
  EXPECT_EQ(r.code, 1);
  EXPECT_TRUE(Has(r.err, "no socket at /tmp/statlet-messages-none/cri.sock")) << r.err;
  EXPECT_TRUE(Has(r.err, "Is the statlet daemon running?")) << r.err;
  EXPECT_TRUE(Has(r.err, "with --cri.endpoint")) << r.err;
  EXPECT_FALSE(Has(r.err, "failed to connect to all addresses")) << r.err;

  // The socket file a daemon that died leaves behind: bound, nobody listening.
  char dir[] = "/tmp/statlet-messages-XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  const std::string dead = std::string(dir) + "/cri.sock";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::snprintf(a.sun_path, sizeof a.sun_path, "%s", dead.c_str());
  ASSERT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ::close(fd);
  const Outcome refused = Statlet({"pull", "--cri.endpoint", "unix://" + dead, "busybox"});
  ::unlink(dead.c_str());
  ::rmdir(dir);
  EXPECT_EQ(refused.code, 1);
  EXPECT_TRUE(Has(refused.err, "nothing accepts connections on " + dead)) << refused.err;
  EXPECT_TRUE(Has(refused.err, "Is the statlet daemon running?")) << refused.err;
}

TEST(PullCommand, AgainstADaemonWithPullsOffSaysWhyNotAnEmptyReason) {
  Daemon d({.flags = {"--runtime.endpoint=", "--pull.enabled=false"}, .serve_cri = true});
  ASSERT_TRUE(d.ok()) << d.error();
  const Outcome r = Statlet({"pull", "--cri.endpoint", "unix://" + d.cri_socket(), "busybox"});
  EXPECT_EQ(r.code, 1);
  const std::vector<std::string> failed = Lines(r.err, "statlet pull busybox: failed: ");
  ASSERT_EQ(failed.size(), 1u) << r.err;
  EXPECT_FALSE(Has(failed[0] + "\n", "failed: \n")) << "an empty reason: " << r.err;
  EXPECT_TRUE(Has(failed[0], "does not serve image pulls")) << failed[0];
  EXPECT_TRUE(Has(failed[0], "--pull.enabled=false")) << failed[0];
  EXPECT_TRUE(Has(failed[0], "--cri.endpoint")) << failed[0];
}

// ------------------------------------------------------------------ statlet stats / top

TEST(StatsCommand, ACgroupThatDoesNotExistIsAnErrorNotAnEmptyTable) {
  const Outcome r = Statlet({"stats", "--interval", "0", "--cgroup", "/does/not/exist"});
  EXPECT_EQ(r.code, 1);
  EXPECT_EQ(r.out, "") << "a table was printed";
  EXPECT_TRUE(Has(r.err, "--cgroup /does/not/exist: no such cgroup in any hierarchy under /sys/fs/cgroup")) << r.err;
  const Outcome relative = Statlet({"stats", "--interval", "0", "--cgroup", "kubepods"});
  EXPECT_EQ(relative.code, 1);
  EXPECT_TRUE(Has(relative.err, "--cgroup kubepods: a cgroup path starts with '/'")) << relative.err;
  const Outcome top = Statlet({"top", "--cgroup", "/does/not/exist", "--iterations", "1"});
  EXPECT_EQ(top.code, 1);
  EXPECT_TRUE(Has(top.err, "statlet top: --cgroup /does/not/exist: no such cgroup")) << top.err;
}

// ------------------------------------------------------------------ one vocabulary

TEST(Vocabulary, OldSpellingsStillWorkWithANoticeNamingTheNewOne) {
  const Outcome r = Statlet({"stats", "--interval", "0", "--cgroup", "/", "--cgroup.mount", "/sys/fs/cgroup",
                             "--proc.root", "/proc", "--all", "-o", "json"});
  EXPECT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(Has(r.err, "statlet stats: --cgroup.mount is now --collector.cgroup-root")) << r.err;
  EXPECT_TRUE(Has(r.err, "statlet stats: --proc.root is now --collector.proc-root")) << r.err;
  EXPECT_TRUE(Has(r.err, "statlet stats: --all is now --collector.include-empty")) << r.err;
  EXPECT_TRUE(Has(r.out, "\"cgroups\"")) << "the old spellings did their job";
  // The daemon's names, as the daemon spells them, and no notice.
  const Outcome same = Statlet({"stats", "--interval", "0", "--collector.subtree", "/", "--collector.cgroup-root",
                                "/sys/fs/cgroup", "--collector.proc-root", "/proc", "--collector.include-empty"});
  EXPECT_EQ(same.code, 0) << same.err;
  EXPECT_EQ(same.err, "");
  const Outcome top = Statlet({"top", "--socket=", "--cgroup", "/", "--iterations", "1", "--interval", "100ms"});
  EXPECT_EQ(top.code, 0) << top.err;
  EXPECT_TRUE(Has(top.err, "statlet top: --socket is now --cri.endpoint")) << top.err;
  const Outcome pull = Statlet({"pull", "--endpoint", "unix:///tmp/statlet-messages-none/cri.sock", "busybox"});
  EXPECT_TRUE(Has(pull.err, "statlet pull: --endpoint is now --cri.endpoint")) << pull.err;
}

TEST(Vocabulary, UnknownFlagsSuggestTheNearestAndBadValuesAValidOne) {
  Outcome r = Statlet({"stats", "--cgrop", "/x"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "statlet stats: unknown flag --cgrop; did you mean --cgroup?")) << r.err;
  r = Statlet({"top", "--intreval", "1s"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "statlet top: unknown flag --intreval; did you mean --interval?")) << r.err;
  r = Statlet({"pull", "--granulrity", "size", "busybox"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "did you mean --granularity?")) << r.err;
  r = Statlet({"stats", "--cri.endpoint", "unix:///x", "--lable", "a=b"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "unknown flag --lable; did you mean --label?")) << r.err;
  r = Statlet({"--collector.maxage=1s"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "statlet: unknown flag --collector.maxage; did you mean --collector.max-age?")) << r.err;
  r = Statlet({"--collector.max-age=abc"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "statlet: --collector.max-age: expected a duration")) << r.err;
  EXPECT_TRUE(Has(r.err, "got \"abc\" (e.g. 2s)")) << r.err;
  r = Statlet({"stats", "-o", "xml"});
  EXPECT_EQ(r.code, 2);
  EXPECT_TRUE(Has(r.err, "--output xml: expected table, json or yaml")) << r.err;
}

// Bytes in binary units and headers that say what a column holds, in both of statlet stats'
// views: of this host's cgroups, and of a CRI endpoint (here the daemon's, over a
// kubepods-shaped container with 8 MiB of touched memory).
TEST(Vocabulary, EveryViewPrintsBinaryUnitsUnderHeadersThatSayWhat) {
  const std::string root = "/" + UniqueName("statlet-messages");
  const std::string uid = "2f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  const std::string id = "7e" + std::string(62, 'c');
  LiveCgroup top(root);
  LiveCgroup ctr(root + "/kubepods/besteffort/pod" + uid + "/" + id);
  ASSERT_TRUE(top.ok() && ctr.ok()) << ctr.error();
  Child holder([] {
    // Written through a volatile pointer: stores to a static nothing reads are otherwise
    // dropped by the optimiser, and the memory never touched.
    static char block[8 << 20];
    volatile char* touch = block;
    for (size_t i = 0; i < sizeof block; i += 4096) touch[i] = 1;
    return uint64_t{1};
  });
  ASSERT_TRUE(holder.StartIn(ctr));
  ASSERT_EQ(holder.Result(), std::optional<uint64_t>(1));

  const Outcome local = Statlet({"stats", "--interval", "0", "--cgroup", root});
  ASSERT_EQ(local.code, 0) << local.err;
  const std::string header = local.out.substr(0, local.out.find('\n'));
  EXPECT_TRUE(Has(header, "WORKING SET") && Has(header, "RX TOTAL") && !Has(header, " MEM ")) << header;

  Daemon d({.cgroup_subtree = root, .serve_cri = true});
  ASSERT_TRUE(d.ok()) << d.error();
  const Outcome cri = Statlet({"stats", "--cri.endpoint", "unix://" + d.cri_socket()});
  ASSERT_EQ(cri.code, 0) << cri.err;
  std::vector<std::string> lines = Lines(cri.out, "");
  ASSERT_GE(lines.size(), 2u) << cri.out;
  EXPECT_TRUE(Has(lines[0], "WORKING SET") && !Has(lines[0], " MEM ")) << lines[0];
  // The working set of 8 MiB touched, in the unit every view uses: MiB, never MB or kB.
  const std::vector<std::string> row = Lines(cri.out, id.substr(0, 13));
  ASSERT_EQ(row.size(), 1u) << cri.out;
  EXPECT_TRUE(Has(row[0], "MiB")) << row[0];
  EXPECT_FALSE(Has(row[0], "MB") || Has(row[0], "kB")) << row[0];
  const Outcome pods = Statlet({"stats", "--cri.endpoint", "unix://" + d.cri_socket(), "--pods"});
  ASSERT_EQ(pods.code, 0) << pods.err;
  EXPECT_TRUE(Has(Lines(pods.out, "POD")[0], "WORKING SET")) << pods.out;
}

}  // namespace
}  // namespace statlet::testing
