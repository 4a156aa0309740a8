// statlet_vm_workload <subcommand> [--flag value]...: see workload.h.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "tests/vm/workload.h"

namespace statlet::vmtest {

bool Flags::Parse(int argc, char** argv) {
  for (int i = 0; i < argc; i += 2) {
    if (std::strncmp(argv[i], "--", 2) != 0 || i + 1 >= argc) return false;
    values_[argv[i] + 2] = argv[i + 1];
  }
  return true;
}

std::string Flags::Get(const std::string& name, const std::string& fallback) const {
  auto it = values_.find(name);
  return it == values_.end() ? fallback : it->second;
}

uint64_t Flags::GetBytes(const std::string& name, uint64_t fallback) const {
  auto it = values_.find(name);
  if (it == values_.end()) return fallback;
  char* end = nullptr;
  uint64_t v = std::strtoull(it->second.c_str(), &end, 10);
  switch (*end) {
    case 'K': return v << 10;
    case 'M': return v << 20;
    case 'G': return v << 30;
    default: return v;
  }
}

int Fail(const char* what) {
  std::fprintf(stderr, "statlet_vm_workload: %s: %s\n", what, std::strerror(errno));
  return 1;
}

bool WriteReport(const std::string& path, const std::string& report) {
  if (path.empty()) return true;
  std::string tmp = path + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = ::write(fd, report.data(), report.size()) == static_cast<ssize_t>(report.size());
  ok = (::close(fd) == 0) && ok;
  return ok && ::rename(tmp.c_str(), path.c_str()) == 0;
}

void PauseForever() {
  for (;;) ::pause();
}

}  // namespace statlet::vmtest

int main(int argc, char** argv) {
  using namespace statlet::vmtest;
  struct Sub {
    const char* name;
    int (*run)(const Flags&);
  };
  static const Sub kSubs[] = {
      {"burn", RunBurn},
      {"alloc", RunAlloc},
      {"oom-loop", RunOomLoop},
      {"forker", RunForker},
      {"dio", RunDirectIo},
      {"dirty", RunDirty},
      {"recv", RunRecv},
      {"send", RunSend},
      {"alloc-loop", RunAllocLoop},
      {"alloc-steps", RunAllocSteps},
      {"cache-reader", RunCacheReader},
  };
  if (argc >= 2 && std::strcmp(argv[1], "pause") == 0) PauseForever();
  for (const Sub& s : kSubs) {
    if (argc < 2 || std::strcmp(argv[1], s.name) != 0) continue;
    Flags flags;
    if (!flags.Parse(argc - 2, argv + 2)) {
      std::fprintf(stderr, "statlet_vm_workload %s: flags are --name value pairs\n", s.name);
      return 2;
    }
    return s.run(flags);
  }
  std::fprintf(stderr,
               "usage: statlet_vm_workload pause|burn|alloc|oom-loop|forker|dio|dirty|recv|send|alloc-loop|alloc-steps|"
               "cache-reader ...\n");
  return 2;
}
