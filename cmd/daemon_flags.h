// The daemon's flags, one function per subsystem, each in its own file
// (cmd/options_<subsystem>.cc) and binding the flags to that subsystem's part of
// DaemonOptions. RegisterDaemonFlags gathers them in --help order.
//
// A new flag is one typed helper call (cmd/flag_set.h) in its subsystem's file, next to
// the others of its group: its name, the field it sets (whose initial value --help shows
// as the default), its range or rule and its help; the config-file key follows from the
// name. A new subsystem is a file, its function here and a line in RegisterDaemonFlags.
#pragma once

#include "cmd/daemon_options.h"
#include "cmd/flag_set.h"

namespace statlet {

void RegisterWebFlags(FlagSet& flags, DaemonOptions* o);        // --web.*: the HTTP server of /metrics
void RegisterLogFlags(FlagSet& flags, DaemonOptions* o);        // --log.*
void RegisterCollectorFlags(FlagSet& flags, DaemonOptions* o);  // --collector.*: what a collection reads
void RegisterMemoryQosFlags(FlagSet& flags, DaemonOptions* o);  // --memory-qos.*: kubelet, pods, stall detector
void RegisterMetricsFlags(FlagSet& flags, DaemonOptions* o);    // --metrics.*: the value rules of every edge
void RegisterCriFlags(FlagSet& flags, DaemonOptions* o);        // --cri.*: the CRI stats server
void RegisterRuntimeFlags(FlagSet& flags, DaemonOptions* o);    // --runtime.*: the node runtime client
void RegisterPullFlags(FlagSet& flags, DaemonOptions* o);       // --pull.*: image pulls
void RegisterOtlpFlags(FlagSet& flags, DaemonOptions* o);       // --otlp.*: OTLP push
void RegisterBpfFlags(FlagSet& flags, DaemonOptions* o);        // --bpf, --bpf.*: eBPF probes

// What one flag cannot judge alone: --cri.proxy needs --cri.listen and --runtime.endpoint.
Status CheckCriFlags(const cri::CriDaemonOptions& c);
// The progress streams against the web listener's connection bounds (docs/http.md).
Status CheckStreamFlags(const DaemonOptions& o);

// --metrics.enable/disable/drop-labels into metrics.selection, and what it leaves unread
// out of the collector's options.
Status ApplyMetricSelection(DaemonOptions* o);

// Every flag of the daemon, bound to *o; the defaults --help shows are *o's values now.
void RegisterDaemonFlags(FlagSet& flags, DaemonOptions* o);

}  // namespace statlet
