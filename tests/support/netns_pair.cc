#include "tests/support/netns_pair.h"

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <thread>
#include <vector>

#include "tests/support/child_process.h"

namespace statlet::testing {

NetnsPair::NetnsPair(const std::string& prefix)
    : a_(prefix + "-a"),
      b_(prefix + "-b"),
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
    return loss_ = "netem";
  }
  const std::vector<std::string> nft = {"ip", "netns", "exec", b_, "nft"};
  auto run_nft = [&](std::vector<std::string> args) {
    args.insert(args.begin(), nft.begin(), nft.end());
    return RunCommand(args) == 0;
  };
  if (run_nft({"add", "table", "inet", "statlet_loss"}) &&
      run_nft({"add", "chain", "inet", "statlet_loss", "in", "{ type filter hook input priority 0 ; }"}) &&
      run_nft({"add", "rule", "inet", "statlet_loss", "in", "ip", "saddr", kAddrA, "numgen", "random", "mod", "100",
               "lt", pct, "counter", "drop"})) {
    return loss_ = "nftables";
  }
  return "";
}

int64_t NetnsPair::DroppedAToB() const {
  std::string out;
  if (loss_ == "netem") {
    out = CommandOutput({"tc", "-n", a_, "-s", "qdisc", "show", "dev", veth_a_});
  } else if (loss_ == "nftables") {
    out = CommandOutput({"ip", "netns", "exec", b_, "nft", "list", "chain", "inet", "statlet_loss", "in"});
  } else {
    return -1;
  }
  // tc: "Sent N bytes M pkt (dropped D, ..."; nft: "... counter packets P bytes B drop".
  const char* key = loss_ == "netem" ? "dropped " : "counter packets ";
  size_t pos = out.find(key);
  if (pos == std::string::npos) return -1;
  return std::strtoll(out.c_str() + pos + std::strlen(key), nullptr, 10);
}

int64_t NetnsPair::TcpRetransSegs(const std::string& name) {
  int64_t segs = -1;
  // setns moves one thread: read the namespace's snmp file from a thread of its own.
  std::thread reader([&] {
    if (!Enter(name)) return;
    std::ifstream snmp("/proc/thread-self/net/snmp");
    std::string header, values;
    while (std::getline(snmp, header) && std::getline(snmp, values)) {
      if (header.rfind("Tcp:", 0) != 0) continue;
      std::istringstream keys(header), nums(values);
      std::string key, num;
      while (keys >> key && nums >> num) {
        if (key == "RetransSegs") segs = std::strtoll(num.c_str(), nullptr, 10);
      }
    }
  });
  reader.join();
  return segs;
}

bool NetnsPair::Enter(const std::string& name) {
  int fd = open(("/run/netns/" + name).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = setns(fd, CLONE_NEWNET) == 0;
  close(fd);
  return ok;
}

}  // namespace statlet::testing
