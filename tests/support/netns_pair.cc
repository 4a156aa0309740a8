#include "tests/support/netns_pair.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <vector>

#include "tests/support/child_process.h"

namespace statlet::testing {

NetnsPair::NetnsPair(const std::string& prefix)
    : a_(prefix + "-a"), b_(prefix + "-b"),
      // Created inside the namespaces; unique anyway, so a leftover never collides.
      veth_a_("veth-" + std::to_string(getpid() % 100000) + "a"),
      veth_b_("veth-" + std::to_string(getpid() % 100000) + "b") {
  ok_ = RunCommand({"ip", "netns", "add", a_}) == 0 && RunCommand({"ip", "netns", "add", b_}) == 0 &&
        RunCommand({"ip", "link", "add", veth_a_, "netns", a_, "type", "veth", "peer", "name", veth_b_, "netns", b_}) ==
            0 &&
        RunCommand({"ip", "-n", a_, "addr", "add", std::string(kAddrA) + "/24", "dev", veth_a_}) == 0 &&
        RunCommand({"ip", "-n", b_, "addr", "add", std::string(kAddrB) + "/24", "dev", veth_b_}) == 0 &&
        RunCommand({"ip", "-n", a_, "link", "set", veth_a_, "up"}) == 0 &&
        RunCommand({"ip", "-n", b_, "link", "set", veth_b_, "up"}) == 0 &&
        RunCommand({"ip", "-n", a_, "link", "set", "lo", "up"}) == 0 &&
        RunCommand({"ip", "-n", b_, "link", "set", "lo", "up"}) == 0;
}

NetnsPair::~NetnsPair() {
  RunCommand({"ip", "netns", "del", a_});  // takes the veth pair with it
  RunCommand({"ip", "netns", "del", b_});
}

std::string NetnsPair::AddLossAToB(int percent) {
  const std::string pct = std::to_string(percent);
  if (RunCommand({"tc", "-n", a_, "qdisc", "add", "dev", veth_a_, "root", "netem", "loss", pct + "%"}) == 0) {
    return "netem";
  }
  const std::vector<std::string> nft = {"ip", "netns", "exec", b_, "nft"};
  auto run_nft = [&](std::vector<std::string> args) {
    args.insert(args.begin(), nft.begin(), nft.end());
    return RunCommand(args) == 0;
  };
  if (run_nft({"add", "table", "inet", "statlet_loss"}) &&
      run_nft({"add", "chain", "inet", "statlet_loss", "in", "{ type filter hook input priority 0 ; }"}) &&
      run_nft({"add", "rule", "inet", "statlet_loss", "in", "ip", "saddr", kAddrA, "numgen", "random", "mod", "100",
               "lt", pct, "drop"})) {
    return "nftables";
  }
  return "";
}

bool NetnsPair::Enter(const std::string& name) {
  int fd = open(("/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  return ok;
}

}  // namespace statlet::testing
