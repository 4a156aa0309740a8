#include "tests/bpf/netns_pair.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

namespace statlet::testing {

int RunCommand(const std::vector<std::string>& argv) {
  pid_t pid = fork();
  if (pid < 0) return -1;
  if (pid == 0) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    int devnull = open("/dev/null", O_WRONLY);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);  // a failed first choice (netem) is expected on some kernels
    }
    execvp(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  if (waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

NetnsPair::NetnsPair(const std::string& prefix) : a_(prefix + "-a"), b_(prefix + "-b") {
  const std::string va = "veth-" + std::to_string(getpid() % 100000) + "a";
  const std::string vb = "veth-" + std::to_string(getpid() % 100000) + "b";
  ok_ = RunCommand({"ip", "netns", "add", a_}) == 0 && RunCommand({"ip", "netns", "add", b_}) == 0 &&
        RunCommand({"ip", "link", "add", va, "netns", a_, "type", "veth", "peer", "name", vb, "netns", b_}) == 0 &&
        RunCommand({"ip", "-n", a_, "addr", "add", std::string(kAddrA) + "/24", "dev", va}) == 0 &&
        RunCommand({"ip", "-n", b_, "addr", "add", std::string(kAddrB) + "/24", "dev", vb}) == 0 &&
        RunCommand({"ip", "-n", a_, "link", "set", va, "up"}) == 0 &&
        RunCommand({"ip", "-n", b_, "link", "set", vb, "up"}) == 0 &&
        RunCommand({"ip", "-n", a_, "link", "set", "lo", "up"}) == 0 &&
        RunCommand({"ip", "-n", b_, "link", "set", "lo", "up"}) == 0;
  veth_a_ = va;
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
