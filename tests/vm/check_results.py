#!/usr/bin/python3
"""Host-side assertions of the VM stage.

Every check compares a number statlet reported inside the guest with what the guest read
itself from the same cgroup file right before and right after statlet's collection
("bracket"), or with what a workload knows it did (bytes written, processes forked).
A counter that is frozen by then (the workload finished) must match exactly or within the
stated tolerance; a live one must fall inside the bracket widened by the tolerance.

Checks are rows of CHECKS: (name, part, function). Every part is part of every build: a
part whose evidence is missing (statlet stats printed nothing, --help lacks the part's
flags) fails each of its checks, naming the evidence; nothing is skipped. Adding a part
means adding its detector to PARTS and its rows to CHECKS.

usage: check_results.py RESULTS_DIR [--accel NAME] [--boot-ms N]
"""

import argparse
import re
import sys

from guest_results import GuestResults, parse_json
from memqos_checks import make_checks as make_memqos_checks
from memqos_kubelet_checks import make_checks as make_kubelet_checks
from runtime_checks import make_checks as make_runtime_checks

MiB = 1 << 20


class CheckFailed(Exception):
    pass


def require(cond, msg):
    if not cond:
        raise CheckFailed(msg)


def bracket_error(value, lo, hi):
    """Relative distance of value outside [lo, hi] (0 inside)."""
    lo, hi = min(lo, hi), max(lo, hi)
    if lo <= value <= hi:
        return 0.0
    gap = lo - value if value < lo else value - hi
    return gap / max(abs(hi), 1)


class Context:
    def __init__(self, results):
        self.g = results
        self.measured = []  # lines describing each asserted quantity and its error
        self._stats = None

    def note(self, text):
        self.measured.append(text)

    def within(self, what, value, lo, hi, tol):
        """value within [lo, hi] widened by tol (relative); records the error."""
        require(value is not None, f"{what}: statlet reported nothing")
        err = bracket_error(value, lo, hi)
        span = f"{lo}" if lo == hi else f"[{min(lo, hi)}, {max(lo, hi)}]"
        self.note(f"{what}: statlet={value} guest={span} error={err * 100:.3f}% (tolerance {tol * 100:g}%)")
        require(err <= tol, f"{what}: statlet {value} vs guest {span}: error {err * 100:.3f}% > {tol * 100:g}%")

    def exact(self, what, value, want):
        self.note(f"{what}: statlet={value} expected={want}")
        require(value == want, f"{what}: got {value}, want {want}")

    # --- statlet's one-shot JSON snapshot
    def stats(self):
        if self._stats is None:
            rc, out, err = self.g.statlet_out("stats")
            doc, perr = parse_json(out)
            require(rc == "0" and doc is not None, f"statlet stats -o json: exit {rc}, {perr or ''} {err.strip()[:300]}")
            self._stats = doc
        return self._stats

    def snap_cgroup(self, path, doc=None):
        doc = doc or self.stats()
        for c in doc.get("cgroups", []):
            if c["identity"]["cgroup_path"] == path:
                return c
        raise CheckFailed(f"statlet reported no cgroup {path}")

    def container(self, name):
        return self.g.containers[name]


def guest_values(ctx, path, read):
    """read(CgroupFiles) at both phases -> (before, after)."""
    b, a = ctx.g.both(path)
    return read(b), read(a)


# ------------------------------------------------------------------ parts of the build
def part_guest(g):
    return True, ""


def part_collector(g):
    rc, out, err = g.statlet_out("stats")
    if rc != "0" or not out.strip():
        return False, f"statlet stats -o json exited {rc}: {err.strip()[:120] or 'no output'}"
    return True, ""


def _help(g):
    return g.statlet_file("help.out") or ""


def part_exporters(g):
    if "--web.listen-address" not in _help(g):
        return False, "statlet --help lists no --web.listen-address"
    return True, ""


def part_cri(g):
    if "--cri.listen" not in _help(g):
        return False, "statlet --help lists no --cri.listen"
    return True, ""


def part_bpf(g):
    if g.statlet_file("bpf.rc") is None and g.statlet_file("bpf-ready") is None:
        return False, "statlet_vm_bpf_dump is not in this build"
    return True, ""


def part_bpf_iter(g):
    if g.statlet_file("iter-check.rc") is None:
        return False, "statlet_vm_iter_check is not in this build"
    return True, ""


def part_bpf_daemon(g):
    if "--bpf" not in _help(g):
        return False, "statlet --help lists no --bpf"
    return True, ""


PARTS = {"guest": part_guest, "collector": part_collector, "exporters": part_exporters,
         "cri": part_cri, "bpf": part_bpf, "bpf_iter": part_bpf_iter, "bpf_daemon": part_bpf_daemon}


# ------------------------------------------------------------------ guest-only checks
# These hold without statlet: they prove the kernel and the workloads did what the
# statlet checks assume.
def guest_no_errors(ctx):
    require(not ctx.g.errors, "guest init reported: " + "; ".join(ctx.g.errors))


def guest_cgroup2_only(ctx):
    m = ctx.g.mounts
    require(re.search(r"^cgroup2 /sys/fs/cgroup cgroup2 ", m, re.M), "no cgroup2 at /sys/fs/cgroup")
    require(not re.search(r" cgroup ", m), "a cgroup v1 hierarchy is mounted")
    for c in ("cpu", "io", "memory", "pids"):
        require(c in ctx.g.root_subtree_control, f"controller {c} not enabled at the root")
    ctx.note(f"kernel {ctx.g.kernel}, root subtree_control: {' '.join(ctx.g.root_subtree_control)}")


def guest_cpu(ctx):
    st = ctx.g.cg("after", ctx.container("cpu").path).flat("cpu.stat")
    require(st.get("nr_throttled", 0) > 0, f"burner never throttled: {st}")
    require(st.get("throttled_usec", 0) > 0, f"no throttled time: {st}")
    ctx.note(f"burner: usage {st['usage_usec']} us, {st['nr_throttled']}/{st['nr_periods']} periods throttled")


def guest_memory(ctx):
    c = ctx.g.cg("after", ctx.container("memory").path)
    want = int(ctx.g.reports["memory"]["bytes"])
    anon = c.flat("memory.stat").get("anon", 0)
    require(c.value("memory.current") >= want, f"memory.current {c.value('memory.current')} < {want}")
    require(anon >= want, f"anon {anon} < {want} touched")
    require(c.value("memory.peak") >= c.value("memory.current"), "memory.peak < memory.current")


def guest_memory_high(ctx):
    path = ctx.container("memory-high").path
    hb, ha = guest_values(ctx, path, lambda c: c.flat("memory.events").get("high", 0))
    later = ctx.g.high_events_later
    require(0 < hb <= ha and later is not None and later > hb,
            f"memory.events high not rising: before {hb}, after {ha}, later {later}")
    a = ctx.g.cg("after", path)
    for kind in ("some", "full"):
        require((a.psi_total("memory.pressure", kind) or 0) > 0, f"memory PSI {kind} total is 0")
    stat = a.flat("memory.stat")
    for k in ("pgscan", "pgsteal", "workingset_refault_anon"):
        require(k in stat, f"memory.stat lacks {k}")
    ctx.note(f"memory.high events {hb} -> {ha} across statlet's collection, later {later}")


def guest_oom(ctx):
    ev = ctx.g.cg("after", ctx.container("oom").path).flat("memory.events")
    kills = int(ctx.g.reports["oom"]["kills"])
    require(kills == int(ctx.g.expect["oom_kills"]), f"workload saw {kills} kills")
    require(ev.get("oom_kill") == kills, f"memory.events oom_kill {ev.get('oom_kill')} != {kills}")
    require(ev.get("max", 0) > 0 and ev.get("oom", 0) >= kills, f"memory.events {ev}")


def guest_pids(ctx):
    c = ctx.g.cg("after", ctx.container("pids").path)
    rep = ctx.g.reports["pids"]
    require("temporarily unavailable" in rep["fork_refused_errno"], f"fork refused with {rep['fork_refused_errno']}")
    require(c.count_lines("cgroup.procs") == int(rep["processes"]), "cgroup.procs differs from the forker's count")
    require(c.count_lines("cgroup.threads") == int(rep["threads"]), "cgroup.threads differs from the forker's count")
    require(c.flat("pids.events").get("max", 0) >= 1, "pids.events max is 0")


def _dio_expected(ctx):
    r = ctx.g.reports["io"]
    return {"wbytes": int(r["write_bytes"]), "wios": int(r["write_ios"]),
            "rbytes": int(r["read_bytes"]), "rios": int(r["read_ios"])}


def guest_io(ctx):
    got = ctx.g.cg("after", ctx.container("io").path).io_stat("1:0")
    for k, v in _dio_expected(ctx).items():
        require(got.get(k) == v, f"io.stat 1:0 {k}={got.get(k)}, workload did {v}")


def _dirty_written(ctx):
    return int(ctx.g.reports["dirty"]["bytes"])


def guest_dirty(ctx):
    # The writer's pages stay dirty through the run: what the statlet checks below compare.
    path = ctx.container("dirty").path
    want = _dirty_written(ctx)
    got = {phase: ctx.g.cg(phase, path).flat("memory.stat") for phase in ("before", "after")}
    ctx.note(f"dirty writer: {want} bytes written (ext4 on ram1, writeback held off); "
             + ", ".join(f"{p} file_dirty {s.get('file_dirty')} file_writeback {s.get('file_writeback')}"
                         for p, s in got.items()))
    for phase, stat in got.items():
        dirty = stat.get("file_dirty", 0)
        require(dirty >= 0.9 * want, f"{phase}: memory.stat file_dirty {dirty} of the {want} bytes written")


def guest_net(ctx):
    want = int(ctx.g.expect["net_bytes"])
    require(int(ctx.g.reports["net"]["bytes"]) == want, "receiver counted a different payload")
    rx = ctx.g.net["after"][ctx.container("net").pod_uid]["eth0"]["rx_bytes"]
    require(rx >= want, f"pod eth0 rx_bytes {rx} < payload {want}")


# ------------------------------------------------------------------ statlet collector
def collector_identity(ctx):
    for c in ctx.g.containers.values():
        s = ctx.snap_cgroup(c.path)["identity"]
        inode = ctx.g.cg("before", c.path).inode
        want = {"kind": "container", "container_id": c.id, "pod_uid": c.pod_uid, "driver": c.driver,
                "qos": c.qos, "cgroup_id": inode, "pod_cgroup_path": c.pod_path}
        got = {k: s.get(k) for k in want}
        require(got == want, f"{c.name}: identity {got}, want {want}")
        pod = ctx.snap_cgroup(c.pod_path)["identity"]
        require(pod.get("kind") == "pod" and pod.get("pod_uid") == c.pod_uid, f"{c.pod_path}: {pod}")
    ctx.note(f"{len(ctx.g.containers)} containers (systemd and cgroupfs layouts): kind, id, pod uid, "
             f"driver, qos, cgroup id = inode all equal")


def collector_cpu(ctx):
    path = ctx.container("cpu").path
    s = ctx.snap_cgroup(path)["cpu"]
    for field, key, scale in (("usage_ns", "usage_usec", 1000), ("user_ns", "user_usec", 1000),
                              ("system_ns", "system_usec", 1000), ("nr_periods", "nr_periods", 1),
                              ("nr_throttled", "nr_throttled", 1), ("throttled_ns", "throttled_usec", 1000)):
        b, a = guest_values(ctx, path, lambda c: c.flat("cpu.stat")[key] * scale)
        ctx.within(f"cpu.{field}", s.get(field), b, a, 0.02)
    require(s["nr_throttled"] > 0 and s["throttled_ns"] > 0, "throttling not reported")
    ctx.exact("cpu.quota_us", s.get("quota_us"), 50000)


def collector_memory(ctx):
    path = ctx.container("memory").path
    s = ctx.snap_cgroup(path)["memory"]
    for field, read in (("usage_bytes", lambda c: c.value("memory.current")),
                        ("rss_bytes", lambda c: c.flat("memory.stat")["anon"]),
                        ("max_usage_bytes", lambda c: c.value("memory.peak"))):
        b, a = guest_values(ctx, path, read)
        ctx.within(f"memory.{field}", s.get(field), b, a, 0.01)
    require(s["rss_bytes"] >= int(ctx.g.reports["memory"]["bytes"]), "rss below what the allocator touched")


def collector_oom_events(ctx):
    path = ctx.container("oom").path
    ev = ctx.snap_cgroup(path)["memory"].get("events", {})
    want = ctx.g.cg("after", path).flat("memory.events")
    for k in ("max", "oom", "oom_kill"):
        ctx.exact(f"memory.events.{k} (memory.max container)", ev.get(k), want[k])
    ctx.exact("memory.max_bytes", ctx.snap_cgroup(path)["memory"].get("max_bytes"),
              ctx.g.cg("after", path).value("memory.max"))


def collector_memory_high(ctx):
    path = ctx.container("memory-high").path
    m = ctx.snap_cgroup(path)["memory"]
    b, a = guest_values(ctx, path, lambda c: c.flat("memory.events")["high"])
    ctx.within("memory.events.high (rising)", m.get("events", {}).get("high"), b, a, 0.0)
    for kind in ("some", "full"):
        b, a = guest_values(ctx, path, lambda c: c.psi_total("memory.pressure", kind))
        got = m.get("psi", {}).get(kind, {}).get("total_us")
        ctx.within(f"memory.psi.{kind}.total_us", got, b, a, 0.0)
        require(got > 0, f"memory PSI {kind} total is 0")
    stat_keys = {"pgscan": "pgscan", "pgsteal": "pgsteal", "pgscan_direct": "pgscan_direct",
                 "pgsteal_direct": "pgsteal_direct", "pgscan_kswapd": "pgscan_kswapd",
                 "pgsteal_kswapd": "pgsteal_kswapd", "workingset_refault_anon": "workingset_refault_anon",
                 "workingset_refault_file": "workingset_refault_file"}
    for field, key in stat_keys.items():
        b, a = guest_values(ctx, path, lambda c: c.flat("memory.stat")[key])
        ctx.within(f"memory.{field}", m.get(field), b, a, 0.0)


def collector_dirty(ctx):
    path = ctx.container("dirty").path
    m = ctx.snap_cgroup(path)["memory"]
    for field, key in (("file_dirty_bytes", "file_dirty"), ("file_writeback_bytes", "file_writeback")):
        b, a = guest_values(ctx, path, lambda c: c.flat("memory.stat")[key])
        ctx.within(f"memory.{field} (dirty writer)", m.get(field), b, a, 0.0)


def collector_pids(ctx):
    path = ctx.container("pids").path
    p = ctx.snap_cgroup(path)["process"]
    rep = ctx.g.reports["pids"]
    c = ctx.g.cg("after", path)
    ctx.exact("process.processes", p.get("processes"), int(rep["processes"]))
    ctx.exact("process.threads", p.get("threads"), int(rep["threads"]))
    ctx.exact("process.pids_current", p.get("pids_current"), c.value("pids.current"))
    ctx.exact("process.pids_max", p.get("pids_max"), int(ctx.g.expect["pids_max"]))
    ctx.exact("process.pids_events_max", p.get("pids_events_max"), c.flat("pids.events")["max"])


def collector_io(ctx):
    want = _dio_expected(ctx)
    io_path = ctx.container("io").path
    for c in ctx.g.containers.values():
        devs = {d["device"]: d for d in ctx.snap_cgroup(c.path)["io"].get("devices", [])}
        d = devs.get("1:0", {})
        if c.path == io_path:
            for field, key in (("write_bytes", "wbytes"), ("write_ios", "wios"),
                               ("read_bytes", "rbytes"), ("read_ios", "rios")):
                ctx.exact(f"io[1:0].{field}", d.get(field), want[key])
        else:
            require(not d.get("write_bytes"), f"{c.name} was charged ram0 writes: {d}")
    ctx.note("ram0 IO attributed to the io container only")


def collector_net(ctx):
    doc = ctx.stats()
    want = int(ctx.g.expect["net_bytes"])
    netns = {n["netns_inode"]: n for n in doc.get("netns", [])}
    for c in ctx.g.containers.values():
        got = ctx.snap_cgroup(c.path)["network"]
        if c.pod_uid in ctx.g.netns:  # a pod with a sandbox: every container shares its namespace
            require(got.get("netns_inode") == ctx.g.netns[c.pod_uid] and not got["host_network"],
                    f"{c.name}: {got}, the pod's namespace is {ctx.g.netns[c.pod_uid]}")
        else:
            require(got["host_network"], f"{c.name} runs in the host's namespace, statlet says {got}")
    uid = ctx.container("net").pod_uid
    ns = netns.get(ctx.g.netns[uid])
    require(ns is not None, "statlet reported no entry for the pod's network namespace")
    eth0 = {i["name"]: i for i in ns["interfaces"]}.get("eth0")
    require(eth0 is not None, "the pod's eth0 is missing")
    b, a = (ctx.g.net[p][uid]["eth0"]["rx_bytes"] for p in ("before", "after"))
    ctx.within("pod eth0 rx_bytes", eth0["rx_bytes"], b, a, 0.0)
    require(eth0["rx_bytes"] >= want, f"rx_bytes {eth0['rx_bytes']} < payload {want}")
    other = ctx.g.netns[ctx.container("cpu").pod_uid]
    other_rx = sum(i["rx_bytes"] for i in netns.get(other, {}).get("interfaces", []))
    require(other_rx < want, f"the other pod's namespace shows {other_rx} received bytes")
    ctx.note(f"payload {want} bytes; pod eth0 rx_bytes {eth0['rx_bytes']}; other pod {other_rx}")


def collector_subtree(ctx):
    rc, out, err = ctx.g.statlet_out("stats-subtree")
    doc, perr = parse_json(out)
    require(rc == "0" and doc is not None, f"--cgroup /kubepods: exit {rc} {perr or ''} {err[:200]}")
    paths = [c["identity"]["cgroup_path"] for c in doc["cgroups"]]
    outside = [p for p in paths if p != "/kubepods" and not p.startswith("/kubepods/")]
    require(not outside, f"--cgroup /kubepods reported cgroups outside it: {outside[:3]}")
    wanted = [c.path for c in ctx.g.containers.values() if c.driver == "cgroupfs"]
    missing = [p for p in wanted if p not in paths]
    require(not missing, f"--cgroup /kubepods missed {missing}")
    ctx.note(f"--cgroup /kubepods: {len(paths)} cgroups, none outside the subtree")


# ------------------------------------------------------------------ statlet daemon
def parse_metrics(text):
    """Prometheus text -> list of (name, labels dict, value)."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)", line)
        if not m:
            continue
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', m.group(3) or ""))
        out.append((m.group(1), labels, float(m.group(4))))
    return out


def metrics(ctx):
    rc = (ctx.g.statlet_file("metrics.rc") or "").strip()
    text = ctx.g.statlet_file("metrics.out") or ""
    require(rc == "0" and text, f"/metrics not served (daemon exit {ctx.g.statlet_file('daemon.rc')}): "
            f"{(ctx.g.statlet_file('daemon.log') or '')[-300:]}")
    return parse_metrics(text)


def metric(samples, name, **labels):
    found = [v for n, l, v in samples if n == name and all(l.get(k) == want for k, want in labels.items())]
    require(found, f"/metrics has no {name}{labels}")
    return found[0]


def exporter_metrics(ctx):
    s = metrics(ctx)
    cpu = ctx.container("cpu").path
    b, a = guest_values(ctx, cpu, lambda c: c.flat("cpu.stat")["usage_usec"] / 1e6)
    ctx.within("/metrics container_cpu_usage_seconds_total", metric(s, "container_cpu_usage_seconds_total", id=cpu),
               b, a, 0.02)
    oom = ctx.container("oom").path
    ctx.exact("/metrics container_oom_events_total", metric(s, "container_oom_events_total", id=oom),
              ctx.g.cg("after", oom).flat("memory.events")["oom_kill"])
    pids = ctx.container("pids").path
    ctx.exact("/metrics container_threads", metric(s, "container_threads", id=pids),
              int(ctx.g.reports["pids"]["threads"]))
    io = ctx.container("io").path
    written = sum(v for n, l, v in s if n == "container_fs_writes_bytes_total" and l.get("id") == io)
    ctx.exact("/metrics container_fs_writes_bytes_total", written, _dio_expected(ctx)["wbytes"])
    # Without runtime metadata no container is known to be the sandbox, so the pod's
    # namespace is reported on the pod (cAdvisor's families go on the sandbox only).
    net_pod = ctx.container("net").pod_path
    rx = metric(s, "statlet_pod_network_bytes_total", id=net_pod, direction="receive", interface="eth0")
    require(rx >= int(ctx.g.expect["net_bytes"]), f"/metrics eth0 receive bytes {rx} < payload")
    other_pod = ctx.container("cpu").pod_path
    other = [v for n, l, v in s if n == "statlet_pod_network_bytes_total" and l.get("id") == other_pod
             and l.get("direction") == "receive"]
    require(sum(other) < int(ctx.g.expect["net_bytes"]), f"the other pod shows {sum(other)} received bytes")
    ctx.note(f"/metrics: {len(s)} samples; eth0 receive bytes {rx:.0f}")


def cri_stats(ctx):
    rc, out, err = ctx.g.statlet_out("cri-stats")
    doc, perr = parse_json(out)
    require(rc == "0" and doc is not None, f"CRI ListContainerStats: exit {rc} {perr or ''} {err[:300]}")
    by_id = {st["attributes"]["id"]: st for st in doc.get("stats", [])}
    cpu = ctx.container("cpu")
    st = by_id.get(cpu.id)
    require(st is not None, f"CRI stats lack container {cpu.id[:12]} (have {len(by_id)})")
    got = int(st["cpu"]["usageCoreNanoSeconds"]["value"])
    b, a = guest_values(ctx, cpu.path, lambda c: c.flat("cpu.stat")["usage_usec"] * 1000)
    ctx.within("CRI cpu.usage_core_nano_seconds", got, b, a, 0.02)


# ------------------------------------------------------------------ eBPF probes
def bpf_dump(ctx):
    rc = (ctx.g.statlet_file("bpf.rc") or "").strip()
    doc, perr = parse_json(ctx.g.statlet_file("bpf.out") or "")
    require(rc == "0" and doc is not None,
            f"statlet_vm_bpf_dump: exit {rc or 'none'} {perr or ''} {(ctx.g.statlet_file('bpf.err') or '')[-300:]}")
    return doc


def bpf_cgroup(ctx, name):
    c = ctx.container(name)
    got = bpf_dump(ctx)["cgroups"].get(c.path)
    require(got is not None, f"the probes reported nothing for {name} ({c.path})")
    return got


def bpf_probes_loaded(ctx):
    doc = bpf_dump(ctx)
    up = [p["probe"] for p in doc["probes"] if p["up"]]
    down = [f"{p['probe']}: {p['error']}" for p in doc["probes"] if not p["up"]]
    ctx.note(f"loaded on {ctx.g.kernel}: {', '.join(up) or 'none'}")
    require(not down, f"probes not loaded on {ctx.g.kernel}: {down}")


def bpf_cgroup_ids(ctx):
    # What the kernel keyed by bpf_get_current_cgroup_id() is found under each container
    # directory's inode and matches that directory's own cpu.stat: the keys are the inodes.
    for name in ("cpu", "memory", "pids", "io", "oom"):
        c = ctx.container(name)
        got = bpf_cgroup(ctx, name)
        ctx.exact(f"{name}: cgroup_id", got["cgroup_id"], ctx.g.cg("before", c.path).inode)
        b, a = guest_values(ctx, c.path, lambda g: g.flat("cpu.stat")["usage_usec"] * 1000)
        ran = sum(got["per_cpu_ns"])
        slack = max(0.05 * max(a, b), 5e6)  # 5 %, or 5 ms for nearly idle containers
        ctx.note(f"{name}: eBPF {ran} ns, cpu.stat [{b}, {a}] ns")
        require(min(a, b) - slack <= ran <= max(a, b) + slack, f"{name}: eBPF {ran} ns vs cpu.stat {a} ns")


def bpf_per_cpu_sum(ctx):
    path = ctx.container("cpu").path
    per_cpu = bpf_cgroup(ctx, "cpu")["per_cpu_ns"]
    b, a = guest_values(ctx, path, lambda c: c.flat("cpu.stat")["usage_usec"] * 1000)
    ctx.within("eBPF per-CPU time sum vs cpu.stat usage", sum(per_cpu), b, a, 0.05)
    ctx.note(f"per CPU: {per_cpu}")


def bpf_oom(ctx):
    c = ctx.container("oom")
    kills = ctx.g.cg("after", c.path).flat("memory.events")["oom_kill"]
    ctx.exact("eBPF oom_kills vs memory.events oom_kill", bpf_cgroup(ctx, "oom").get("oom_kills"), kills)
    events = [e for e in bpf_dump(ctx)["ooms"] if e["cgroup_id"] == ctx.g.cg("before", c.path).inode]
    pids = sorted(int(p) for p in ctx.g.reports["oom"]["victim_pids"].split(","))
    ctx.exact("OOM events' victim pids", sorted(e["pid"] for e in events), pids)
    ctx.exact("OOM events' victim comm", sorted({e["comm"] for e in events}), [ctx.g.reports["oom"]["victim_comm"]])
    require(all(e["constraint_memcg"] for e in events), f"an OOM kill not attributed to the memcg limit: {events}")


def bpf_faults(ctx):
    path = ctx.container("memory").path
    got = bpf_cgroup(ctx, "memory")
    faults = got.get("minor_faults", 0) + got.get("major_faults", 0)
    b, a = guest_values(ctx, path, lambda c: c.flat("memory.stat")["pgfault"])
    ctx.within("eBPF page faults vs memory.stat pgfault (allocator)", faults, b, a, 0.10)


def bpf_tcp_retransmits(ctx):
    at_load = int(ctx.g.statlet_file("retrans-at-load").strip())
    at_dump = int(ctx.g.statlet_file("retrans-at-dump").strip())
    got = bpf_cgroup(ctx, "tcp").get("tcp_retransmits")
    ctx.note(f"sender's container: {got} retransmits; its namespace's RetransSegs rose {at_dump - at_load}")
    require(got is not None and 0 < got <= at_dump - at_load,
            f"tcp_retransmits {got}, namespace counted {at_dump - at_load}")
    others = {n: v.get("tcp_retransmits") for n, v in bpf_dump(ctx)["cgroups"].items()
              if v.get("tcp_retransmits") and n != ctx.container("tcp").path}
    require(sum(others.values()) + got <= at_dump - at_load, f"other cgroups charged retransmits: {others}")


def bpf_net(ctx):
    # The net probe counts by the sockets' cgroup: the sender (a host cgroup in the root
    # namespace) sent the payload, the receiver (pod B's container, in the pod's namespace)
    # got it, plus the tcp container's stream to its second receiver; each side's other
    # direction is TCP's acknowledgements. The pod's eth0 carried every byte the receiver's
    # sockets got (IP packets there; eth0 counts them with their link header).
    want = int(ctx.g.expect["net_bytes"])
    recv = bpf_cgroup(ctx, "net")
    sender = bpf_dump(ctx)["cgroups"].get("/system.slice/netsend")
    require(sender is not None, "the probes reported nothing for the sender (/system.slice/netsend)")
    eth0_rx = ctx.g.net["after"][ctx.container("net").pod_uid]["eth0"]["rx_bytes"]
    got = {"sender tx": sender.get("net_tx_bytes"), "sender rx": sender.get("net_rx_bytes"),
           "receiver rx": recv.get("net_rx_bytes"), "receiver tx": recv.get("net_tx_bytes")}
    ctx.note(f"payload {want} B; " + ", ".join(f"{k} {v}" for k, v in got.items()) + f"; pod eth0 rx {eth0_rx}")
    require(None not in got.values(), f"the net probe gave no value: {got}")
    require(got["sender tx"] >= want, f"sender transmitted {got['sender tx']} < payload {want}")
    require(got["sender rx"] < want / 10, f"sender's receive {got['sender rx']} reads the other direction")
    require(want <= got["receiver rx"] <= eth0_rx, f"receiver got {got['receiver rx']}: payload {want}, eth0 {eth0_rx}")
    require(got["receiver tx"] < got["receiver rx"] / 10, f"receiver's transmit {got['receiver tx']} reads the other direction")


# Every file the collector reads that the iterator renders; on Debian's 6.1 all of them.
ITER_FILES = ["cpu.stat", "memory.current", "memory.peak", "memory.swap.current", "memory.stat",
              "memory.events", "memory.events.local", "pids.current", "pids.events"]


def bpf_daemon_probes(ctx):
    s = metrics(ctx)
    up = {l.get("probe"): v for n, l, v in s if n == "statlet_bpf_probe_up"}
    require(up, "/metrics has no statlet_bpf_probe_up")
    # The default set, as --help states it: nothing on the scheduler path.
    m = re.search(r"--bpf.probes=.*\n.*Default: ([a-z_,]+)", _help(ctx.g))
    require(m, "statlet --help states no default probe set")
    default = m.group(1).split(",")
    ctx.note(f"probes loaded on {ctx.g.kernel}: {', '.join(sorted(p for p in up if up[p] == 1))}")
    require(not [p for p in default if up.get(p) != 1], f"default probes not loaded: {[p for p in default if up.get(p) != 1]}")
    require(not [p for p in up if up[p] == 1 and p not in default], "probes outside the default set loaded")


def bpf_daemon_iterator_files(ctx):
    log = ctx.g.statlet_file("daemon.log") or ""
    m = re.search(r"collector: (.*) from the eBPF cgroup iterator", log)
    require(m, "the daemon did not log the files it takes from the cgroup iterator (--log.level=debug)")
    # "cpu.stat (unified), memory.current (unified), …": each file with its hierarchy (older
    # builds named only the v1 ones).
    got = [re.sub(r" \(unified\)$", "", f.strip()) for f in m.group(1).split(",")]
    ctx.note(f"from the iterator: {', '.join(got)}")
    require(sorted(got) == sorted(ITER_FILES), f"files from the iterator: {got}, expected {ITER_FILES}")


def bpf_iter_same_numbers(ctx):
    rc = (ctx.g.statlet_file("iter-check.rc") or "").strip()
    doc, perr = parse_json(ctx.g.statlet_file("iter-check.out") or "")
    require(rc == "0" and doc is not None,
            f"statlet_vm_iter_check: exit {rc or 'none'} {perr or ''} {(ctx.g.statlet_file('iter-check.err') or '')[-300:]}")
    require(sorted(doc["files"]) == sorted(ITER_FILES), f"files the iterator renders on {ctx.g.kernel}: {doc['files']}")
    require(not doc["errors"], f"errors: {doc['errors'][:5]}")
    # The root's cpu.stat is built from system-wide counters, not rstat: read from the file.
    require(doc["not_rendered"] == ["/ cpu.stat"], f"existing files the iterator did not render: {doc['not_rendered']}")
    fields = doc["fields"]
    outside = [f for f in fields if not min(f[3], f[5]) <= f[4] <= max(f[3], f[5])]
    moved = sum(1 for f in fields if f[3] != f[5])
    cgroups = len({f[0] for f in fields})
    per_file = {}
    for f in fields:
        per_file[f[1]] = per_file.get(f[1], 0) + 1
    ctx.note(f"{len(fields)} values of {doc['rendered']} files in {cgroups} cgroups, {moved} moved between the file "
             f"readings, round {doc['rounds']} of at most 5")
    ctx.note("values per file: " + ", ".join(f"{k} {v}" for k, v in sorted(per_file.items())))
    require(cgroups >= 20 and len(fields) > 20 * len(ITER_FILES), "too few cgroups or values compared")
    require(not outside, f"{len(outside)} values outside their file readings, e.g. "
            + "; ".join(f"{c} {fl} {k}: files {b} then {a}, iterator {s}" for c, fl, k, b, s, a in outside[:5]))


def bpf_iter_dirty(ctx):
    # The walk's memory.stat file_dirty / file_writeback of the writer and its pod, between
    # the files read right before and right after the walk.
    doc, perr = parse_json(ctx.g.statlet_file("iter-check.out") or "")
    require(doc is not None, f"statlet_vm_iter_check: {perr}")
    c = ctx.container("dirty")
    want = _dirty_written(ctx)
    for cg in (c.path, c.pod_path):
        for key in ("file_dirty", "file_writeback"):
            got = [f for f in doc["fields"] if f[0] == cg and f[1] == "memory.stat" and f[2] == key]
            require(got, f"the walk rendered no memory.stat {key} for {cg}")
            _, _, _, before, walk, after = got[0]
            ctx.within(f"walk memory.stat {key} of {'the writer' if cg == c.path else 'its pod'}", walk, before,
                       after, 0.0)
            if key == "file_dirty":
                require(min(before, after) >= 0.9 * want, f"{cg}: file_dirty {before}, {after} of {want} written")


def _flat(text):
    out = {}
    for line in (text or "").splitlines():
        k, _, v = line.partition(" ")
        if v.strip().isdigit():
            out[k] = int(v)
    return out


def bpf_daemon_dirty(ctx):
    # The daemon takes memory.stat from the walk on this kernel (bpf_daemon.iterator_files):
    # its /metrics file_dirty and file_writeback, between the writer's memory.stat read right
    # before and right after the scrape.
    s = metrics(ctx)
    path = ctx.container("dirty").path
    before, after = _flat(ctx.g.statlet_file("dirty-before-metrics.stat")), _flat(ctx.g.statlet_file(
        "dirty-after-metrics.stat"))
    for name, key in (("container_memory_file_dirty_bytes", "file_dirty"),
                      ("container_memory_file_writeback_bytes", "file_writeback")):
        require(key in before and key in after, f"no {key} read around the scrape")
        ctx.within(f"/metrics {name} (dirty writer)", metric(s, name, id=path), before[key], after[key], 0.0)
    require(before["file_dirty"] >= 0.9 * _dirty_written(ctx), f"file_dirty {before['file_dirty']} at the scrape")


def bpf_iter_bench(ctx):
    rc = (ctx.g.statlet_file("iter-bench.rc") or "").strip()
    out = ctx.g.statlet_file("iter-bench.out") or ""
    require(rc == "0", f"statlet_cgroup_stats_bench: exit {rc or 'none'} {(ctx.g.statlet_file('iter-bench.err') or '')[-300:]}")
    for line in out.splitlines():
        ctx.note(line)
    require(re.search(r"^ratio=iterator/floor cpu_p50=", out, re.M), "no iterator/floor ratio")


CHECKS = [
    ("guest.no_errors", "guest", guest_no_errors),
    ("guest.cgroup2_only", "guest", guest_cgroup2_only),
    ("guest.cpu_throttled", "guest", guest_cpu),
    ("guest.memory", "guest", guest_memory),
    ("guest.memory_high", "guest", guest_memory_high),
    ("guest.oom", "guest", guest_oom),
    ("guest.pids", "guest", guest_pids),
    ("guest.io", "guest", guest_io),
    ("guest.dirty", "guest", guest_dirty),
    ("guest.net", "guest", guest_net),
    ("collector.identity", "collector", collector_identity),
    ("collector.cpu", "collector", collector_cpu),
    ("collector.memory", "collector", collector_memory),
    ("collector.memory_max_oom", "collector", collector_oom_events),
    ("collector.memory_high", "collector", collector_memory_high),
    ("collector.dirty", "collector", collector_dirty),
    ("collector.pids", "collector", collector_pids),
    ("collector.io", "collector", collector_io),
    ("collector.net", "collector", collector_net),
    ("collector.subtree", "collector", collector_subtree),
    ("exporters.metrics", "exporters", exporter_metrics),
    ("cri.container_stats", "cri", cri_stats),
    ("bpf.probes_loaded", "bpf", bpf_probes_loaded),
    ("bpf.cgroup_id_is_inode", "bpf", bpf_cgroup_ids),
    ("bpf.per_cpu_sum", "bpf", bpf_per_cpu_sum),
    ("bpf.oom_victims", "bpf", bpf_oom),
    ("bpf.page_faults", "bpf", bpf_faults),
    ("bpf.tcp_retransmits", "bpf", bpf_tcp_retransmits),
    ("bpf.net_by_socket_cgroup", "bpf", bpf_net),
    ("bpf_iter.same_numbers", "bpf_iter", bpf_iter_same_numbers),
    ("bpf_iter.dirty", "bpf_iter", bpf_iter_dirty),
    ("bpf_iter.bench", "bpf_iter", bpf_iter_bench),
    ("bpf_daemon.probes_up", "bpf_daemon", bpf_daemon_probes),
    ("bpf_daemon.iterator_files", "bpf_daemon", bpf_daemon_iterator_files),
    ("bpf_daemon.dirty", "bpf_daemon", bpf_daemon_dirty),
]

_memqos_part, _memqos_checks = make_memqos_checks(require, parse_metrics)
PARTS["memqos"] = _memqos_part
CHECKS += _memqos_checks
_kubelet_part, _kubelet_checks = make_kubelet_checks(require, parse_metrics)
PARTS["kubelet"] = _kubelet_part
CHECKS += _kubelet_checks
_runtime_part, _runtime_checks = make_runtime_checks(require, parse_metrics)
PARTS["runtime"] = _runtime_part
CHECKS += _runtime_checks


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("results")
    ap.add_argument("--accel", default="?")
    ap.add_argument("--boot-ms", default="?")
    args = ap.parse_args()
    g = GuestResults(args.results)
    part_state = {name: detect(g) for name, detect in PARTS.items()}
    failed = 0
    counts = {"PASS": 0, "FAIL": 0}
    for name, part, fn in CHECKS:
        present, why = part_state[part]
        if not present:
            print(f"FAIL {name}: {part} missing ({why})")
            counts["FAIL"] += 1
            failed += 1
            continue
        ctx = Context(g)
        try:
            fn(ctx)
            status, detail = "PASS", ""
        except CheckFailed as e:
            status, detail = "FAIL", f": {e}"
        except (KeyError, TypeError, ValueError, IndexError) as e:
            status, detail = "FAIL", f": missing or malformed data ({type(e).__name__}: {e})"
        counts[status] += 1
        print(f"{status} {name}{detail}")
        for m in ctx.measured:
            print(f"     {m}")
        failed += status == "FAIL"
    t = g.times
    print(f"vm: accelerator={args.accel} boot_to_result_ms={args.boot_ms} kernel={g.kernel} "
          f"guest: init at {t.get('init_start', 0):.2f}s, workloads done {t.get('workloads_done', 0):.2f}s, "
          f"results at {t.get('results_packed', 0):.2f}s uptime")
    print(f"vm: {counts['PASS']} passed, {counts['FAIL']} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
