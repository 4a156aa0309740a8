// Two named network namespaces joined by a veth pair (iproute2), removed on destruction.
#pragma once

#include <cstdint>
#include <string>

namespace statlet::testing {

class NetnsPair {
 public:
  // Namespaces "<prefix>-a" (kAddrA/24 on veth_a()) and "<prefix>-b" (kAddrB/24 on
  // veth_b()); `prefix` must be unique on the host (UniqueName).
  explicit NetnsPair(const std::string& prefix);
  ~NetnsPair();
  NetnsPair(const NetnsPair&) = delete;
  NetnsPair& operator=(const NetnsPair&) = delete;

  bool ok() const { return ok_; }
  const std::string& a() const { return a_; }
  const std::string& b() const { return b_; }
  const std::string& veth_a() const { return veth_a_; }
  const std::string& veth_b() const { return veth_b_; }
  static constexpr const char* kAddrA = "10.231.0.1";
  static constexpr const char* kAddrB = "10.231.0.2";
  // Loses `percent` % of the packets from a to b: `tc netem loss` on a's veth egress, or,
  // on kernels without sch_netem, an nftables rule dropping them at random on b's input.
  // Returns the mechanism used ("netem", "nftables"), or "" when neither works.
  std::string AddLossAToB(int percent);
  // Packets the loss of AddLossAToB dropped so far (tc's qdisc "dropped" count, or the
  // nftables rule's counter); -1 when unreadable.
  int64_t DroppedAToB() const;
  // A namespace's TCP RetransSegs (/proc/net/snmp as that namespace sees it); -1 on error.
  static int64_t TcpRetransSegs(const std::string& name);
  // Moves the calling thread into namespace `name`.
  static bool Enter(const std::string& name);

 private:
  std::string a_, b_, veth_a_, veth_b_;
  bool ok_ = false;
  std::string loss_;  // "netem", "nftables" or ""
};

}  // namespace statlet::testing
