// A progress stream whose client vanished without a word (no FIN, no RST) is dropped within
// --web.stream-peer-timeout, even while it has nothing to send, and gives back its place in
// --pull.max-progress-streams and its connection; a live client that reads nothing keeps its
// stream. The vanishing client is a real process in a network namespace of its own whose
// veth link is deleted under it; the server is statlet's HTTP server with the streams of
// pulls/progress_streams.h, following a pod that pulls nothing (an idle stream).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>

#include "exporters/metrics_http_server.h"
#include "pulls/progress_streams.h"
#include "tests/support/fixed_snapshot_source.h"
#include "tests/support/snapshot_builder.h"
#include "tests/support/wait_for.h"

namespace statlet::pulls {
namespace {

using std::chrono::milliseconds;
using std::chrono::seconds;
using Clock = std::chrono::steady_clock;

constexpr seconds kPeerTimeout{3};

bool Sh(const std::string& command) { return std::system(command.c_str()) == 0; }

// A network namespace joined to this one by a veth pair: 10.213.<n>.1 here, .2 there.
struct Netns {
  std::string name, host_if, peer_if, host_ip, peer_ip;
  bool up = false;
  Netns() {
    const int n = static_cast<int>(getpid() % 200) + 20;
    name = "statlet-pp-" + std::to_string(getpid());
    host_if = "stpp" + std::to_string(getpid() % 100000) + "h";
    peer_if = "stpp" + std::to_string(getpid() % 100000) + "c";
    host_ip = "10.213." + std::to_string(n) + ".1";
    peer_ip = "10.213." + std::to_string(n) + ".2";
    up = Sh("ip netns add " + name) && Sh("ip link add " + host_if + " type veth peer name " + peer_if) &&
         Sh("ip link set " + peer_if + " netns " + name) && Sh("ip addr add " + host_ip + "/30 dev " + host_if) &&
         Sh("ip link set " + host_if + " up") &&
         Sh("ip netns exec " + name + " ip addr add " + peer_ip + "/30 dev " + peer_if) &&
         Sh("ip netns exec " + name + " ip link set " + peer_if + " up");
  }
  // Removes the link under the peer: it sends nothing more, not even a FIN.
  bool Cut() { return Sh("ip link del " + host_if); }
  ~Netns() {
    Sh("ip link del " + host_if + " 2>/dev/null");
    Sh("ip netns del " + name);
  }
};

// A client in the namespace: opens the URL, prints the status line, then holds the
// connection open without reading until it is killed.
struct NetnsClient {
  pid_t pid = -1;
  int out = -1;
  NetnsClient(const Netns& ns, const std::string& host, int port, const std::string& path) {
    static const char kScript[] =
        "import socket, sys, signal\n"
        "s = socket.create_connection((sys.argv[1], int(sys.argv[2])))\n"
        "s.sendall(('GET ' + sys.argv[3] + ' HTTP/1.1\\r\\nHost: t\\r\\n\\r\\n').encode())\n"
        "head = b''\n"
        "while b'\\r\\n\\r\\n' not in head:\n"
        "    b = s.recv(1)\n"
        "    if not b: break\n"
        "    head += b\n"
        "print(head.split(b'\\r\\n')[0].decode(), flush=True)\n"
        "signal.pause()\n";
    int fds[2];
    if (pipe(fds) != 0) return;
    pid = fork();
    if (pid == 0) {
      dup2(fds[1], 1);
      close(fds[0]);
      const std::string p = std::to_string(port);
      execl("/usr/bin/ip", "ip", "netns", "exec", ns.name.c_str(), "/usr/bin/python3", "-c", kScript, host.c_str(),
            p.c_str(), path.c_str(), static_cast<char*>(nullptr));
      _exit(127);
    }
    close(fds[1]);
    out = fds[0];
  }
  // The status line it printed, waiting up to `timeout` for it.
  std::string StatusLine(milliseconds timeout) {
    std::string line;
    const auto deadline = Clock::now() + timeout;
    while (line.find('\n') == std::string::npos && Clock::now() < deadline) {
      pollfd p{out, POLLIN, 0};
      const int left = static_cast<int>(std::chrono::duration_cast<milliseconds>(deadline - Clock::now()).count());
      if (poll(&p, 1, std::max(left, 0)) <= 0) break;
      char buf[256];
      const ssize_t n = read(out, buf, sizeof buf);
      if (n <= 0) break;
      line.append(buf, static_cast<size_t>(n));
    }
    return line;
  }
  ~NetnsClient() {
    if (pid > 0) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (out >= 0) close(out);
  }
};

// Established TCP connections in this namespace (/proc/net/tcp, state 01) with one end at
// `port` and the other at `ip` (any port).
int Established(const std::string& ip, int port) {
  in_addr a{};
  inet_pton(AF_INET, ip.c_str(), &a);
  char addr[9], at_port[6];
  std::snprintf(addr, sizeof addr, "%08X", a.s_addr);  // as the kernel prints it: the raw word
  std::snprintf(at_port, sizeof at_port, ":%04X", port);
  std::ifstream f("/proc/net/tcp");
  std::string line;
  std::getline(f, line);
  int n = 0;
  while (std::getline(f, line)) {
    std::istringstream in(line);
    std::string slot, local, remote, state;
    in >> slot >> local >> remote >> state;
    if (state != "01") continue;
    const bool out = remote.rfind(addr, 0) == 0 && local.find(at_port) == 8;
    const bool back = local.rfind(addr, 0) == 0 && remote.find(at_port) == 8;
    if (out || back) ++n;
  }
  return n;
}

std::string ProcNetTcp() {
  std::ifstream f("/proc/net/tcp");
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

TEST(ProgressPeer, AStreamWhosePeerVanishedIsDroppedWithinThePeerTimeoutAndALiveIdleOneIsKept) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root for a network namespace";
  Netns ns;
  ASSERT_TRUE(ns.up) << "could not set up the namespace and its veth";

  ProgressStreams streams({[] { return std::vector<PullViewPtr>{}; }, [] { return uint64_t{1}; }},
                          {.max_streams = 4, .max_entries = 16, .interval = milliseconds(50)});
  testing::FixedSnapshotSource source{testing::MakeNodeSnapshot({})};
  HttpServerOptions o;
  o.listen_address = ":0";  // the namespace's client on the veth, the live one on loopback
  o.stream_peer_timeout = kPeerTimeout;
  auto created = MetricsHttpServer::Create(o, {}, &source);
  ASSERT_TRUE(created.ok()) << created.status().ToString();
  std::unique_ptr<MetricsHttpServer> server = std::move(*created);
  server->AddStreamRoute("/imagepullprogress/", [&](const std::string&) {
    MetricsHttpServer::StreamAnswer a;
    a.content_type = "application/x-ndjson";
    ProgressTarget pod;
    pod.pod = {"shop", "idle-0", "u1"};
    a.stream = streams.Open(pod);
    if (!a.stream) a.status = 503;
    return a;
  });
  ASSERT_TRUE(server->Start().ok());

  // A live client here that reads nothing after the header: its kernel answers probes. On
  // loopback, so that cutting the namespace's link leaves it its route.
  int live = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(server->port()));
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ASSERT_EQ(::connect(live, reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
  const std::string req = "GET /imagepullprogress/live HTTP/1.1\r\nHost: t\r\n\r\n";
  ASSERT_EQ(::send(live, req.data(), req.size(), MSG_NOSIGNAL), static_cast<ssize_t>(req.size()));
  ASSERT_TRUE(testing::WaitFor([&] { return streams.open() == 1; }, milliseconds(10000)));

  NetnsClient gone(ns, ns.host_ip, server->port(), "/imagepullprogress/gone");
  const std::string status = gone.StatusLine(milliseconds(10000));
  ASSERT_EQ(status.rfind("HTTP/1.1 200", 0), 0u) << "the namespace's client: " << status;
  ASSERT_TRUE(testing::WaitFor([&] { return streams.open() == 2; }, milliseconds(10000)));
  EXPECT_EQ(Established(ns.peer_ip, server->port()), 1);
  EXPECT_EQ(Established("127.0.0.1", server->port()), 2) << "the live client's connection, both ends";

  ASSERT_TRUE(ns.Cut());
  const auto cut = Clock::now();
  // Dropped within the timeout and one probe interval (a third of it) of the peer's last
  // segment, which came before the cut; three timeouts is the bound asserted.
  const bool dropped = testing::WaitFor([&] { return streams.open() == 1; }, 3 * kPeerTimeout);
  const double after = std::chrono::duration<double>(Clock::now() - cut).count();
  EXPECT_TRUE(dropped) << "the vanished client's idle stream still holds its place " << after
                       << " s after the cut (peer timeout " << kPeerTimeout.count() << " s)";
  if (dropped) {
    std::printf("figure: the vanished peer's stream was dropped %.2f s after the cut (peer timeout %lld s)\n", after,
                static_cast<long long>(kPeerTimeout.count()));
  }
  EXPECT_EQ(Established(ns.peer_ip, server->port()), 0) << "its connection is closed too\n" << ProcNetTcp();
  EXPECT_EQ(streams.open(), 1u) << "the live client reading nothing keeps its stream";
  EXPECT_EQ(Established("127.0.0.1", server->port()), 2) << "the live client's connection, both ends";

  ::close(live);
  EXPECT_TRUE(testing::WaitFor([&] { return streams.open() == 0; }, milliseconds(10000)));
  server->Stop();
  streams.Stop();
}

}  // namespace
}  // namespace statlet::pulls
