#!/usr/bin/python3
"""Writes statlet-node.json and statlet-pod.json beside this script.

The dashboards are long lists of nearly identical panels; writing them from one small
table keeps the selectors, rate windows, legends and layout the same everywhere. The JSON
files are what users import and are committed; edit this script and run it again
(`/usr/bin/python3 deploy/dashboards/generate.py`) rather than editing them by hand.
memory-qos.json is kept by hand and is not written here.
"""

import json
import os

DS = {"type": "prometheus", "uid": "${datasource}"}
RI = "$__rate_interval"


# ------------------------------------------------------------------------ building blocks
def variable(name, query, label=None, all_value=None):
    v = {
        "name": name,
        "type": "query",
        "datasource": DS,
        "query": query,
        "refresh": 2,  # on time range change: pods come and go
        "sort": 1,
        "includeAll": True,
        "multi": True,
        "current": {},
    }
    if label:
        v["label"] = label
    if all_value:
        v["allValue"] = all_value
    return v


# The cluster label that multi-cluster setups (Thanos, Mimir, external labels of a shared
# store…) put on every series, as kubernetes-mixin's dashboards select it. "All" is `.*`,
# which also matches series without the label: a single cluster has no values and still
# shows everything.
def cluster_variable(metric):
    return variable("cluster", f"label_values({metric}, cluster)", all_value=".*")


def datasource_variable():
    return {"name": "datasource", "type": "datasource", "query": "prometheus", "current": {}}


def target(ref, expr, legend, **extra):
    t = {"refId": ref, "expr": expr, "legendFormat": legend, "datasource": DS}
    t.update(extra)
    return t


def targets(*pairs, **extra):
    return [target(chr(ord("A") + i), expr, legend, **extra) for i, (expr, legend) in enumerate(pairs)]


def legend_options(calcs=("lastNotNull", "max")):
    return {
        "legend": {"displayMode": "table", "placement": "bottom", "calcs": list(calcs)},
        "tooltip": {"mode": "multi"},
    }


def timeseries(title, unit, tgts, description="", stack=False, overrides=None, w=12, h=8):
    defaults = {"unit": unit}
    if stack:
        defaults["custom"] = {"stacking": {"mode": "normal"}, "fillOpacity": 20}
    return {
        "type": "timeseries",
        "title": title,
        "description": description,
        "datasource": DS,
        "fieldConfig": {"defaults": defaults, "overrides": overrides or []},
        "options": legend_options(),
        "targets": tgts,
        "_size": (w, h),
    }


def stat(title, unit, expr, description="", w=4, h=4, decimals=None):
    defaults = {"unit": unit}
    if decimals is not None:
        defaults["decimals"] = decimals
    return {
        "type": "stat",
        "title": title,
        "description": description,
        "datasource": DS,
        "fieldConfig": {"defaults": defaults, "overrides": []},
        "options": {"reduceOptions": {"calcs": ["lastNotNull"], "fields": "", "values": False},
                    "colorMode": "none", "graphMode": "area"},
        "targets": targets((expr, "")),
        "_size": (w, h),
    }


def heatmap(title, unit, tgt, description="", w=12, h=8, buckets=False):
    """buckets: the target returns cumulative histogram buckets (le); otherwise each series
    is one row of the heatmap (its legend names the row)."""
    return {
        "type": "heatmap",
        "title": title,
        "description": description,
        "datasource": DS,
        "fieldConfig": {"defaults": {}, "overrides": []},
        "options": {
            "calculate": False,
            "cellGap": 1,
            "color": {"mode": "scheme", "scheme": "Oranges", "steps": 64},
            "yAxis": {"axisPlacement": "left", "unit": unit if buckets else ""},
            "rowsFrame": {"layout": "auto"},
            "cellValues": {"unit": "" if buckets else unit},
            "tooltip": {"show": True, "yHistogram": False},
            "legend": {"show": True},
        },
        "targets": [tgt],
        "_size": (w, h),
    }


def table(title, tgt, columns, description="", w=24, h=7, time_column_unit="dateTimeAsIso"):
    """An instant table of one query; `columns` are the labels to show, in order; the value
    column is renamed to what it means."""
    order = {name: i for i, name in enumerate(columns)}
    order["Value"] = len(columns)
    return {
        "type": "table",
        "title": title,
        "description": description,
        "datasource": DS,
        "fieldConfig": {
            "defaults": {},
            "overrides": [{"matcher": {"id": "byName", "options": "Value"},
                           "properties": [{"id": "unit", "value": time_column_unit},
                                          {"id": "displayName", "value": "killed at"}]}],
        },
        "options": {"showHeader": True, "sortBy": [{"displayName": "killed at", "desc": True}]},
        "transformations": [{
            "id": "organize",
            "options": {"excludeByName": {"Time": True}, "indexByName": order,
                        "includeByName": {name: True for name in order}},
        }],
        "targets": [tgt],
        "_size": (w, h),
    }


def row(title, panels, collapsed=False):
    return {"_row": title, "_panels": panels, "_collapsed": collapsed}


def layout(rows):
    """Places rows and their panels on Grafana's 24-column grid, left to right, and numbers
    the panels; a collapsed row carries its panels inside it, as Grafana saves it."""
    out, next_id, y = [], 1, 0
    for r in rows:
        row_panel = {"id": next_id, "type": "row", "title": r["_row"], "collapsed": r["_collapsed"],
                     "gridPos": {"x": 0, "y": y, "w": 24, "h": 1}, "panels": []}
        next_id += 1
        y += 1
        out.append(row_panel)
        x, line_h = 0, 0
        for p in r["_panels"]:
            w, h = p.pop("_size")
            if x + w > 24:
                x, y, line_h = 0, y + line_h, 0
            p = {"id": next_id, **p, "gridPos": {"x": x, "y": y, "w": w, "h": h}}
            next_id += 1
            x += w
            line_h = max(line_h, h)
            (row_panel["panels"] if r["_collapsed"] else out).append(p)
        # A collapsed row is one grid unit high; Grafana moves its panels back on expanding.
        y = row_panel["gridPos"]["y"] + 1 if r["_collapsed"] else y + line_h
    return out


def dashboard(title, uid, tags, variables, rows, description):
    return {
        "title": title,
        "uid": uid,
        "description": description,
        "schemaVersion": 39,
        "version": 1,
        "editable": True,
        "tags": tags,
        "time": {"from": "now-1h", "to": "now"},
        "refresh": "30s",
        "templating": {"list": [datasource_variable()] + variables},
        "panels": layout(rows),
    }


# ------------------------------------------------------------------------ node overview
def node_dashboard():
    node = 'cluster=~"$cluster", job=~"$job", instance=~"$instance"'
    ctr = node + ', container!="", container!="POD"'
    by_ctr = "namespace, pod, container"
    legend_ctr = "{{namespace}}/{{pod}}/{{container}}"

    def psi(resource):
        some = f"container_pressure_{resource}_waiting_seconds_total"
        full = f"container_pressure_{resource}_stalled_seconds_total"
        return timeseries(
            f"{resource.upper() if resource != 'memory' else 'Memory'} pressure, top 5 containers",
            "percentunit",
            targets(
                (f"topk(5, sum by ({by_ctr}) (rate({some}{{{ctr}}}[{RI}])))", legend_ctr + " some"),
                (f"topk(5, sum by ({by_ctr}) (rate({full}{{{ctr}}}[{RI}])))", legend_ctr + " full"),
            ),
            description=f"Share of time some (at least one) or all runnable tasks of the container were "
                        f"stalled on {resource} (PSI, {resource}.pressure totals).",
            w=8,
        )

    rows = [
        row("Node totals", [
            stat("Container CPU", "suffix: cores",
                 f"sum(rate(container_cpu_usage_seconds_total{{{ctr}}}[{RI}]))",
                 "CPU time of every container per second (cores busy).", decimals=2),
            stat("Container memory working set", "bytes",
                 f"sum(container_memory_working_set_bytes{{{ctr}}})",
                 "Sum of the containers' working sets (usage minus inactive file cache)."),
            stat("Containers", "short",
                 f"count(max by ({by_ctr}) (container_last_seen{{{ctr}}}))",
                 "Containers statlet reports."),
            stat("Pods", "short",
                 f'count(max by (namespace, pod) (container_last_seen{{{node}, pod!=""}}))',
                 "Pods statlet reports."),
            stat("Pod network receive", "Bps",
                 f'sum(rate(container_network_receive_bytes_total{{{node}, pod!=""}}[{RI}]))',
                 "Bytes per second received by pods (their interfaces; loopback and veth left out)."),
            stat("OOM kills", "short",
                 f"sum(increase(container_oom_events_total{{{ctr}}}[$__range]))",
                 "Processes the OOM killer chose in containers over the dashboard's time range "
                 "(memory.events oom_kill).", decimals=0),
        ]),
        row("Top containers", [
            timeseries("Top 10 containers by CPU", "suffix: cores",
                       targets((f"topk(10, sum by ({by_ctr}) "
                                f"(rate(container_cpu_usage_seconds_total{{{ctr}}}[{RI}])))", legend_ctr)),
                       "Summed over the cpu label, so it works with and without --collector.per-cpu."),
            timeseries("Top 10 containers by memory working set", "bytes",
                       targets((f"topk(10, max by ({by_ctr}) (container_memory_working_set_bytes{{{ctr}}}))",
                                legend_ctr))),
            timeseries("Top 10 containers by working set / memory limit", "percentunit",
                       targets((f"topk(10, max by ({by_ctr}) (container_memory_working_set_bytes{{{ctr}}}) / "
                                f"max by ({by_ctr}) (container_spec_memory_limit_bytes{{{ctr}}} > 0))",
                                legend_ctr)),
                       "Containers with a memory limit only; near 100% the kernel reclaims, then OOM-kills."),
            timeseries("Top 10 containers by CFS throttling", "percentunit",
                       targets((f"topk(10, sum by ({by_ctr}) "
                                f"(rate(container_cpu_cfs_throttled_periods_total{{{ctr}}}[{RI}])) / "
                                f"sum by ({by_ctr}) (rate(container_cpu_cfs_periods_total{{{ctr}}}[{RI}])))",
                                legend_ctr)),
                       "Share of CFS periods in which the container hit its CPU quota (containers with a "
                       "CPU limit only)."),
        ]),
        row("Pressure (PSI)", [
            psi("cpu"),
            psi("memory"),
            psi("io"),
        ]),
        row("OOM kills", [
            timeseries("OOM kills (memory.events)", "short",
                       targets((f"sum by ({by_ctr}) (increase(container_oom_events_total{{{ctr}}}[{RI}]))",
                                legend_ctr)),
                       "The kernel's per-cgroup oom_kill count."),
            timeseries("OOM kills (eBPF, victim's cgroup)", "short",
                       targets((f"sum by ({by_ctr}) (increase(statlet_oom_kills_total{{{ctr}}}[{RI}]))",
                                legend_ctr)),
                       "Needs the eBPF oom probe (default probe set with --bpf=auto or on)."),
            table("Recent OOM kills",
                  target("A", f"statlet_oom_kill_timestamp_seconds{{{node}}} * 1000", "",
                         format="table", instant=True),
                  ["instance", "namespace", "pod", "container", "comm", "pid", "constraint"],
                  "The newest 64 kills since statlet started, with the victim's command and pid and "
                  "whether the container's limit (memcg) or node memory (global) was exhausted. Needs the "
                  "eBPF oom probe."),
        ]),
        row("statlet", [
            timeseries("Collection duration", "s",
                       targets((f"histogram_quantile(0.99, sum by (le, instance) "
                                f"(rate(statlet_collection_duration_seconds_bucket{{{node}}}[{RI}])))",
                                "{{instance}} p99"),
                               (f"histogram_quantile(0.5, sum by (le, instance) "
                                f"(rate(statlet_collection_duration_seconds_bucket{{{node}}}[{RI}])))",
                                "{{instance}} p50")),
                       "Time to read every cgroup file, namespace and probe of one snapshot.", w=8),
            timeseries("Cgroups reported", "short",
                       targets((f"statlet_cgroups_reported{{{node}}}", "{{instance}}")), w=8),
            timeseries("eBPF probes up", "short",
                       targets((f"statlet_bpf_probe_up{{{node}}}", "{{instance}} {{probe}}")),
                       "1 loaded and attached, 0 not (failed to load, not selected by --bpf.probes, or "
                       "--bpf=off).", w=8),
        ], collapsed=True),
    ]
    variables = [
        cluster_variable("container_cpu_usage_seconds_total"),
        variable("job", 'label_values(container_cpu_usage_seconds_total{cluster=~"$cluster"}, job)'),
        variable("instance", 'label_values(container_cpu_usage_seconds_total{cluster=~"$cluster", job=~"$job"}, instance)', "node"),
    ]
    return dashboard("statlet / Node overview", "statlet-node", ["statlet", "node"], variables, rows,
                     "The containers of one or more nodes as statlet serves them: totals, the top "
                     "consumers, pressure stalls and OOM kills.")


# ------------------------------------------------------------------------ pod view
def pod_dashboard():
    pod = 'cluster=~"$cluster", job=~"$job", instance=~"$instance", namespace=~"$namespace", pod=~"$pod"'
    ctr = pod + ', container=~"$container", container!="", container!="POD"'
    by = "pod, container"
    lg = "{{pod}}/{{container}}"
    tx_negative = [{"matcher": {"id": "byRegexp", "options": ".* tx$"},
                    "properties": [{"id": "custom.transform", "value": "negative-Y"}]}]

    def per_ctr(metric, legend_suffix, rate=True, extra=""):
        sel = ctr + extra
        inner = f"rate({metric}{{{sel}}}[{RI}])" if rate else f"{metric}{{{sel}}}"
        return (f"sum by ({by}) ({inner})", f"{lg} {legend_suffix}".rstrip())

    def psi(resource):
        return timeseries(
            f"{resource.upper() if resource != 'memory' else 'Memory'} pressure (PSI)", "percentunit",
            targets(per_ctr(f"container_pressure_{resource}_waiting_seconds_total", "some"),
                    per_ctr(f"container_pressure_{resource}_stalled_seconds_total", "full")),
            f"Share of time some or all runnable tasks of the container were stalled on {resource}.",
            w=8)

    cpu_row = row("CPU", [
        timeseries("CPU usage and limit", "suffix: cores",
                   targets(per_ctr("container_cpu_usage_seconds_total", ""),
                           (f"max by ({by}) (container_spec_cpu_quota{{{ctr}}} / "
                            f"container_spec_cpu_period{{{ctr}}})", f"{lg} limit")),
                   "Usage summed over the cpu label (works with and without --collector.per-cpu); the "
                   "limit is the CFS quota over its period (containers with a CPU limit only)."),
        timeseries("CPU user / kernel", "suffix: cores",
                   targets(per_ctr("container_cpu_user_seconds_total", "user"),
                           per_ctr("container_cpu_system_seconds_total", "kernel")),
                   "cpu.stat user_usec and system_usec.", stack=True),
        timeseries("CFS throttled periods", "percentunit",
                   targets((f"sum by ({by}) (rate(container_cpu_cfs_throttled_periods_total{{{ctr}}}[{RI}])) / "
                            f"sum by ({by}) (rate(container_cpu_cfs_periods_total{{{ctr}}}[{RI}]))", lg)),
                   "Share of enforcement periods in which the container used up its quota (containers "
                   "with a CPU limit only).", w=8),
        timeseries("CFS throttled time", "s",
                   targets(per_ctr("container_cpu_cfs_throttled_seconds_total", "")),
                   "Seconds per second the container's tasks were held back by the quota.", w=8),
        psi("cpu"),
        heatmap("Per-CPU usage", "suffix: cores",
                target("A", f"sum by (cpu) (rate(container_cpu_usage_seconds_total{{{ctr}, cpu!=\"total\"}}[{RI}]))",
                       "{{cpu}}"),
                "CPU time of the selected containers on each CPU. Needs statlet --collector.per-cpu (on "
                "cgroup v2 also the eBPF cpu probe); without it the usage has only cpu=\"total\" and this "
                "panel is empty."),
        timeseries("Run-queue latency", "s",
                   targets(*[(f"histogram_quantile({q}, sum by (le, {by}) "
                              f"(rate(statlet_cpu_runqueue_latency_seconds_bucket{{{ctr}}}[{RI}])))",
                              f"{lg} p{int(q * 100)}") for q in (0.5, 0.99)]),
                   "Time the container's tasks waited on a run queue before running. Needs the eBPF "
                   "runqlat probe: statlet --bpf.probes naming runqlat (it is not in the default set)."),
    ])
    memory_row = row("Memory", [
        timeseries("Memory breakdown and limit", "bytes",
                   targets(per_ctr("container_memory_working_set_bytes", "working set", rate=False),
                           per_ctr("container_memory_rss", "rss", rate=False),
                           per_ctr("container_memory_cache", "cache", rate=False),
                           per_ctr("container_memory_swap", "swap", rate=False),
                           per_ctr("container_memory_mapped_file", "mapped file", rate=False),
                           per_ctr("container_memory_kernel_usage", "kernel", rate=False),
                           (f"max by ({by}) (container_spec_memory_limit_bytes{{{ctr}}} > 0)", f"{lg} limit")),
                   "rss: anonymous memory; cache: page cache; the limit line only for containers with "
                   "a memory limit.", w=24, h=9),
        timeseries("Working set / limit", "percentunit",
                   targets((f"max by ({by}) (container_memory_working_set_bytes{{{ctr}}}) / "
                            f"max by ({by}) (container_spec_memory_limit_bytes{{{ctr}}} > 0)", lg)),
                   "Containers with a memory limit only.", w=8),
        timeseries("Limit hits and OOM kills", "short",
                   targets(per_ctr("container_memory_failcnt", "limit hits"),
                           (f"sum by ({by}) (increase(container_oom_events_total{{{ctr}}}[{RI}]))",
                            f"{lg} OOM kills")),
                   "Times per second usage hit the limit (memory.events max / memory.failcnt) and OOM "
                   "kills.", w=8),
        psi("memory"),
        timeseries("Major page faults", "short",
                   targets(per_ctr("container_memory_failures_total", "major",
                                   extra=', failure_type="pgmajfault", scope="container"')),
                   "Faults per second that had to read from disk (memory.stat pgmajfault)."),
        timeseries("Page faults of the container's tasks (eBPF)", "short",
                   targets((f"sum by ({by}, type) (rate(statlet_page_faults_total{{{ctr}}}[{RI}]))",
                            f"{lg} {{{{type}}}}")),
                   "Minor and major faults counted on the tasks themselves. Needs the eBPF faults probe: "
                   "statlet --bpf.probes naming faults (it is not in the default set)."),
    ])
    net = pod
    network_row = row("Network", [
        timeseries("Bytes by interface", "Bps",
                   targets((f"sum by (pod, interface) (rate(container_network_receive_bytes_total{{{net}}}[{RI}]))",
                            "{{pod}} {{interface}} rx"),
                           (f"sum by (pod, interface) (rate(container_network_transmit_bytes_total{{{net}}}[{RI}]))",
                            "{{pod}} {{interface}} tx")),
                   "Per pod (its containers share one network namespace); loopback and veth interfaces "
                   "are left out, as cAdvisor does. Transmit below the axis.", overrides=tx_negative, w=8),
        timeseries("Packets by interface", "pps",
                   targets((f"sum by (pod, interface) (rate(container_network_receive_packets_total{{{net}}}[{RI}]))",
                            "{{pod}} {{interface}} rx"),
                           (f"sum by (pod, interface) (rate(container_network_transmit_packets_total{{{net}}}[{RI}]))",
                            "{{pod}} {{interface}} tx")),
                   overrides=tx_negative, w=8),
        timeseries("Errors and drops by interface", "pps",
                   targets((f"sum by (pod, interface) (rate(container_network_receive_errors_total{{{net}}}[{RI}]) + "
                            f"rate(container_network_receive_packets_dropped_total{{{net}}}[{RI}]))",
                            "{{pod}} {{interface}} rx"),
                           (f"sum by (pod, interface) (rate(container_network_transmit_errors_total{{{net}}}[{RI}]) + "
                            f"rate(container_network_transmit_packets_dropped_total{{{net}}}[{RI}]))",
                            "{{pod}} {{interface}} tx")),
                   overrides=tx_negative, w=8),
        timeseries("TCP retransmits", "short",
                   targets(per_ctr("statlet_tcp_retransmits_total", "")),
                   "Segments per second retransmitted by the container's sockets. Needs the eBPF tcp "
                   "probe (default probe set)."),
        timeseries("TCP drops by reason", "short",
                   targets((f"sum by (pod, reason) (rate(statlet_tcp_drops_total{{{ctr}}}[{RI}])) or on (pod) "
                            f"(sum by (pod) (rate(statlet_tcp_retransmits_total{{{ctr}}}[{RI}])) * 0)",
                            "{{pod}} {{reason}}")),
                   "Packets the kernel dropped for the pod's sockets, by the kernel's drop reason. A "
                   "reason's series appears at the first drop of that reason, so a pod without drops "
                   "shows one line at 0 (from the probe's retransmit counter). Needs the eBPF tcp probe."),
    ])
    io_row = row("Disk IO", [
        timeseries("Bytes by device", "Bps",
                   targets((f"sum by ({by}, device) (rate(container_fs_reads_bytes_total{{{ctr}}}[{RI}]))",
                            f"{lg} {{{{device}}}} read"),
                           (f"sum by ({by}, device) (rate(container_fs_writes_bytes_total{{{ctr}}}[{RI}]))",
                            f"{lg} {{{{device}}}} write")),
                   "io.stat (blkio on cgroup v1; buffered writes are charged to the container only on "
                   "cgroup v2).", w=8),
        timeseries("IOPS by device", "iops",
                   targets((f"sum by ({by}, device) (rate(container_fs_reads_total{{{ctr}}}[{RI}]))",
                            f"{lg} {{{{device}}}} read"),
                           (f"sum by ({by}, device) (rate(container_fs_writes_total{{{ctr}}}[{RI}]))",
                            f"{lg} {{{{device}}}} write")), w=8),
        psi("io"),
    ])
    proc_row = row("Processes", [
        timeseries("Processes and threads", "short",
                   targets(per_ctr("container_processes", "processes", rate=False),
                           per_ctr("container_threads", "threads", rate=False)), w=12),
        timeseries("File descriptors and sockets", "short",
                   targets(per_ctr("container_file_descriptors", "fds", rate=False),
                           per_ctr("container_sockets", "sockets", rate=False)), w=12),
    ])
    # A few panels of memory-qos.json (the whole row is that dashboard), same selectors.
    qos = ctr
    qos_row = row("Memory QoS", [
        {**timeseries("Usage against memory.min / memory.high / memory.max", "bytes",
                      targets((f"container_memory_usage_bytes{{{qos}}}", f"{lg} usage"),
                              (f"statlet_memory_min_bytes{{{qos}}}", f"{lg} memory.min"),
                              (f"statlet_memory_high_bytes{{{qos}}} < +Inf", f"{lg} memory.high"),
                              (f"container_spec_memory_limit_bytes{{{qos}}} > 0", f"{lg} memory.max")),
                      "memory.min and memory.high exist on cgroup v2 only; the memory.high line only where "
                      "it is set.")},
        {
            "type": "state-timeline",
            "title": "Zone",
            "description": "below_request: usage < memory.min; above_request; throttling: usage >= "
                           "memory.high; at_limit: usage >= memory.max - margin.",
            "datasource": DS,
            "fieldConfig": {
                "defaults": {
                    "mappings": [{"type": "value", "options": {
                        "0": {"text": "below_request", "color": "green"},
                        "1": {"text": "above_request", "color": "blue"},
                        "2": {"text": "throttling", "color": "orange"},
                        "3": {"text": "at_limit", "color": "red"}}}],
                    "color": {"mode": "thresholds"},
                    "thresholds": {"mode": "absolute", "steps": [{"color": "green", "value": None}]},
                },
                "overrides": [],
            },
            "options": {"showValue": "never", "mergeValues": True},
            "targets": targets((" + ".join(
                f"sum by (namespace, {by}) (statlet_container_memory_qos_zone{{{qos}, zone=\"{zone}\"}}) * {n}"
                for n, zone in ((1, "above_request"), (2, "throttling"), (3, "at_limit"))), lg)),
            "_size": (12, 8),
        },
        timeseries("Refaults (anon / file)", "short",
                   targets(per_ctr("container_memory_workingset_refault_anon_total", "anon"),
                           per_ctr("container_memory_workingset_refault_file_total", "file")),
                   "Pages read back soon after reclaim evicted them: reclaim is taking the working set."),
        timeseries("memory.high stalled (livelock)", "short",
                   targets((f"statlet_container_memory_high_stalled{{{qos}}}", lg)),
                   "1 while usage stays at memory.high with memory PSI full high and memory.events high "
                   "rising (cgroup v2). The full Memory QoS view: memory-qos.json."),
    ], collapsed=True)
    node = 'cluster=~"$cluster", job=~"$job", instance=~"$instance"'
    pulls_row = row("Image pulls", [
        timeseries("Pulls in flight and clients following them", "short",
                   targets((f"statlet_image_pulls_in_flight{{{node}}}", "{{instance}} pulls"),
                           (f"statlet_image_pull_clients{{{node}}}", "{{instance}} clients")),
                   "Runtime pulls through statlet's CRI socket running now, and the calls following "
                   "them (one runtime pull is shared by every client asking for the image)."),
        timeseries("Pulls started and finished", "short",
                   targets((f"sum by (instance) (increase(statlet_image_pulls_started_total{{{node}}}[{RI}]))",
                            "{{instance}} started"),
                           (f"sum by (instance, result) (increase(statlet_image_pulls_completed_total{{{node}}}[{RI}]))",
                            "{{instance}} {{result}}"),
                           (f"sum by (instance) (increase(statlet_image_pull_rejected_total{{{node}}}[{RI}]))",
                            "{{instance}} rejected")),
                   "Finished: succeeded, failed, stalled (no progress for --pull.no-progress-timeout) or "
                   "cancelled; rejected by --pull.max-pulls / --pull.max-clients."),
        timeseries("Pull duration", "s",
                   targets(*[(f"histogram_quantile({q}, sum by (le, instance) "
                              f"(rate(statlet_image_pull_duration_seconds_bucket{{{node}}}[$__range])))",
                              f"{{{{instance}}}} p{int(q * 100)}") for q in (0.5, 0.9)]),
                   "Successful pulls over the dashboard's time range, first request to the runtime's "
                   "answer (no value while no pull finished)."),
        timeseries("Progress reads that failed", "short",
                   targets((f"sum by (instance) (increase(statlet_image_pull_progress_errors_total{{{node}}}[{RI}]))",
                            "{{instance}}")),
                   "Polls of containerd's content store for a pull's progress that failed."),
    ], collapsed=True)

    variables = [
        cluster_variable("container_cpu_usage_seconds_total"),
        variable("job", 'label_values(container_cpu_usage_seconds_total{cluster=~"$cluster"}, job)'),
        variable("instance", 'label_values(container_cpu_usage_seconds_total{cluster=~"$cluster", job=~"$job"}, instance)', "node"),
        variable("namespace", 'label_values(container_cpu_usage_seconds_total{cluster=~"$cluster", job=~"$job", instance=~"$instance", '
                              'container!=""}, namespace)'),
        variable("pod", 'label_values(container_cpu_usage_seconds_total{cluster=~"$cluster", job=~"$job", instance=~"$instance", '
                        'namespace=~"$namespace", container!=""}, pod)'),
        variable("container", 'label_values(container_cpu_usage_seconds_total{cluster=~"$cluster", job=~"$job", instance=~"$instance", '
                              'namespace=~"$namespace", pod=~"$pod", container!="", container!="POD"}, container)'),
    ]
    return dashboard("statlet / Pod", "statlet-pod", ["statlet", "pod"], variables,
                     [cpu_row, memory_row, network_row, io_row, proc_row, qos_row, pulls_row],
                     "One pod's containers (or several) as statlet serves them: CPU and throttling, "
                     "per-CPU time, run-queue latency, memory, network per interface, disk IO per "
                     "device, processes, Memory QoS and image pulls.")


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    for name, board in (("statlet-node.json", node_dashboard()), ("statlet-pod.json", pod_dashboard())):
        with open(os.path.join(here, name), "w") as f:
            json.dump(board, f, indent=2, ensure_ascii=False)
            f.write("\n")


if __name__ == "__main__":
    main()
