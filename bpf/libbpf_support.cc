// libbpf logging routed to statlet's log, and libbpf errors as Status values.
#include <bpf/libbpf.h>

#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <mutex>
#include <string>

#include "base/log.h"
#include "bpf/probe.h"

namespace statlet::bpf {
namespace {

thread_local std::string t_last_warning;

int PrintToLog(enum libbpf_print_level level, const char* format, va_list args) {
  char buf[1024];
  int n = vsnprintf(buf, sizeof(buf), format, args);
  if (n <= 0) return 0;
  std::string line(buf, std::min<size_t>(n, sizeof(buf) - 1));
  while (!line.empty() && (line.back() == '\n' || line.back() == ' ')) line.pop_back();
  if (line.empty()) return 0;
  // Warnings are kept for the probe's error message; the probe logs one line itself.
  if (level == LIBBPF_WARN) t_last_warning = line;
  log::Debug("libbpf: " + line);
  return 0;
}

}  // namespace

std::string LastLibbpfMessage() { return t_last_warning; }

void InstallLibbpfLogger() {
  static std::once_flag once;
  std::call_once(once, [] { libbpf_set_print(PrintToLog); });
}

Status LibbpfError(int err, const char* what) {
  if (err > 0) err = -err;
  std::string msg = std::string(what) + ": " + std::strerror(-err);
  std::string detail = LastLibbpfMessage();
  if (!detail.empty()) msg += " (libbpf: " + detail + ")";
  t_last_warning.clear();
  return Status(StatusCode::kUnavailable, msg);
}

}  // namespace statlet::bpf
