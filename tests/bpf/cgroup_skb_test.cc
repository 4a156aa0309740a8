// The net probe: bytes and packets per cgroup from the cgroup's own sockets, in the host's
// network namespace (where the interfaces' counters cannot tell two cgroups apart) and in a
// namespace of its own.
#include <arpa/inet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sched.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "tests/bpf/child_signal.h"
#include "tests/bpf/probe_test_support.h"
#include "tests/bpf/tcp_send.h"

namespace statlet::testing {
namespace {

// The probe alone, attached at the unified root (every socket of the host) or at `subtrees`.
std::unique_ptr<BpfProbes> LoadNetProbe(std::vector<std::string> subtrees = {}) {
  BpfOptions options = BpfOptions::WithMode(BpfMode::kOn);
  options.probes = {"net"};
  options.net_subtrees = std::move(subtrees);
  auto probes = BpfProbes::Create(options);
  EXPECT_TRUE(probes.ok()) << probes.status().ToString();
  if (!probes.ok()) return nullptr;
  return std::move(probes).value();
}

struct Traffic {
  uint64_t rx_bytes = 0, rx_packets = 0, tx_bytes = 0, tx_packets = 0;
};

std::unordered_map<uint64_t, Traffic> CollectTraffic(BpfProbes& probes, const std::vector<uint64_t>& ids) {
  std::unordered_map<uint64_t, BpfCgroupStats> by_id;
  std::vector<OomEvent> ooms;
  probes.Collect(ids, &by_id, &ooms, false, true);
  std::unordered_map<uint64_t, Traffic> out;
  for (uint64_t id : ids) {
    const BpfCgroupStats& b = by_id[id];
    EXPECT_TRUE(b.net_tx_bytes.has_value()) << "the net probe gave cgroup " << id << " no value";
    out[id] = {b.net_rx_bytes.value_or(0), b.net_rx_packets.value_or(0), b.net_tx_bytes.value_or(0),
               b.net_tx_packets.value_or(0)};
  }
  return out;
}

// What a sender reports in the one value a Child returns: a small error code in bits 0-7,
// the bytes it wrote in bits 8-31 and the bytes its socket sent again in bits 32-63.
struct Sent {
  uint64_t error = 0, bytes = 0, retransmitted = 0;
  static uint64_t Pack(uint64_t bytes, uint64_t retransmitted) { return retransmitted << 32 | bytes << 8; }
  static Sent Unpack(uint64_t v) { return {v & 0xff, (v >> 8) & 0xffffff, v >> 32}; }
};

// Sends `payload` bytes to 127.0.0.1:`port`, half-closes and waits for the peer's close.
// Loopback loses nothing, yet on a busy machine a socket does send data again: a sender
// moved between CPUs mid-transfer has its segments queued on two CPUs' backlogs and
// delivered out of order (fast retransmits, no drop counted), and a receiver kept off the
// CPU past the probe timeout brings a tail loss probe. Each such byte is a byte the probe
// sees go out, so the sender reports them (Sent).
uint64_t SendTo(uint16_t port, size_t payload) {
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  tcp_info info;
  uint64_t retransmitted = 0;
  if (int rc = SendAndDrain(addr, payload, &info, &retransmitted); rc != 0) return static_cast<uint64_t>(rc);
  return Sent::Pack(payload, retransmitted);
}

// A listener on 127.0.0.1 (an ephemeral port) made by the calling process.
int Listen(uint16_t* port) {
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(ls, 1) != 0) return -1;
  socklen_t len = sizeof(addr);
  getsockname(ls, reinterpret_cast<sockaddr*>(&addr), &len);
  *port = ntohs(addr.sin_port);
  return ls;
}

// Receiver: listens in its cgroup, reports the port on `port_fd`, drains one connection and
// returns the bytes read.
uint64_t Receive(int port_fd) {
  uint16_t port = 0;
  int ls = Listen(&port);
  if (ls < 0) return 0;
  if (write(port_fd, &port, sizeof(port)) != sizeof(port)) return 0;
  uint64_t got = AcceptAndDrain(ls);
  close(ls);
  return got;
}

// One transfer over loopback from a process in `from` to one in `to`: the data bytes the
// sender's socket sent, and how many of them it sent twice.
Sent Transfer(LiveCgroup& from, LiveCgroup& to, size_t payload) {
  int p[2];
  if (pipe(p) != 0) return {};
  Child receiver([&] { return Receive(p[1]); }, Child::kExits);
  EXPECT_TRUE(receiver.StartIn(to));
  close(p[1]);
  uint16_t port = 0;
  const std::string why = ReadFromChild(p[0], &port, sizeof(port), receiver.pid(), std::chrono::seconds(30));
  close(p[0]);
  EXPECT_EQ(why, "") << "the receiver did not start";
  if (!why.empty()) return {};
  Child sender([&] { return SendTo(port, payload); }, Child::kExits);
  EXPECT_TRUE(sender.StartIn(from));
  const Sent sent = Sent::Unpack(sender.Result(std::chrono::seconds(60)).value_or(0xff));
  std::optional<uint64_t> received = receiver.Result(std::chrono::seconds(10));
  EXPECT_EQ(sent.error, 0u) << "sender failed";
  EXPECT_TRUE(received.has_value());
  if (received) {
    EXPECT_EQ(*received, payload);
  }
  sender.Wait(std::chrono::seconds(10));
  receiver.Wait(std::chrono::seconds(10));
  return sent;
}

// What the probe counts for a transfer: the IP packets of its data (with what the socket
// sent again), SYN, ACKs and FIN, each packet's headers counted once per GSO super-packet.
// The headers are well under 1% of a multi-megabyte payload (at least 40 bytes per up to
// 64 KiB on loopback, more for the handshake and ACKs).
void ExpectAbout(uint64_t counted, const Sent& sent, const char* what) {
  const uint64_t data = sent.bytes + sent.retransmitted;
  std::cout << what << ": counted " << counted << " bytes for " << sent.bytes << " data bytes and "
            << sent.retransmitted << " sent again (" << (counted >= data ? counted - data : 0)
            << " of headers and control packets)\n";
  EXPECT_GE(counted, data) << what;
  EXPECT_LE(counted, data + data / 100) << what;
}

TEST(CgroupSkbProbe, TransmitBytesPerCgroupInTheHostNamespace) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadNetProbe();
  ASSERT_TRUE(probes);
  ProbeCgroup a("net-a"), b("net-b"), r("net-recv");
  for (ProbeCgroup* cg : {&a, &b, &r}) ASSERT_TRUE(cg->ok()) << cg->error();
  const std::vector<uint64_t> ids = {a.id(), b.id(), r.id()};

  constexpr size_t kPayloadA = 6 << 20, kPayloadB = 3 << 20;
  auto t0 = CollectTraffic(*probes, ids);
  const Sent sent_a = Transfer(a, r, kPayloadA);
  ASSERT_EQ(sent_a.bytes, kPayloadA);
  auto t1 = CollectTraffic(*probes, ids);
  ExpectAbout(t1[a.id()].tx_bytes - t0[a.id()].tx_bytes, sent_a, "a transmit");
  ExpectAbout(t1[r.id()].rx_bytes - t0[r.id()].rx_bytes, sent_a, "receiver receive");
  EXPECT_GT(t1[a.id()].tx_packets, t0[a.id()].tx_packets);
  EXPECT_GT(t1[a.id()].rx_packets, t0[a.id()].rx_packets) << "a's socket received the receiver's ACKs";
  EXPECT_EQ(t1[b.id()].tx_bytes, t0[b.id()].tx_bytes) << "b sent nothing";
  EXPECT_EQ(t1[b.id()].rx_bytes, t0[b.id()].rx_bytes);

  const Sent sent_b = Transfer(b, r, kPayloadB);
  ASSERT_EQ(sent_b.bytes, kPayloadB);
  auto t2 = CollectTraffic(*probes, ids);
  ExpectAbout(t2[b.id()].tx_bytes - t1[b.id()].tx_bytes, sent_b, "b transmit");
  EXPECT_EQ(t2[a.id()].tx_bytes, t1[a.id()].tx_bytes) << "a sent nothing more";
  EXPECT_EQ(t2[a.id()].tx_packets, t1[a.id()].tx_packets);
  EXPECT_EQ(t2[a.id()].rx_bytes, t1[a.id()].rx_bytes);
}

// Attached at a subtree (as the daemon attaches it at --collector.subtree): the sockets of
// cgroups below it are counted, the others not at all.
TEST(CgroupSkbProbe, AttachedAtASubtreeCountsOnlyItsSockets) {
  STATLET_REQUIRE_ROOT();
  const std::string root = "/" + UniqueName("statlet-bpf-net-sub");
  LiveCgroup inside(root + "/pod/app", {kUnified});
  ProbeCgroup outside("net-out");
  ASSERT_TRUE(inside.ok()) << inside.error();
  ASSERT_TRUE(outside.ok()) << outside.error();
  auto probes = LoadNetProbe({root});
  ASSERT_TRUE(probes);
  const std::vector<uint64_t> ids = {inside.id(), outside.id()};
  constexpr size_t kPayload = 2 << 20;
  auto t0 = CollectTraffic(*probes, ids);
  const Sent sent = Transfer(inside, outside, kPayload);
  ASSERT_EQ(sent.bytes, kPayload);
  auto t1 = CollectTraffic(*probes, ids);
  ExpectAbout(t1[inside.id()].tx_bytes - t0[inside.id()].tx_bytes, sent, "inside transmit");
  EXPECT_EQ(t1[outside.id()].rx_bytes, 0u) << "the receiver is outside the subtree";
  EXPECT_EQ(t1[outside.id()].tx_bytes, 0u);
}

// A root missing when the probe starts (the runtime makes the pods' root with its first pod)
// is attached by the first collection that finds it, and again once it is made again.
TEST(CgroupSkbProbe, ARootMadeAfterStartIsAttachedAtCollection) {
  STATLET_REQUIRE_ROOT();
  const std::string root = "/" + UniqueName("statlet-bpf-net-late");
  auto probes = LoadNetProbe({root});
  ASSERT_TRUE(probes) << "a missing root took the probe down";
  ProbeCgroup outside("net-late-out");
  ASSERT_TRUE(outside.ok()) << outside.error();
  constexpr size_t kPayload = 2 << 20;
  for (const char* round : {"made after start", "made again"}) {
    auto inside = std::make_unique<LiveCgroup>(root + "/pod/app", std::vector<Hierarchy>{kUnified});
    ASSERT_TRUE(inside->ok()) << inside->error();
    const std::vector<uint64_t> ids = {inside->id(), outside.id()};
    auto t0 = CollectTraffic(*probes, ids);
    const Sent sent = Transfer(*inside, outside, kPayload);
    ASSERT_EQ(sent.bytes, kPayload);
    auto t1 = CollectTraffic(*probes, ids);
    ExpectAbout(t1[inside->id()].tx_bytes - t0[inside->id()].tx_bytes, sent, round);
    EXPECT_EQ(t1[outside.id()].tx_bytes, t0[outside.id()].tx_bytes) << round << ": the receiver is outside";
    inside.reset();  // the root goes with it
    CollectTraffic(*probes, {outside.id()});
  }
}

// Roots of which one lies under the other: a packet of the inner one is counted once.
TEST(CgroupSkbProbe, ARootUnderAnotherCountsItsPacketsOnce) {
  STATLET_REQUIRE_ROOT();
  const std::string root = "/" + UniqueName("statlet-bpf-net-nest");
  LiveCgroup inside(root + "/pod/app", {kUnified});
  ProbeCgroup outside("net-nest-out");
  ASSERT_TRUE(inside.ok()) << inside.error();
  ASSERT_TRUE(outside.ok()) << outside.error();
  auto probes = LoadNetProbe({root + "/pod", root});
  ASSERT_TRUE(probes);
  const std::vector<uint64_t> ids = {inside.id(), outside.id()};
  constexpr size_t kPayload = 2 << 20;
  auto t0 = CollectTraffic(*probes, ids);
  const Sent sent = Transfer(inside, outside, kPayload);
  ASSERT_EQ(sent.bytes, kPayload);
  auto t1 = CollectTraffic(*probes, ids);
  ExpectAbout(t1[inside.id()].tx_bytes - t0[inside.id()].tx_bytes, sent, "nested roots transmit");
}

// The tests' waits for a child's signal are bounded: a child that fails before it signals
// fails the test at once, with why.
TEST(CgroupSkbProbe, AChildThatFailsBeforeItSignalsEndsTheWaitAtOnce) {
  int p[2];
  ASSERT_EQ(pipe(p), 0);
  Child child([] { return uint64_t{3}; }, Child::kExits);
  ASSERT_TRUE(child.Start());
  // The test keeps the write end, as one that has yet to signal a child does: no EOF comes.
  char c;
  const std::string why = ReadFromChild(p[0], &c, 1, child.pid(), std::chrono::minutes(10));
  EXPECT_EQ(why, "the child exited (status 3) before it signalled");
  close(p[0]);
  close(p[1]);
}

// /proc/<pid>/net/dev's loopback line: rx bytes, rx packets, tx bytes, tx packets.
std::vector<uint64_t> LoopbackCounters(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/net/dev");
  for (std::string line; std::getline(in, line);) {
    auto colon = line.find(':');
    if (colon == std::string::npos) continue;
    std::string name = line.substr(0, colon);
    name.erase(0, name.find_first_not_of(' '));
    if (name != "lo") continue;
    std::istringstream f(line.substr(colon + 1));
    std::vector<uint64_t> v(16);
    for (uint64_t& x : v) f >> x;
    return {v[0], v[1], v[8], v[9]};
  }
  return {};
}

// A process in a network namespace of its own: the probe counts its sockets there too,
// and the namespace's interfaces keep their own counters, which then agree with it.
TEST(CgroupSkbProbe, OwnNamespaceCountedAndItsInterfacesUnchanged) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadNetProbe();
  ASSERT_TRUE(probes);
  ProbeCgroup n("net-ns");
  ASSERT_TRUE(n.ok()) << n.error();
  constexpr size_t kPayload = 4 << 20;
  int ready[2], go[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(go), 0);
  Child pod(
      [&]() -> uint64_t {
        if (unshare(CLONE_NEWNET) != 0) return 3;
        int fd = socket(AF_INET, SOCK_DGRAM, 0);
        ifreq ifr{};
        std::strcpy(ifr.ifr_name, "lo");
        ifr.ifr_flags = IFF_UP | IFF_LOOPBACK | IFF_RUNNING;
        if (ioctl(fd, SIOCSIFFLAGS, &ifr) != 0) return 4;
        close(fd);
        uint16_t port = 0;
        int ls = Listen(&port);
        if (ls < 0) return 5;
        int report[2];
        if (pipe(report) != 0) return 6;
        pid_t sender = fork();
        if (sender == 0) {
          const uint64_t sent = SendTo(port, kPayload);
          _exit(write(report[1], &sent, sizeof(sent)) == sizeof(sent) ? 0 : 1);
        }
        close(report[1]);
        uint64_t got = AcceptAndDrain(ls);
        uint64_t sent = 0xff;
        const bool reported = read(report[0], &sent, sizeof(sent)) == sizeof(sent);
        int status = 0;
        waitpid(sender, &status, 0);
        if (got != kPayload || !reported || !WIFEXITED(status) || WEXITSTATUS(status) != 0) return 6;
        // Stay in the namespace until the test has read its counters.
        if (write(ready[1], "r", 1) != 1) return 7;
        char c;
        return read(go[0], &c, 1) == 1 ? sent : 8;
      },
      Child::kExits);
  // The child holds its own ends: a child that dies closes the pipe the test waits on.
  close(ready[1]);
  close(go[0]);
  auto t0 = CollectTraffic(*probes, {n.id()})[n.id()];
  ASSERT_TRUE(pod.StartIn(n));
  char c;
  ASSERT_EQ(ReadFromChild(ready[0], &c, 1, pod.pid(), std::chrono::seconds(60)), "")
      << "the namespace's transfer failed";
  std::vector<uint64_t> lo = LoopbackCounters(pod.pid());
  auto t1 = CollectTraffic(*probes, {n.id()})[n.id()];
  ASSERT_EQ(write(go[1], "g", 1), 1);
  const Sent sent = Sent::Unpack(pod.Result(std::chrono::seconds(10)).value_or(99));
  ASSERT_EQ(sent.error, 0u) << "the namespace's transfer failed";
  ASSERT_EQ(sent.bytes, kPayload);
  ASSERT_EQ(lo.size(), 4u);
  const Traffic d{t1.rx_bytes - t0.rx_bytes, t1.rx_packets - t0.rx_packets, t1.tx_bytes - t0.tx_bytes,
                  t1.tx_packets - t0.tx_packets};
  std::cout << "namespace lo: rx " << lo[0] << " B / " << lo[1] << " pkts, tx " << lo[2] << " B / " << lo[3]
            << " pkts; probe: rx " << d.rx_bytes << " B / " << d.rx_packets << " pkts, tx " << d.tx_bytes << " B / "
            << d.tx_packets << " pkts\n";
  ExpectAbout(d.tx_bytes, sent, "namespace transmit");
  ExpectAbout(d.rx_bytes, sent, "namespace receive");
  // Loopback counts each packet's IP length (it strips the Ethernet header before counting)
  // and every packet on it is the cgroup's; the few the probe does not see are sent for
  // no full socket (the handshake's SYN-ACK, the time-wait ACK).
  EXPECT_LE(d.tx_bytes, lo[2]);
  EXPECT_GE(d.tx_bytes, lo[2] - lo[2] / 100);
  EXPECT_LE(d.rx_bytes, lo[0]);
  EXPECT_GE(d.rx_bytes, lo[0] - lo[0] / 100);
}

}  // namespace
}  // namespace statlet::testing
