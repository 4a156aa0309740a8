// statlet top: a live view of the node, one row per pod with its containers beneath (a bare
// host: one row per cgroup), redrawn every interval with CPU, memory, throttling, network
// and PSI. Numbers come from a running daemon's CRI socket when one lists pods, else from
// a collection in this process (cmd/top_source.h); rates and order from cmd/top_model.h,
// lines from cmd/top_render.h. This file is the terminal: raw mode, the alternate screen,
// keys, signals, and putting the terminal back however the program ends.
#include <poll.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "base/duration.h"
#include "cmd/commands.h"
#include "cmd/flag_parser.h"
#include "cmd/subtree_check.h"
#include "cmd/top_model.h"
#include "cmd/top_render.h"
#include "cmd/top_source.h"
#include "cri/cri_daemon_options.h"  // kDefaultCriListenPath

namespace statlet {
namespace {

constexpr const char* kTopUsage = R"(Usage: statlet top [flags]

A live view of this node: one row per pod and its containers (on a host without
Kubernetes, one row per cgroup) with CPU % (and its user/kernel split), memory (working
set) and its limit, CPU throttling, network rx/tx per second (pods) and CPU/memory
pressure (PSI some avg10). On a node that also runs other things (the kubelet, the
runtime, services), the pods and the rest are two sections, each with its totals. Reads a
running statlet's CRI socket when it lists pods (pods only), else collects in this
process (every cgroup).

Keys:
  c m n t        sort by CPU, memory, name, throttling      < >  move the sort column
  r              reverse the order                          /    filter (Enter applies,
  + -            refresh faster / slower                         Esc clears)
  d              type a refresh interval                    k    all, pods only, host only
  q              quit

Flags:
      --interval DURATION  refresh interval (default 1s, at least 100ms)
      --cri.endpoint URL   the daemon's CRI socket (default unix:///run/statlet/cri.sock);
                           "" collects in this process
      --sort COLUMN        name, cpu (default), user, system, memory, limit, throttled,
                           rx, tx, cpu-psi or memory-psi
      --filter TEXT        only rows whose name or id contains TEXT (and their pod or
                           containers)
      --iterations N       draw N frames with rates, then exit (0 = until q)
      --show WHAT          all (default), pods or host: the sections a mixed node shows
  In-process collection (these imply it: the daemon cannot apply them):
      --collector.subtree PATH, --cgroup PATH
                           only this cgroup subtree (e.g. /kubepods.slice); repeatable
      --collector.include-empty
                           also cgroups without processes
      --collector.cgroup-root DIR
                           where the cgroup hierarchies are mounted (default /sys/fs/cgroup)
      --collector.proc-root DIR
                           procfs mount (default /proc)
  -h, --help               this text

Columns: CPU% of one CPU, its USR% and SYS% (user and kernel), WORKING SET (memory less
inactive file pages, what the kubelet evicts by), MEM LIMIT, THROTTLED% (of the CFS periods
in the interval), RX/s and TX/s (pods' networks), CPU-PSI and MEM-PSI (some avg10, percent).
Without a terminal (piped), every frame is printed as plain text, without the keys.

Old spellings, still accepted with a notice: --socket (--cri.endpoint), --cgroup.mount,
--proc.root, --all (the --collector.* flags above).
)";

using Clock = std::chrono::steady_clock;
using std::chrono::nanoseconds;

constexpr nanoseconds kMinInterval = std::chrono::milliseconds(100);
// What + and - step through.
constexpr int64_t kIntervalStepsMs[] = {100, 250, 500, 1000, 2000, 3000, 5000, 10000, 30000, 60000};

std::string FormatInterval(nanoseconds d) {
  char buf[32];
  if (d < std::chrono::seconds(1)) {
    std::snprintf(buf, sizeof buf, "%lldms", static_cast<long long>(d.count() / 1000000));
  } else {
    std::snprintf(buf, sizeof buf, "%gs", static_cast<double>(d.count()) / 1e9);
  }
  return buf;
}

std::string WallClock() {
  std::time_t now = std::time(nullptr);
  struct tm tm;
  localtime_r(&now, &tm);
  char buf[16];
  std::strftime(buf, sizeof buf, "%H:%M:%S", &tm);
  return buf;
}

bool WriteAll(int fd, const std::string& s) {
  size_t off = 0;
  while (off < s.size()) {
    ssize_t n = write(fd, s.data() + off, s.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    off += static_cast<size_t>(n);
  }
  return true;
}

// The controlling terminal in the state the view needs: no line editing or echo (keys
// arrive one by one), the alternate screen (the shell's screen comes back intact), no
// cursor. Ctrl-C still raises SIGINT (ISIG stays on) so it is handled like SIGTERM: the
// loop ends and Restore runs. Ctrl-Z is disabled: a stopped view would leave the shell raw.
class Terminal {
 public:
  ~Terminal() { Restore(); }
  bool Enter() {
    if (tcgetattr(STDIN_FILENO, &saved_) != 0) return false;
    struct termios raw = saved_;
    raw.c_lflag &= ~static_cast<tcflag_t>(ICANON | ECHO | IEXTEN);
    raw.c_iflag &= ~static_cast<tcflag_t>(IXON | ICRNL);
    raw.c_cc[VMIN] = 1;
    raw.c_cc[VTIME] = 0;
    raw.c_cc[VSUSP] = _POSIX_VDISABLE;
    if (tcsetattr(STDIN_FILENO, TCSADRAIN, &raw) != 0) return false;
    entered_ = true;
    WriteAll(STDOUT_FILENO, "\x1b[?1049h\x1b[?25l\x1b[H\x1b[2J");
    return true;
  }
  void Restore() {
    if (!entered_) return;
    entered_ = false;
    WriteAll(STDOUT_FILENO, "\x1b[0m\x1b[?25h\x1b[?1049l");
    tcsetattr(STDIN_FILENO, TCSADRAIN, &saved_);
  }
  static void Size(int* width, int* height) {
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0 && ws.ws_row > 0) {
      *width = ws.ws_col;
      *height = ws.ws_row;
    }
  }

 private:
  struct termios saved_ {};
  bool entered_ = false;
};

// Each line placed with its own cursor move: a line as wide as the screen leaves the
// cursor in the last column, where a following erase or newline would eat a character.
void Draw(const top::Screen& screen, int width, int height) {
  std::string out;
  for (size_t i = 0; i < screen.lines.size(); ++i) {
    out += "\x1b[" + std::to_string(i + 1) + ";1H\x1b[2K";
    if (static_cast<int>(i) == screen.header_line) {
      std::string line = screen.lines[i];
      // Highlighted across the whole width, as a header bar.
      size_t cols = 0;
      for (unsigned char c : line) cols += (c & 0xC0) != 0x80;
      if (cols < static_cast<size_t>(width)) line.append(static_cast<size_t>(width) - cols, ' ');
      out += "\x1b[7m" + line + "\x1b[0m";
    } else {
      out += screen.lines[i];
    }
  }
  // Clears what a longer previous frame left below; a full screen has nothing below (and a
  // cursor moved past the last line would stay on it and clear it).
  if (screen.lines.size() < static_cast<size_t>(height)) {
    out += "\x1b[" + std::to_string(screen.lines.size() + 1) + ";1H\x1b[J";
  }
  WriteAll(STDOUT_FILENO, out);
}

struct Options {
  top::SourceOptions source;
  nanoseconds interval = std::chrono::seconds(1);
  top::View view;
  long iterations = 0;
};

// The view's state between keys and refreshes.
class TopLoop {
 public:
  TopLoop(const Options& o, top::SampleSource* source, std::string source_label, bool tty, int signal_fd)
      : source_(source),
        source_label_(std::move(source_label)),
        tty_(tty),
        signal_fd_(signal_fd),
        view_(o.view),
        interval_(o.interval),
        iterations_(o.iterations) {}

  // The exit code: 0 after q or the last iteration, 128 + the signal that ended it, 1 when
  // no sample could be taken at all.
  int Run(Terminal* terminal) {
    Clock::time_point started = Clock::now();
    if (!Refresh()) {
      terminal->Restore();
      std::fprintf(stderr, "statlet top: %s\n", message_.c_str());
      return 1;
    }
    next_ = started + interval_;
    for (;;) {
      if (iterations_ > 0 && frames_ >= iterations_) return 0;
      struct pollfd fds[2] = {{signal_fd_, POLLIN, 0}, {STDIN_FILENO, POLLIN, 0}};
      const nanoseconds left = next_ - Clock::now();
      const int timeout_ms =
          left.count() <= 0 ? 0 : static_cast<int>(std::chrono::ceil<std::chrono::milliseconds>(left).count());
      const int n = poll(fds, tty_ ? 2 : 1, timeout_ms);
      if (n < 0 && errno != EINTR) return 1;
      if (n > 0 && (fds[0].revents & POLLIN) != 0) {
        struct signalfd_siginfo si;
        if (read(signal_fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) {
          if (si.ssi_signo == SIGWINCH) {
            if (tty_) Show();
          } else {
            return 128 + static_cast<int>(si.ssi_signo);
          }
        }
      }
      if (tty_ && n > 0 && (fds[1].revents & (POLLIN | POLLHUP | POLLERR)) != 0) {
        char buf[64];
        const ssize_t got = read(STDIN_FILENO, buf, sizeof buf);
        if (got == 0) return 0;  // the terminal went away
        if (got < 0 && errno != EINTR && errno != EAGAIN) return 1;
        if (got > 0) {
          if (!Keys(std::string(buf, static_cast<size_t>(got)))) return 0;
          Show();
        }
      }
      if (Clock::now() >= next_) {
        Clock::time_point at = Clock::now();
        Refresh();
        next_ = at + interval_;
      }
    }
  }

 private:
  // Takes a sample; rates against the previous one. A sample stamped like the previous
  // (a daemon reusing its last collection) keeps the previous one as the baseline.
  bool Refresh() {
    auto sample = source_->Next();
    if (!sample.ok()) {
      message_ = sample.status().message();
      Show();
      return false;
    }
    message_.clear();
    clock_ = WallClock();
    if (previous_ && Newest(*previous_) > 0 && Newest(*sample) <= Newest(*previous_)) {
      Show();
      return true;
    }
    rows_ = top::BuildRows(previous_ ? &*previous_ : nullptr, *sample);
    memory_qos_ = sample->memory_qos;
    const bool rates = previous_.has_value();
    previous_ = std::move(*sample);
    if (rates) ++frames_;
    // Without a terminal only frames with rates are printed: a script wants numbers.
    if (tty_ || rates) Show();
    return true;
  }

  static int64_t Newest(const top::Sample& s) {
    int64_t t = 0;
    for (const top::Entry& e : s.entries) t = std::max(t, e.timestamp_ns);
    return t;
  }

  void Show() {
    int width = 160, height = 40;
    if (tty_) {
      Terminal::Size(&width, &height);
    } else if (const char* c = std::getenv("COLUMNS"); c != nullptr && std::atoi(c) > 0) {
      width = std::atoi(c);
    }
    top::Frame frame;
    frame.source = source_label_;
    frame.clock = clock_;
    frame.interval = FormatInterval(interval_);
    frame.view = view_;
    frame.message = message_;
    frame.memory_qos = memory_qos_;
    frame.interactive = tty_;
    if (editing_ == Editing::kFilter) frame.prompt = "filter (Enter applies, Esc clears): " + edit_;
    if (editing_ == Editing::kInterval) frame.prompt = "refresh interval (e.g. 2s, 500ms; Esc cancels): " + edit_;
    std::vector<top::Row> rows = top::Arrange(rows_, view_);
    if (!tty_) {
      top::Screen s = top::Render(rows, frame, width, static_cast<int>(rows.size()) + 3);
      std::string out;
      for (const std::string& l : s.lines) out += l + "\n";
      out += "\n";
      WriteAll(STDOUT_FILENO, out);
      return;
    }
    Draw(top::Render(rows, frame, width, height), width, height);
  }

  void SetInterval(nanoseconds d) {
    const Clock::time_point last = next_ - interval_;
    interval_ = std::max(d, kMinInterval);
    next_ = last + interval_;
  }

  void Step(int direction) {
    const int64_t now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(interval_).count();
    int64_t to = now_ms;
    if (direction > 0) {
      for (int64_t s : kIntervalStepsMs) {
        if (s > now_ms) {
          to = s;
          break;
        }
      }
    } else {
      for (int64_t s : kIntervalStepsMs) {
        if (s < now_ms) to = s;
      }
    }
    SetInterval(std::chrono::milliseconds(to));
  }

  void MoveSort(int direction) {
    int c = (static_cast<int>(view_.sort) + direction + top::kColumnCount) % top::kColumnCount;
    view_.sort = static_cast<top::Column>(c);
  }

  // Handles what one read returned; false when the view should quit.
  bool Keys(const std::string& in) {
    for (size_t i = 0; i < in.size(); ++i) {
      const char k = in[i];
      if (k == '\x1b') {
        // A lone Esc, or the start of a sequence (arrows: ESC [ C, ESC [ D, ESC O C...).
        if (i + 1 < in.size() && (in[i + 1] == '[' || in[i + 1] == 'O')) {
          size_t j = i + 2;
          // Parameter bytes (digits, ';'...), then the final byte that names the key.
          while (j < in.size() && in[j] >= 0x30 && in[j] <= 0x3f) ++j;
          const char last = j < in.size() ? in[j] : '\0';
          i = j;
          if (editing_ == Editing::kNone && last == 'C') MoveSort(+1);
          if (editing_ == Editing::kNone && last == 'D') MoveSort(-1);
          continue;
        }
        // Esc clears the filter (also while typing one); typing an interval, it cancels.
        if (editing_ != Editing::kInterval) view_.filter.clear();
        editing_ = Editing::kNone;
        continue;
      }
      if (editing_ != Editing::kNone) {
        Edit(k);
        continue;
      }
      switch (k) {
        case 'q':
        case 'Q': return false;
        case 'c': view_.sort = top::Column::kCpu; break;
        case 'm': view_.sort = top::Column::kMemory; break;
        case 'n': view_.sort = top::Column::kName; break;
        case 't': view_.sort = top::Column::kThrottled; break;
        case 'r': view_.reverse = !view_.reverse; break;
        case 'k':
          view_.show = view_.show == top::Show::kAll    ? top::Show::kPods
                       : view_.show == top::Show::kPods ? top::Show::kHost
                                                        : top::Show::kAll;
          break;
        case '<':
        case ',': MoveSort(-1); break;
        case '>':
        case '.': MoveSort(+1); break;
        case '+':
        case '=': Step(+1); break;
        case '-':
        case '_': Step(-1); break;
        case '/':
          editing_ = Editing::kFilter;
          edit_ = view_.filter;
          break;
        case 'd':
        case 's':
          editing_ = Editing::kInterval;
          edit_.clear();
          break;
        default: break;
      }
    }
    return true;
  }

  void Edit(char k) {
    if (k == '\r' || k == '\n') {
      if (editing_ == Editing::kFilter) {
        view_.filter = edit_;
      } else {
        std::string text = edit_;
        // A bare number is seconds, as top(1) reads it.
        if (!text.empty() && text.find_first_not_of("0123456789.") == std::string::npos) text += "s";
        nanoseconds d{};
        if (Status s = ParseDuration(text, &d); !s.ok() || d.count() <= 0) {
          message_ = "not an interval: " + edit_;
        } else {
          SetInterval(d);
        }
      }
      editing_ = Editing::kNone;
    } else if (k == 0x7f || k == 0x08) {
      while (!edit_.empty() && (static_cast<unsigned char>(edit_.back()) & 0xC0) == 0x80) edit_.pop_back();
      if (!edit_.empty()) edit_.pop_back();
    } else if (k == 0x15) {  // Ctrl-U
      edit_.clear();
    } else if (static_cast<unsigned char>(k) >= 0x20) {
      edit_ += k;
    }
  }

  enum class Editing { kNone, kFilter, kInterval };

  top::SampleSource* source_;
  std::string source_label_;
  bool tty_;
  int signal_fd_;
  top::View view_;
  nanoseconds interval_;
  long iterations_;
  long frames_ = 0;
  Clock::time_point next_;
  std::optional<top::Sample> previous_;
  std::string memory_qos_;  // the last sample's Memory QoS rules
  std::vector<top::Row> rows_;
  std::string clock_ = "--:--:--";
  std::string message_;
  Editing editing_ = Editing::kNone;
  std::string edit_;
};

}  // namespace

int RunTopCommand(int argc, char** argv) {
  Options o;
  o.source.socket = cri::kDefaultCriListenPath;
  bool in_process = false;
  FlagParser flags(argc, argv, "statlet top");
  while (flags.Next()) {
    if (flags.Is("-h") || flags.Is("--help")) {
      std::fputs(kTopUsage, stdout);
      return 0;
    } else if (flags.Is("--interval")) {
      if (Status s = ParseDuration(flags.Value(), &o.interval); !s.ok()) {
        return flags.Fail("--interval: " + s.message() + " (e.g. 1s, 500ms)");
      }
      if (o.interval < kMinInterval) return flags.Fail("--interval: at least 100ms (e.g. 500ms)");
    } else if (flags.Is("--cri.endpoint", {"--socket"})) {
      o.source.socket = flags.Value();
    } else if (flags.Is("--sort")) {
      std::string v = flags.Value();
      std::optional<top::Column> c = top::ColumnByName(v);
      if (!c) {
        return flags.Fail("--sort " + v +
                          ": expected name, cpu, user, system, memory, limit, throttled, rx, tx, cpu-psi or "
                          "memory-psi");
      }
      o.view.sort = *c;
    } else if (flags.Is("--show")) {
      std::string v = flags.Value();
      std::optional<top::Show> show = top::ShowByName(v);
      if (!show) return flags.Fail("--show " + v + ": expected all, pods or host");
      o.view.show = *show;
    } else if (flags.Is("--filter")) {
      o.view.filter = flags.Value();
    } else if (flags.Is("--iterations")) {
      std::string v = flags.Value();
      char* end = nullptr;
      o.iterations = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end != '\0' || o.iterations < 0) {
        return flags.Fail("--iterations " + v + ": expected a count of 0 or more (e.g. 3; 0 runs until q)");
      }
    } else if (flags.Is("--collector.subtree") || flags.Is("--cgroup")) {
      o.source.collector.subtrees.push_back(flags.Value());
      in_process = true;
    } else if (flags.Is("--collector.include-empty", {"--all"})) {
      o.source.collector.include_empty = true;
      in_process = true;
    } else if (flags.Is("--collector.cgroup-root", {"--cgroup.mount"})) {
      o.source.collector.cgroup_mount = flags.Value();
      in_process = true;
    } else if (flags.Is("--collector.proc-root", {"--proc.root"})) {
      o.source.collector.proc_root = flags.Value();
      in_process = true;
    } else {
      return flags.Unknown();
    }
  }
  if (flags.failed()) return 2;
  if (in_process) o.source.socket.clear();
  if (Status s = CheckCgroupSubtrees(o.source.collector, "statlet top"); !s.ok()) {
    std::fprintf(stderr, "statlet top: %s\n", s.message().c_str());
    return 1;
  }

  // Signals arrive on a descriptor the loop polls, so every way out passes through the
  // terminal's restore. Blocked before any thread exists (gRPC starts some) so that none
  // of them takes the signal instead.
  sigset_t mask;
  sigemptyset(&mask);
  for (int s : {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGWINCH}) sigaddset(&mask, s);
  sigset_t old_mask;
  if (sigprocmask(SIG_BLOCK, &mask, &old_mask) != 0) {
    std::perror("statlet top: sigprocmask");
    return 1;
  }
  const int signal_fd = signalfd(-1, &mask, SFD_CLOEXEC);
  if (signal_fd < 0) {
    std::perror("statlet top: signalfd");
    return 1;
  }

  std::string why;
  auto source = top::OpenSource(o.source, &why);
  if (!source.ok()) {
    std::fprintf(stderr, "statlet top: %s\n", source.status().ToString().c_str());
    close(signal_fd);
    return 1;
  }

  const bool tty = isatty(STDIN_FILENO) == 1 && isatty(STDOUT_FILENO) == 1;
  int code;
  {
    Terminal terminal;
    if (tty && !terminal.Enter()) {
      std::perror("statlet top: terminal");
      close(signal_fd);
      return 1;
    }
    // Why the daemon was passed over, when it was: a view of the wrong source misleads.
    std::string label = (*source)->Describe() + (why.empty() ? "" : " (" + why + ")");
    TopLoop loop(o, source->get(), std::move(label), tty, signal_fd);
    code = loop.Run(&terminal);
  }  // the terminal is restored here, before anything else is printed
  close(signal_fd);
  return code;
}

}  // namespace statlet
