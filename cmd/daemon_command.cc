#include <cstdio>

#include "cmd/commands.h"

namespace statlet {
int RunDaemonCommand(int argc, char** argv) {
  std::fprintf(stderr, "statlet: the daemon is not built yet; use 'statlet stats'\n");
  return 2;
}
}  // namespace statlet
