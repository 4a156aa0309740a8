#include "cmd/commands.h"

namespace statlet {
int RunStatsCommand(int argc, char** argv) { return 2; }
}  // namespace statlet
