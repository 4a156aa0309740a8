// libbpf logging routed to statlet's log, and libbpf errors as Status values.
#include <bpf/libbpf.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "base/log.h"
#include "bpf/probe.h"

namespace statlet::bpf {
namespace {

// The last few lines libbpf warned with on this thread (verifier log lines included).
thread_local std::vector<std::string> t_warnings;
constexpr size_t kKeptWarnings = 3;

bool IsNoise(const std::string& line) {
  return line.rfind("-- ", 0) == 0 || line.rfind("processed ", 0) == 0 ||
         line.find("failed to load BPF skeleton") != std::string::npos;
}

int PrintToLog(enum libbpf_print_level level, const char* format, va_list args) {
  char buf[4096];
  int n = vsnprintf(buf, sizeof(buf), format, args);
  if (n <= 0) return 0;
  std::string text(buf, std::min<size_t>(n, sizeof(buf) - 1));
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(start, end - start);
    start = end + 1;
    while (!line.empty() && line.back() == ' ') line.pop_back();
    if (line.empty()) continue;
    // Warnings are kept for the probe's error message; the probe logs one line itself.
    if (level == LIBBPF_WARN && !IsNoise(line)) {
      if (t_warnings.size() == kKeptWarnings) t_warnings.erase(t_warnings.begin());
      t_warnings.push_back(line);
    }
    log::Debug("libbpf: " + line);
  }
  return 0;
}

}  // namespace

std::string LastLibbpfMessage() {
  std::string out;
  for (const std::string& w : t_warnings) {
    if (!out.empty()) out += " | ";
    out += w.rfind("libbpf: ", 0) == 0 ? w.substr(8) : w;
  }
  return out;
}

void ClearLibbpfMessages() { t_warnings.clear(); }

void InstallLibbpfLogger() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(PrintToLog); });
}

const struct bpf_object_open_opts* ProbeOpenOpts() {
  static const bpf_object_open_opts* opts = [] {
    auto* o = new bpf_object_open_opts{};
    o->sz = sizeof(*o);
    // Kernels without it have no BTF at all, and libbpf finds nothing better.
    if (access("/sys/kernel/btf/vmlinux", R_OK) == 0) o->btf_custom_path = "/sys/kernel/btf/vmlinux";
    return o;
  }();
  return opts;
}

Status LibbpfError(int err, const char* what) {
  if (err > 0) err = -err;
  std::string msg = std::string(what) + ": " + std::strerror(-err);
  std::string detail = LastLibbpfMessage();
  if (!detail.empty()) msg += " (libbpf: " + detail + ")";
  t_warnings.clear();
  return Status(StatusCode::kUnavailable, msg);
}

}  // namespace statlet::bpf
