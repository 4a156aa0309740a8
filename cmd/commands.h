// Entry points of statlet's subcommands; each parses its own flags.
#pragma once

namespace statlet {
int RunStatsCommand(int argc, char** argv);   // statlet stats ...
int RunDaemonCommand(int argc, char** argv);  // statlet [flags]
int RunPullCommand(int argc, char** argv);    // statlet pull ...
}  // namespace statlet
