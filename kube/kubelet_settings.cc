#include "kube/kubelet_settings.h"

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <sstream>

#include "base/log.h"
#include "collector/memory_qos_rules.h"

namespace statlet::kube {
namespace {

constexpr size_t kMaxConfigBytes = 1 << 20;

std::string Factor(const std::optional<double>& f) {
  if (!f) return "none";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", *f);
  return buf;
}

void AddNote(MemoryQosBasis* b, const std::string& note) {
  if (!b->note.empty()) b->note += "; ";
  b->note += note;
}

}  // namespace

MemoryQosBasis JudgeMemoryQos(const MemoryQosFlags& flags, const KubeletConfigRead& config,
                              const std::string& apiserver_version, uint64_t page_size) {
  MemoryQosBasis b;
  b.rules.page_size = page_size;
  using State = KubeletConfigRead::State;
  switch (config.state) {
    case State::kOff: b.config_state = "off"; break;
    case State::kAbsent: b.config_state = "absent"; break;
    case State::kRead: b.config_state = "read"; break;
    case State::kError: b.config_state = "error: " + config.error; break;
  }
  if (config.state == State::kRead) b.config_file = config.path;

  // The version: the Node object's, else the flag's.
  if (!apiserver_version.empty()) {
    b.kubelet_version = apiserver_version;
    b.version_source = KubeletSettingSource::kApiServer;
  } else if (!flags.kubelet_version.empty()) {
    b.kubelet_version = flags.kubelet_version;
    b.version_source = KubeletSettingSource::kFlag;
  }
  if (b.kubelet_version.empty()) {
    b.note =
        "the kubelet's version is unknown (no API server reports this node's Node object and "
        "--memory-qos.kubelet-version is not set): no expected knobs";
    return b;
  }
  const std::optional<int> minor = KubeletMinorVersion(b.kubelet_version);
  if (!minor) {
    b.note = "kubelet version \"" + b.kubelet_version + "\" is not a v1.N version: no expected knobs";
    return b;
  }
  if (config.state == State::kError) {
    b.note = "the kubelet's configuration " + config.path + " cannot be read (" + config.error + "): no expected knobs";
    return b;
  }
  const MemoryQosGeneration g = GenerationOfMinor(*minor);
  b.beyond_known = *minor > kNewestKnownMinor;
  if (b.beyond_known) {
    AddNote(&b, "no upstream facts beyond v1." + std::to_string(kNewestKnownMinor) + ": judged by its rules");
  }
  b.rules.generation = g;
  const KubeletConfigFacts& f = config.facts;
  for (const std::string& w : f.warnings) AddNote(&b, config.path + ": " + w);

  // The feature gate.
  if (flags.feature_gate) {
    b.rules.enabled = *flags.feature_gate;
    b.gate_source = KubeletSettingSource::kFlag;
  } else if (f.memory_qos_gate) {
    b.rules.enabled = *f.memory_qos_gate;
    b.gate_source = KubeletSettingSource::kConfigFile;
  } else {
    b.rules.enabled = DefaultFeatureGate(g);
    b.gate_source = KubeletSettingSource::kDefault;
  }
  if (g == MemoryQosGeneration::kNone) {
    b.rules.enabled = false;
    AddNote(&b, "a kubelet before v1.22 has no Memory QoS");
  }

  // memoryThrottlingFactor: absent or null takes the version's default.
  if (flags.throttling_factor_set) {
    b.rules.throttling_factor = flags.throttling_factor;
    b.factor_source = KubeletSettingSource::kFlag;
  } else if (f.throttling_factor) {
    b.rules.throttling_factor = f.throttling_factor;
    b.factor_source = KubeletSettingSource::kConfigFile;
  } else {
    b.rules.throttling_factor = DefaultThrottlingFactor(g);
    b.factor_source = KubeletSettingSource::kDefault;
  }

  // memoryReservationPolicy: v1.36 and later.
  b.rules.reservation = DefaultReservationPolicy(g);
  b.reservation_source = KubeletSettingSource::kDefault;
  if (HasReservationPolicy(g)) {
    if (flags.reservation) {
      b.rules.reservation = *flags.reservation;
      b.reservation_source = KubeletSettingSource::kFlag;
    } else if (f.reservation_policy) {
      MemoryReservationPolicy p;
      if (!ParseMemoryReservationPolicy(*f.reservation_policy, &p)) {
        b.rules.generation = MemoryQosGeneration::kUnknown;
        AddNote(&b, "memoryReservationPolicy \"" + *f.reservation_policy +
                        "\" is neither None nor TieredReservation, the policies whose rules are known: no "
                        "expected knobs");
        return b;
      }
      b.rules.reservation = p;
      b.reservation_source = KubeletSettingSource::kConfigFile;
    }
  } else if (flags.reservation || f.reservation_policy) {
    AddNote(&b, "memoryReservationPolicy is ignored: kubelet " + b.kubelet_version + " predates it");
  }

  // The v1.37 blog: "The kubelet validates that these fields are not set when the feature
  // gate is disabled and rejects the configuration otherwise."
  if (g == MemoryQosGeneration::kV1_37 && !b.rules.enabled && (f.throttling_factor || f.reservation_policy)) {
    AddNote(&b, "with MemoryQoS off, kubelet " + b.kubelet_version +
                    " refuses a configuration that sets memoryThrottlingFactor or memoryReservationPolicy");
  }
  if (config.state == State::kAbsent) {
    AddNote(&b, "no kubelet configuration at " + config.path + ": judged by the defaults of kubelet " +
                    b.kubelet_version + " and statlet's flags");
  }
  return b;
}

std::string DescribeBasis(const MemoryQosBasis& b) {
  const MemoryQosRules& r = b.rules;
  std::string s = "memory qos: ";
  if (r.generation == MemoryQosGeneration::kUnknown) {
    s += "nothing judged";
  } else {
    s += "judged by kubelet " + b.kubelet_version + " (" + KubeletSettingSourceName(b.version_source) + "): rules " +
         MemoryQosRulesLabel(r) + ", MemoryQoS " + (r.enabled ? "on" : "off") + " (" +
         KubeletSettingSourceName(b.gate_source) + "), memoryThrottlingFactor " + Factor(r.throttling_factor) + " (" +
         KubeletSettingSourceName(b.factor_source) + ")";
    if (HasReservationPolicy(r.generation)) {
      s += ", memoryReservationPolicy " + std::string(MemoryReservationPolicyName(r.reservation)) + " (" +
           KubeletSettingSourceName(b.reservation_source) + ")";
    }
  }
  s += "; kubelet configuration " + (b.config_file.empty() ? b.config_state : b.config_file);
  if (!b.note.empty()) s += "; " + b.note;
  return s;
}

KubeletSettings::KubeletSettings(MemoryQosFlags flags, uint64_t page_size, bool log)
    : flags_(std::move(flags)), page_size_(page_size), log_(log) {
  config_.path = flags_.kubelet_config;
}

bool KubeletSettings::ConfigChanged() {
  if (flags_.kubelet_config.empty()) return !read_once_;
  FileId id;
  struct stat st;
  if (stat(flags_.kubelet_config.c_str(), &st) == 0) {
    id.exists = true;
    id.dev = st.st_dev;
    id.ino = st.st_ino;
    id.size = st.st_size;
    id.mtime_ns = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
  }
  const bool changed = !read_once_ || !(id == file_);
  file_ = id;
  return changed;
}

void KubeletSettings::ReadConfig() {
  read_once_ = true;
  KubeletConfigRead c;
  c.path = flags_.kubelet_config;
  if (c.path.empty()) {
    config_ = c;
    return;
  }
  std::ifstream in(c.path, std::ios::binary);
  if (!in) {
    c.state = file_.exists ? KubeletConfigRead::State::kError : KubeletConfigRead::State::kAbsent;
    if (c.state == KubeletConfigRead::State::kError) c.error = "cannot open it";
    config_ = c;
    return;
  }
  std::string text(kMaxConfigBytes + 1, '\0');
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<size_t>(in.gcount()));
  if (text.size() > kMaxConfigBytes) {
    c.state = KubeletConfigRead::State::kError;
    c.error = "larger than 1 MiB";
  } else if (auto facts = ParseKubeletConfig(text); !facts.ok()) {
    c.state = KubeletConfigRead::State::kError;
    c.error = facts.status().message();
  } else {
    c.state = KubeletConfigRead::State::kRead;
    c.facts = std::move(*facts);
  }
  config_ = std::move(c);
}

void KubeletSettings::Reload() {
  std::lock_guard<std::mutex> lock(mu_);
  ConfigChanged();
  ReadConfig();
  basis_.reset();
}

std::shared_ptr<const MemoryQosBasis> KubeletSettings::Current(const std::string& apiserver_kubelet_version) {
  std::lock_guard<std::mutex> lock(mu_);
  const bool file_changed = ConfigChanged();
  if (file_changed) ReadConfig();
  if (basis_ && !file_changed && apiserver_kubelet_version == judged_version_) return basis_;
  judged_version_ = apiserver_kubelet_version;
  auto b =
      std::make_shared<const MemoryQosBasis>(JudgeMemoryQos(flags_, config_, apiserver_kubelet_version, page_size_));
  const std::string line = DescribeBasis(*b);
  if (log_ && line != last_logged_) {
    if (b->rules.generation == MemoryQosGeneration::kUnknown) log::Warn(line);
    else log::Info(line);
    last_logged_ = line;
  }
  basis_ = std::move(b);
  return basis_;
}

}  // namespace statlet::kube
