#include <cstring>

#include "cmd/commands.h"

int main(int argc, char** argv) {
  if (argc > 1 && std::strcmp(argv[1], "stats") == 0) return statlet::RunStatsCommand(argc - 1, argv + 1);
  if (argc > 1 && std::strcmp(argv[1], "pull") == 0) return statlet::RunPullCommand(argc - 1, argv + 1);
  if (argc > 1 && std::strcmp(argv[1], "top") == 0) return statlet::RunTopCommand(argc - 1, argv + 1);
  return statlet::RunDaemonCommand(argc, argv);
}
