#include <cstring>

#include <absl/synchronization/mutex.h>

#include "cmd/commands.h"

int main(int argc, char** argv) {
  // gRPC's locks are abseil's Mutex, whose deadlock detection is on in Debian 12's abseil
  // (a profile of the CRI proxy's gRPC thread showed its lock graph): every lock
  // taken is recorded in one graph for the process, under a lock of its own
  // (bench/RESULTS.md). A lock-order cycle it suspected would also abort the program. Off
  // for every command, before any thread or gRPC starts.
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
  if (argc > 1 && std::strcmp(argv[1], "stats") == 0) return statlet::RunStatsCommand(argc - 1, argv + 1);
  if (argc > 1 && std::strcmp(argv[1], "pull") == 0) return statlet::RunPullCommand(argc - 1, argv + 1);
  if (argc > 1 && std::strcmp(argv[1], "top") == 0) return statlet::RunTopCommand(argc - 1, argv + 1);
  return statlet::RunDaemonCommand(argc, argv);
}
