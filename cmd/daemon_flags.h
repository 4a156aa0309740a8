// The daemon's flags, one function per subsystem, each in its own file
// (cmd/options_<subsystem>.cc) and binding the flags to that subsystem's part of
// DaemonOptions. RegisterDaemonFlags gathers them in --help order.
#pragma once

#include "cmd/daemon_options.h"
#include "cmd/flag_set.h"

namespace statlet {

void RegisterWebFlags(FlagSet& flags, DaemonOptions* o);        // --web.*: the HTTP server of /metrics
void RegisterLogFlags(FlagSet& flags, DaemonOptions* o);        // --log.*
void RegisterCollectorFlags(FlagSet& flags, DaemonOptions* o);  // --collector.*: what a collection reads
void RegisterMemoryQosFlags(FlagSet& flags, DaemonOptions* o);  // --memory-qos.*: KEP-2570 view, stall detector
void RegisterMetricsFlags(FlagSet& flags, DaemonOptions* o);    // --metrics.*: the value rules of every edge
void RegisterCriFlags(FlagSet& flags, DaemonOptions* o);        // --cri.*: the CRI stats server
void RegisterRuntimeFlags(FlagSet& flags, DaemonOptions* o);    // --runtime.*: the node runtime client
void RegisterPullFlags(FlagSet& flags, DaemonOptions* o);       // --pull.*: image pulls
void RegisterOtlpFlags(FlagSet& flags, DaemonOptions* o);       // --otlp.*: OTLP push
void RegisterBpfFlags(FlagSet& flags, DaemonOptions* o);        // --bpf, --bpf.*: eBPF probes

// Every flag of the daemon, bound to *o; the defaults --help shows are *o's values now.
void RegisterDaemonFlags(FlagSet& flags, DaemonOptions* o);

}  // namespace statlet
