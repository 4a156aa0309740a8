// Which Memory QoS rules to judge a node by: the kubelet's version (the Node object's
// status.nodeInfo.kubeletVersion when an API server is configured, else a flag) decides the
// generation and its defaults; the kubelet's configuration file sets the feature gate,
// memoryThrottlingFactor and memoryReservationPolicy; statlet's flags override all three.
// Where the version is not known nothing is judged, and the log and the info series say so.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "collector/memory_qos_inputs.h"
#include "kube/kubelet_config.h"

namespace statlet::kube {

// statlet's own Memory QoS settings (the --memory-qos.* flags).
struct MemoryQosFlags {
  std::string kubelet_config = "/var/lib/kubelet/config.yaml";  // "": do not read one
  std::string kubelet_version;                                  // used when no API server reports the Node's
  std::optional<bool> feature_gate;
  bool throttling_factor_set = false;
  std::optional<double> throttling_factor;  // set and absent: "none", no memory.high
  std::optional<MemoryReservationPolicy> reservation;
};

// The configuration file as last read.
struct KubeletConfigRead {
  std::string path;
  enum class State : uint8_t { kOff, kAbsent, kRead, kError } state = State::kOff;
  std::string error;  // kError: why
  KubeletConfigFacts facts;
};

// Pure: the basis from the flags, the file and the API server's version ("" when none).
MemoryQosBasis JudgeMemoryQos(const MemoryQosFlags& flags, const KubeletConfigRead& config,
                              const std::string& apiserver_version, uint64_t page_size);

// One line for the log: what is judged by, and where each setting came from.
std::string DescribeBasis(const MemoryQosBasis& b);

// Reads the configuration file (once, then again whenever its inode, size or mtime change:
// one stat per call) and judges; logs when the result changes.
class KubeletSettings : public MemoryQosSettingsSource {
 public:
  // log: whether each change of the result is logged (the daemon; a one-shot command puts
  // the note in its output instead).
  KubeletSettings(MemoryQosFlags flags, uint64_t page_size, bool log = true);
  std::shared_ptr<const MemoryQosBasis> Current(const std::string& apiserver_kubelet_version) override;
  // Re-reads the file now (for tests and start-up).
  void Reload();

 private:
  bool ConfigChanged();  // stats the file; true when it differs from the last read
  void ReadConfig();

  const MemoryQosFlags flags_;
  const uint64_t page_size_;
  const bool log_;
  std::mutex mu_;
  KubeletConfigRead config_;
  struct FileId {
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    int64_t mtime_ns = 0;
    bool operator==(const FileId&) const = default;
  } file_;
  bool read_once_ = false;
  std::string judged_version_;
  std::shared_ptr<const MemoryQosBasis> basis_;
  std::string last_logged_;
};

}  // namespace statlet::kube
