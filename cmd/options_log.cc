// --log.*: the daemon's own log lines (base/log.h).
#include "cmd/daemon_flags.h"

namespace statlet {

void RegisterLogFlags(FlagSet& flags, DaemonOptions* o) {
  using log::Format;
  using log::Level;
  FlagGroup log = flags.Group("log");
  log.Enum("level", &o->log_level,
           {{"debug", Level::kDebug}, {"info", Level::kInfo}, {"warn", Level::kWarn}, {"error", Level::kError}},
           "Only log messages with the given severity or above: debug, info, warn, error.");
  log.Enum("format", &o->log_format, {{"logfmt", Format::kLogfmt}, {"json", Format::kJson}},
           "Output format of log messages: logfmt or json.");
}

}  // namespace statlet
