// `statlet top` as a user runs it: the binary in a pseudo-terminal (a tmux pane of the
// test's own tmux server), collecting in-process from real cgroups of this machine that
// hold a CPU burner, a process holding 64 MiB and an idle one. The screen is read with
// capture-pane and driven with send-keys; the CPU % shown is checked against the kernel's
// own account of the burner's cgroup over the same window.
#include <signal.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/support/child_process.h"
#include "tests/support/live_cgroup.h"
#include "tests/support/statlet_daemon.h"
#include "tests/support/tmux_session.h"
#include "tests/support/wait_for.h"
#include "tests/support/workloads.h"

namespace statlet {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using testing::Child;
using testing::LiveCgroup;
using testing::UniqueName;
using testing::WaitFor;

// The test's own tmux server with one 160×40 session, "top", whose pane stays after top
// exits (remain-on-exit), so its final state can be read.
class Tmux : public testing::TmuxSession {
 public:
  Tmux() : TmuxSession(UniqueName("statlet-top"), "top") {}
  bool Start(const std::string& shell_command) { return TmuxSession::Start(shell_command, 160, 40, true); }
};

// One table row as the screen shows it: its name, nesting and cells left to right (CPU%,
// USR%, SYS%, WORKING SET, MEM LIMIT, THROTTLED%, RX/s, TX/s, CPU-PSI, MEM-PSI at 160 columns;
// the two-word labels are headers only, every cell is one word).
struct ScreenRow {
  std::string name;
  int depth = 0;
  std::vector<std::string> cells;
};
struct ParsedScreen {
  std::string title;
  std::vector<ScreenRow> rows;
  bool has_table = false;
};

ParsedScreen Parse(const std::string& screen) {
  ParsedScreen out;
  std::istringstream in(screen);
  std::string line;
  bool in_table = false;
  while (std::getline(in, line)) {
    if (line.rfind("statlet top", 0) == 0) out.title = line;
    if (!in_table) {
      in_table = line.rfind("NAME", 0) == 0 && line.find("CPU%") != std::string::npos;
      out.has_table |= in_table;
      continue;
    }
    if (line.empty() || line.rfind("...", 0) == 0) break;
    ScreenRow r;
    size_t spaces = line.find_first_not_of(' ');
    r.depth = static_cast<int>(spaces / 2);
    std::istringstream cells(line);
    cells >> r.name;
    std::string cell;
    while (cells >> cell) r.cells.push_back(cell);
    out.rows.push_back(std::move(r));
  }
  return out;
}

// The first of the test's cgroups on the screen (they sit under the test's root row).
std::string FirstChild(const ParsedScreen& s) {
  for (const ScreenRow& r : s.rows) {
    if (r.depth == 1) return r.name;
  }
  return "";
}

const ScreenRow* RowNamed(const ParsedScreen& s, const std::string& name) {
  for (const ScreenRow& r : s.rows) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

std::optional<double> Number(const std::string& cell) {
  char* end = nullptr;
  double v = std::strtod(cell.c_str(), &end);
  if (end == cell.c_str()) return std::nullopt;
  return v;
}

// "64.2MiB" -> bytes.
std::optional<double> Bytes(const std::string& cell) {
  char* end = nullptr;
  double v = std::strtod(cell.c_str(), &end);
  if (end == cell.c_str()) return std::nullopt;
  const std::string unit = end;
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  for (const char* u : units) {
    if (unit == u) return v;
    v *= 1024;
  }
  return std::nullopt;
}

// `statlet top ARGS` with its output in a pipe, then its exit code as "exit=N".
std::string PipedTop(const std::string& args) {
  return testing::CommandOutput({"sh", "-c", std::string(STATLET_BINARY) + " top " + args + "; echo exit=$?"});
}

constexpr size_t kHogBytes = 64 << 20;

class TopTerminal : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
    if (testing::RunCommand({"tmux", "-V"}) != 0) GTEST_SKIP() << "tmux is not installed (.ci/install-deps)";
    root_ = "/" + UniqueName("statlet-top");
    top_ = std::make_unique<LiveCgroup>(root_);
    burner_cg_ = std::make_unique<LiveCgroup>(root_ + "/burner");
    hog_cg_ = std::make_unique<LiveCgroup>(root_ + "/hog");
    idle_cg_ = std::make_unique<LiveCgroup>(root_ + "/idle");
    ASSERT_TRUE(top_->ok() && burner_cg_->ok() && hog_cg_->ok() && idle_cg_->ok()) << burner_cg_->error();
    burner_ = std::make_unique<Child>(testing::SpinForever);
    ASSERT_TRUE(burner_->StartIn(*burner_cg_));
    // Holds 64 MiB of touched anonymous memory, then sleeps until killed.
    hog_ = std::make_unique<Child>([] {
      void* m = mmap(nullptr, kHogBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
      char* p = static_cast<char*>(m);
      if (m == MAP_FAILED) return uint64_t{0};
      for (size_t i = 0; i < kHogBytes; i += 4096) p[i] = 1;
      return uint64_t{kHogBytes};
    });
    ASSERT_TRUE(hog_->StartIn(*hog_cg_));
    ASSERT_EQ(hog_->Result(), std::optional<uint64_t>(kHogBytes));
    idle_ = std::make_unique<Child>(Child::Sleeper());
    ASSERT_TRUE(idle_cg_->Add(idle_->pid()));
    status_file_ = "/tmp/" + UniqueName("statlet-top-status");
  }
  void TearDown() override {
    if (!status_file_.empty()) std::remove(status_file_.c_str());
  }

  std::string TopCommand() const {
    return std::string(STATLET_BINARY) + " top --cri.endpoint= --cgroup " + root_ + " --interval=1s";
  }
  // The pane's command: top, then its exit code and the terminal's settings as the shell
  // finds them afterwards; then the shell waits for a line, so the pane's screen can be read
  // while it is alive (tmux's cursor flag of a dead pane says nothing). The shell handles
  // SIGINT (a no-op trap) rather than ignoring it, so Ctrl-C reaches top and the shell
  // survives to write the file.
  bool StartTop(Tmux& tmux) {
    std::remove(status_file_.c_str());  // a previous run's status would pass for this one's
    return tmux.Start(PaneCommand(TopCommand()));
  }
  std::string PaneCommand(const std::string& top) const {
    return "trap : INT; " + top + "; echo exit=$? > " + status_file_ + "; stty -a >> " + status_file_ +
           "; echo end >> " + status_file_ + "; read line";
  }
  std::string Status() const {
    std::ifstream in(status_file_);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  // The terminal after top exited: not on the alternate screen, cursor shown, the line
  // discipline back in canonical mode with echo; then the pane ends with its shell.
  void ExpectRestored(Tmux& tmux, const std::string& exit_line) {
    ASSERT_TRUE(WaitFor([&] { return Status().find("end\n") != std::string::npos; }, milliseconds(10000)))
        << "top did not exit:\n"
        << tmux.Capture();
    EXPECT_EQ(tmux.Format("alternate_on"), "0");
    EXPECT_EQ(tmux.Format("cursor_flag"), "1");
    const std::string after = tmux.Capture();
    EXPECT_EQ(after.find("statlet top"), std::string::npos) << "the view is still on the screen:\n" << after;
    const std::string status = Status();
    EXPECT_NE(status.find(exit_line + "\n"), std::string::npos) << status;
    EXPECT_NE(status.find(" icanon"), std::string::npos) << status;
    EXPECT_EQ(status.find("-icanon"), std::string::npos) << status;
    EXPECT_NE(status.find(" echo "), std::string::npos) << status;
    EXPECT_EQ(status.find("-echo "), std::string::npos) << status;
    tmux.SendKeys("Enter");
    EXPECT_TRUE(WaitFor([&] { return tmux.Format("pane_dead") == "1"; }, milliseconds(10000))) << tmux.Capture();
  }

  std::string root_;
  std::unique_ptr<LiveCgroup> top_, burner_cg_, hog_cg_, idle_cg_;
  std::unique_ptr<Child> burner_, hog_, idle_;
  std::string status_file_;
};

TEST_F(TopTerminal, BurnerFirstAtItsKernelRateThenMemorySortThenQuit) {
  Tmux tmux;
  ASSERT_TRUE(StartTop(tmux));

  // Every poll records when it saw the screen and the burner's CPU time right after. A new
  // frame appears between two polls, so the kernel's rate between the polls that first saw
  // two consecutive frames covers the same window as the frame's rate, within a poll.
  struct Seen {
    std::string screen;
    std::chrono::steady_clock::time_point at;
    int64_t usage_ns;
  };
  std::vector<Seen> frames;
  double shown = -1, kernel = -1;
  std::string screen;
  const bool found = WaitFor(
      [&] {
        screen = tmux.Capture();
        Seen now{screen, std::chrono::steady_clock::now(), burner_cg_->CpuUsageNs()};
        if (!frames.empty() && frames.back().screen == screen) return false;
        frames.push_back(now);
        if (frames.size() < 2) return false;
        ParsedScreen s = Parse(screen);
        const ScreenRow* burner = RowNamed(s, "burner");
        if (FirstChild(s) != "burner" || burner == nullptr || burner->cells.empty()) return false;
        std::optional<double> cpu = Number(burner->cells[0]);
        // The previous frame must be one seen appear too (not the screen before the first).
        const Seen& a = frames[frames.size() - 2];
        if (!cpu || !Parse(a.screen).has_table) return false;
        shown = *cpu;
        kernel = double(now.usage_ns - a.usage_ns) * 100.0 /
                 double(std::chrono::duration_cast<std::chrono::nanoseconds>(now.at - a.at).count());
        return true;
      },
      milliseconds(30000));
  ASSERT_TRUE(found) << "the burner never led the table with a CPU %:\n" << screen;
  std::printf("burner: shown %.1f %% of a CPU, the kernel's cpuacct over the same window %.1f %%\n", shown, kernel);
  EXPECT_GT(kernel, 20.0) << "the burner hardly ran; the comparison would say little";
  EXPECT_NEAR(shown, kernel, kernel * 0.10) << screen;
  ParsedScreen by_cpu = Parse(screen);
  EXPECT_NE(by_cpu.title.find("sort: cpu"), std::string::npos) << by_cpu.title;
  // Every test cgroup is on the screen, under the test's root.
  ASSERT_EQ(by_cpu.rows.size(), 4u) << screen;
  EXPECT_EQ(by_cpu.rows[0].name, root_);
  EXPECT_EQ(by_cpu.rows[0].depth, 0);

  // 'm': the 64 MiB process's cgroup comes first.
  tmux.SendKeys("m");
  ASSERT_TRUE(WaitFor(
      [&] {
        screen = tmux.Capture();
        return Parse(screen).title.find("sort: memory") != std::string::npos;
      },
      milliseconds(5000)))
      << screen;
  ParsedScreen by_memory = Parse(screen);
  EXPECT_EQ(FirstChild(by_memory), "hog") << screen;
  EXPECT_NE(FirstChild(by_memory), FirstChild(by_cpu));
  const ScreenRow* hog = RowNamed(by_memory, "hog");
  ASSERT_TRUE(hog != nullptr && hog->cells.size() >= 4) << screen;
  std::optional<double> hog_bytes = Bytes(hog->cells[3]);
  ASSERT_TRUE(hog_bytes) << hog->cells[3];
  EXPECT_GE(*hog_bytes, double(kHogBytes) * 0.95) << screen;
  EXPECT_LE(*hog_bytes, double(kHogBytes) + (16 << 20)) << screen;

  // 'q' quits and gives the shell its terminal back.
  tmux.SendKeys("q");
  ExpectRestored(tmux, "exit=0");
}

TEST_F(TopTerminal, CtrlCAndSigtermRestoreTheTerminal) {
  auto first_frame = [](Tmux& tmux) {
    return WaitFor([&] { return Parse(tmux.Capture()).has_table; }, milliseconds(15000));
  };
  {
    Tmux tmux;
    ASSERT_TRUE(StartTop(tmux));
    ASSERT_TRUE(first_frame(tmux)) << tmux.Capture();
    EXPECT_EQ(tmux.Format("alternate_on"), "1");  // what has to be undone
    tmux.SendKeys("C-c");
    ExpectRestored(tmux, "exit=130");  // 128 + SIGINT
  }
  {
    Tmux tmux;
    ASSERT_TRUE(StartTop(tmux));
    ASSERT_TRUE(first_frame(tmux)) << tmux.Capture();
    // top is the shell's child in the pane.
    const std::string shell = tmux.Format("pane_pid");
    const std::string children = testing::ReadWholeFile("/proc/" + shell + "/task/" + shell + "/children");
    const pid_t top = static_cast<pid_t>(std::atoi(children.c_str()));
    ASSERT_GT(top, 0) << "no child of the pane's shell " << shell;
    ASSERT_EQ(kill(top, SIGTERM), 0);
    ExpectRestored(tmux, "exit=143");  // 128 + SIGTERM
  }
}

TEST_F(TopTerminal, PipedFramesArePlainText) {
  const std::string out =
      PipedTop("--cri.endpoint= --cgroup " + root_ + " --interval=200ms --iterations=2 --sort=memory");
  EXPECT_NE(out.find("\nexit=0\n"), std::string::npos) << out;
  // Two frames with rates, no escape sequences, the 64 MiB process first under the root.
  EXPECT_EQ(out.find('\x1b'), std::string::npos);
  size_t frames = 0;
  for (size_t at = out.find("statlet top"); at != std::string::npos; at = out.find("statlet top", at + 1)) ++frames;
  EXPECT_EQ(frames, 2u) << out;
  EXPECT_EQ(out.find("keys:"), std::string::npos) << "a pipe has no keys to press:\n" << out;
  ParsedScreen last = Parse(out.substr(std::min(out.rfind("statlet top"), out.size())));
  EXPECT_EQ(FirstChild(last), "hog") << out;
  const ScreenRow* burner = RowNamed(last, "burner");
  ASSERT_TRUE(burner != nullptr && !burner->cells.empty()) << out;
  EXPECT_TRUE(Number(burner->cells[0])) << "no CPU % in a piped frame:\n" << out;
}

// A node with pods and a busy service beside them: both show, each in its section, and
// --show (the `k` key) narrows the view to one.
TEST(TopMixedHost, PodsAndTheRestOfTheHostInTwoSections) {
  if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
  const std::string root = "/" + UniqueName("statlet-top-mixed");
  const std::string uid = "1f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  const std::string id = "6e" + std::string(62, 'b');
  LiveCgroup top(root);
  LiveCgroup ctr(root + "/kubepods/besteffort/pod" + uid + "/" + id);
  LiveCgroup service(root + "/system.slice/busy.service");
  ASSERT_TRUE(top.ok() && ctr.ok() && service.ok()) << ctr.error() << service.error();
  Child idle(Child::Sleeper());
  ASSERT_TRUE(ctr.Add(idle.pid()));
  Child burner(testing::SpinForever);
  ASSERT_TRUE(burner.StartIn(service));
  const std::string out = PipedTop("--cri.endpoint= --cgroup " + root + " --iterations=2 --interval=500ms");
  EXPECT_NE(out.find("\nexit=0\n"), std::string::npos) << out;
  ParsedScreen last = Parse(out.substr(std::min(out.rfind("statlet top"), out.size())));
  std::vector<std::string> names;
  for (const ScreenRow& r : last.rows) names.push_back(std::string(static_cast<size_t>(r.depth) * 2, ' ') + r.name);
  // The section headings, then under each what it holds: the pod with its container, and
  // the busy service.
  auto at = [&](const std::string& n) { return std::find(names.begin(), names.end(), n) - names.begin(); };
  const long pods = at("=="), pod = at("  pod" + uid), container = at("    " + id.substr(0, 13));
  long host = -1;
  for (size_t i = 0; i < last.rows.size(); ++i) {
    if (last.rows[i].name == "==" && i > 0) host = static_cast<long>(i);
  }
  long busy = -1;  // under the host section, named by its path or the part below its parent
  for (size_t i = 0; i < last.rows.size(); ++i) {
    const std::string& n = last.rows[i].name;
    if (n.size() >= 12 && n.compare(n.size() - 12, 12, "busy.service") == 0) busy = static_cast<long>(i);
  }
  EXPECT_EQ(pods, 0) << out;
  EXPECT_EQ(pod, 1) << out;
  EXPECT_EQ(container, 2) << out;
  EXPECT_GT(host, container) << out;
  EXPECT_GT(busy, host) << out;
  EXPECT_LT(busy, static_cast<long>(names.size())) << out;
  EXPECT_NE(out.find("== Kubernetes pods ("), std::string::npos) << out;
  EXPECT_NE(out.find("== host, outside Kubernetes =="), std::string::npos) << out;
  // The burner's CPU shows in the host section's own row.
  ASSERT_GE(host, 0);
  std::optional<double> busy_cpu = Number(last.rows[static_cast<size_t>(busy)].cells.at(0));
  EXPECT_TRUE(busy_cpu && *busy_cpu > 5.0) << out;

  const std::string pods_only =
      PipedTop("--cri.endpoint= --cgroup " + root + " --iterations=1 --interval=200ms --show=pods");
  EXPECT_NE(pods_only.find("show: pods"), std::string::npos) << pods_only;
  EXPECT_NE(pods_only.find("pod" + uid), std::string::npos) << pods_only;
  EXPECT_EQ(pods_only.find("busy.service"), std::string::npos) << pods_only;
  const std::string host_only =
      PipedTop("--cri.endpoint= --cgroup " + root + " --iterations=1 --interval=200ms --show=host");
  EXPECT_NE(host_only.find("busy.service"), std::string::npos) << host_only;
  EXPECT_EQ(host_only.find("pod" + uid), std::string::npos) << host_only;
}

// With a daemon whose CRI socket lists a pod, top reads the socket: pods with their
// containers beneath, CPU % from the daemon's counters.
TEST(TopDaemon, ReadsTheDaemonsSocketWhenItListsPods) {
  if (geteuid() != 0) GTEST_SKIP() << "live cgroup tests need root";
  const std::string root = "/" + UniqueName("statlet-top-daemon");
  const std::string uid = "0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0";
  const std::string id = "5e" + std::string(62, 'a');
  LiveCgroup top(root);
  LiveCgroup ctr(root + "/kubepods/besteffort/pod" + uid + "/" + id);
  ASSERT_TRUE(top.ok() && ctr.ok()) << ctr.error();
  Child burner(testing::SpinForever);
  ASSERT_TRUE(burner.StartIn(ctr));
  const std::string socket = "/tmp/" + UniqueName("statlet-top") + ".sock";
  {
    testing::DaemonOptions o;
    o.cgroup_subtree = root;
    o.serve_cri = true;
    o.cri_socket = socket;
    o.flags = {"--runtime.endpoint="};  // the node's runtime, if any (auto-detect)
    testing::Daemon daemon(o);
    ASSERT_TRUE(daemon.ok()) << daemon.error();
    const std::string out = PipedTop("--cri.endpoint=unix://" + socket + " --iterations=2 --interval=1s");
    EXPECT_NE(out.find("\nexit=0\n"), std::string::npos) << out;
    ParsedScreen last = Parse(out.substr(std::min(out.rfind("statlet top"), out.size())));
    EXPECT_NE(last.title.find("daemon " + socket), std::string::npos) << out;
    ASSERT_EQ(last.rows.size(), 2u) << out;
    EXPECT_EQ(last.rows[0].name, "pod" + uid);
    EXPECT_EQ(last.rows[0].depth, 0);
    EXPECT_EQ(last.rows[1].name, id.substr(0, 13));
    EXPECT_EQ(last.rows[1].depth, 1);
    std::optional<double> pod_cpu = Number(last.rows[0].cells.at(0)), ctr_cpu = Number(last.rows[1].cells.at(0));
    ASSERT_TRUE(pod_cpu && ctr_cpu) << out;
    EXPECT_GT(*ctr_cpu, 5.0) << out;             // the burner runs there
    EXPECT_GE(*pod_cpu, *ctr_cpu * 0.9) << out;  // the pod holds the container
  }
  std::remove(socket.c_str());  // the daemon's, if it left it
}

}  // namespace
}  // namespace statlet
