// The tcp probe: a bounded transfer over a lossy veth between two namespaces; the
// retransmits belong to the sender's cgroup although they fire in softirq context.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>
#include <iostream>

#include "tests/bpf/probe_test_support.h"
#include "tests/bpf/tcp_send.h"
#include "tests/support/netns_pair.h"

namespace statlet::testing {
namespace {

constexpr int kPort = 5001;
constexpr size_t kPayload = 2 << 20;

// Receiver: listens in namespace b, reports readiness on `ready_fd`, reads to EOF and
// writes the byte count to `result_fd`.
int Receive(const std::string& ns, int ready_fd, int result_fd) {
  if (!NetnsPair::Enter(ns)) return 3;
  int ls = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(ls, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(kPort);
  inet_pton(AF_INET, NetnsPair::kAddrB, &addr.sin_addr);
  if (bind(ls, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 || listen(ls, 1) != 0) return 4;
  if (write(ready_fd, "r", 1) != 1) return 5;
  const uint64_t total = AcceptAndDrain(ls);
  if (total == 0) return 6;
  return write(result_fd, &total, sizeof(total)) == sizeof(total) ? 0 : 7;
}

// Sender: connects from namespace a, sends the payload, waits for the receiver's close.
// Returns the socket's own count of retransmitted segments (tcpi_total_retrans) << 8, or
// a small error code.
uint64_t Send(const std::string& ns) {
  if (!NetnsPair::Enter(ns)) return 3;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(kPort);
  inet_pton(AF_INET, NetnsPair::kAddrB, &addr.sin_addr);
  tcp_info info;
  if (int rc = SendAndDrain(addr, kPayload, &info); rc != 0) return static_cast<uint64_t>(rc);
  return uint64_t{info.tcpi_total_retrans} << 8;
}

TEST(TcpEventsProbe, RetransmitsOverLossyLinkBelongToSenderCgroup) {
  STATLET_REQUIRE_ROOT();
  auto probes = LoadAllProbes();
  ASSERT_TRUE(probes);
  ProbeCgroup sender_cg("tcp-send");
  ProbeCgroup receiver_cg("tcp-recv");
  ASSERT_TRUE(sender_cg.ok()) << sender_cg.error();
  ASSERT_TRUE(receiver_cg.ok()) << receiver_cg.error();
  NetnsPair net(UniqueName("statlet-bpf"));
  ASSERT_TRUE(net.ok());
  const std::string loss = net.AddLossAToB(10);
  ASSERT_FALSE(loss.empty()) << "neither tc netem nor nftables could drop packets";
  std::cout << "packet loss by " << loss << "\n";

  int ready[2], result[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(result), 0);
  Child receiver([&] { return Receive(net.b(), ready[1], result[1]); }, Child::kExits);
  ASSERT_TRUE(receiver.StartIn(receiver_cg));
  close(ready[1]);
  close(result[1]);
  char r;
  ASSERT_EQ(read(ready[0], &r, 1), 1) << "receiver did not start";

  const int64_t retrans_before = NetnsPair::TcpRetransSegs(net.a());
  ASSERT_GE(retrans_before, 0);
  Child sender([&] { return Send(net.a()); }, Child::kExits);
  ASSERT_TRUE(sender.StartIn(sender_cg));
  std::optional<uint64_t> sent = sender.Result(std::chrono::seconds(120));
  ASSERT_TRUE(sent.has_value());
  ASSERT_EQ(*sent & 0xff, 0u) << "sender failed";
  const uint64_t socket_retrans = *sent >> 8;
  int sender_status = sender.Wait(std::chrono::seconds(10));
  int receiver_status = receiver.Wait(std::chrono::seconds(10));
  ASSERT_TRUE(WIFEXITED(sender_status) && WEXITSTATUS(sender_status) == 0) << sender_status;
  ASSERT_TRUE(WIFEXITED(receiver_status) && WEXITSTATUS(receiver_status) == 0) << receiver_status;
  uint64_t received = 0;
  ASSERT_EQ(read(result[0], &received, sizeof(received)), static_cast<ssize_t>(sizeof(received)));
  close(ready[0]);
  close(result[0]);
  EXPECT_GE(received, kPayload);

  // The sender is the only TCP sender in namespace a: its retransmitted segments are the
  // namespace's (RetransSegs), and those of its data are its socket's own count
  // (tcpi_total_retrans, read before the close; a lost FIN adds one after it).
  const int64_t retrans_segs = NetnsPair::TcpRetransSegs(net.a()) - retrans_before;
  BpfCgroupStats s = CollectOne(*probes, sender_cg.id());
  ASSERT_TRUE(s.tcp_retransmits.has_value());
  std::cout << "sender: probe retransmits " << *s.tcp_retransmits << ", namespace RetransSegs rose " << retrans_segs
            << ", socket tcpi_total_retrans " << socket_retrans << "\n";
  EXPECT_GT(*s.tcp_retransmits, 0u);
  EXPECT_EQ(static_cast<int64_t>(*s.tcp_retransmits), retrans_segs);
  EXPECT_GE(*s.tcp_retransmits, socket_retrans);
  ASSERT_TRUE(s.tcp_drops.has_value());
  uint64_t by_reason = 0;
  for (const auto& [reason, n] : s.tcp_drop_reasons) {
    EXPECT_FALSE(reason.empty());
    by_reason += n;
  }
  EXPECT_EQ(*s.tcp_drops, by_reason);
  std::cout << "sender: retransmits=" << *s.tcp_retransmits << " drops=" << *s.tcp_drops << "\n";

  BpfCgroupStats rs = CollectOne(*probes, receiver_cg.id());
  ASSERT_TRUE(rs.tcp_drops.has_value());
  for (const auto& [reason, n] : rs.tcp_drop_reasons) std::cout << "receiver drop " << reason << " = " << n << "\n";
  const int64_t dropped = net.DroppedAToB();
  std::cout << loss << " dropped " << dropped << " packets from a to b\n";
  ASSERT_GT(dropped, 0);
  if (loss == "nftables") {
    // Dropped at b's input hook after early demux found the receiving socket: the drops
    // belong to the receiver's cgroup, with the kernel's reason, one per packet the rule
    // dropped (the handshake's packets, before there is a socket, are not).
    const uint64_t netfilter = rs.tcp_drop_reasons["NETFILTER_DROP"];
    EXPECT_LE(static_cast<int64_t>(netfilter), dropped);
    EXPECT_GE(static_cast<int64_t>(netfilter) + 3, dropped);
  }
}

}  // namespace
}  // namespace statlet::testing
