"""Host-side checks of the guest's kubelet layouts (guest/memqos_kubelet_runs.sh).

Each layout is a node as one kubelet generation writes its cgroups; a daemon judged it from
the kubelet's configuration file and the Node and pods a stand-in API server served. For each
the checks read the daemon's scrape and the guest's own reading of the same cgroup files:
statlet's expected knobs equal the files knob by knob, at every level; no knob is claimed
that the kubelet would not set; the node totals equal the pods' sums; the Burstable tier's
protection is flagged capped exactly where the ancestors do not pass it down; the zones follow;
and with v1.37's defaults (no memory.high) nothing throttles and the stall detector stays
silent.
"""

import json
import math
import os
import re

from guest_results import _parse_dump, _read

MI = 1 << 20
INF = math.inf


class Layout:
    def __init__(self, d, name, parse_metrics):
        self.name = name
        self.samples = parse_metrics(_read(os.path.join(d, name + ".metrics"), "") or "")
        self.cg = _parse_dump(_read(os.path.join(d, name + ".cg"), ""), _read(os.path.join(d, name + ".cg.inodes"), ""))
        self.containers = dict(kv.split("=", 1) for kv in (_read(os.path.join(d, name.split("-")[0] + ".containers"), "")
                                                            or "").split())
        cri = _read(os.path.join(d, name + ".cri.json"))
        self.cri = json.loads(cri) if cri else None
        crip = _read(os.path.join(d, name + ".crip.json"))
        self.crip = json.loads(crip) if crip else None

    def value(self, name, **labels):
        for n, l, v in self.samples:
            if n == name and all(l.get(k) == want for k, want in labels.items()):
                return v
        return None

    def values(self, name, **labels):
        return [(l, v) for n, l, v in self.samples if n == name and all(l.get(k) == w for k, w in labels.items())]

    def knob(self, path, knob):
        """The cgroup's own memory.<knob> as the guest read it (max: inf)."""
        files = self.cg.get(path)
        if files is None or not files.has("memory." + knob):
            return None
        v = files.lines["memory." + knob][0].strip()
        return INF if v == "max" else float(v)


def make_checks(require, parse_metrics):
    cache = {}

    def layouts(ctx):
        if "l" not in cache:
            d = os.path.join(ctx.g.root, "kubelet")
            cache["l"] = {n: Layout(d, n, parse_metrics) for n in ("v136", "v137", "v137-tiered")}
        return cache["l"]

    def part(g):
        help_text = g.statlet_file("help.out") or ""
        if "--memory-qos.kubelet-version" not in help_text:
            return False, "statlet --help lists no --memory-qos.kubelet-version"
        if not os.path.isdir(os.path.join(g.root, "kubelet")):
            return False, "the guest laid out no kubelet layouts"
        return True, ""

    def kubepods_tree(lay):
        return sorted(p for p in lay.cg if p.startswith("/kubepods.slice"))

    def expected_equals_actual(lay):
        """Every cgroup of the layout: statlet's expected min/low (and high on containers)
        equal its files; pods, QoS and kubepods cgroups get no memory.high claim."""
        checked = 0
        for path in kubepods_tree(lay):
            is_container = path.endswith(".scope")
            for knob in ("min", "low", "high"):
                exp = lay.value("statlet_container_memory_qos_expected_bytes", id=path, knob=knob)
                actual = lay.knob(path, knob)
                if knob == "high" and not is_container:
                    require(exp is None, f"{lay.name} {path}: claims memory.high {exp}, which the kubelet leaves alone")
                    continue
                require(exp is not None, f"{lay.name} {path}: no expected memory.{knob}")
                require(exp == actual, f"{lay.name} {path}: expected memory.{knob} {exp}, the kubelet wrote {actual}")
                checked += 1
        return checked

    def info(lay):
        rows = lay.values("statlet_node_memory_qos_info", id="/kubepods.slice")
        require(len(rows) == 1, f"{lay.name}: statlet_node_memory_qos_info {rows}")
        return rows[0][0]

    def v136_tiered(ctx):
        lay = layouts(ctx)["v136"]
        require(lay.samples, "no v1.36 scrape")
        labels = info(lay)
        require(labels.get("rules") == "v1.36" and labels.get("kubelet_version") == "v1.36.2"
                and labels.get("reservation_policy") == "TieredReservation"
                and labels.get("throttling_factor") == "0.9", f"v1.36 judged by {labels}")
        n = expected_equals_actual(lay)
        ctx.note(f"v1.36 TieredReservation (kubelet v1.36.2 from the Node object, the configuration file): "
                 f"{n} knobs expected = written over {len(kubepods_tree(lay))} cgroups")
        c = lay.containers
        for name in ("db", "web", "side"):
            require(lay.value("statlet_container_memory_qos_request_bytes", id=c[name], source="apiserver") is not None,
                    f"{name}: request not from the API server")
        require(lay.knob(c["web"], "high") != INF, "the layout gave web no memory.high")
        require(lay.knob(c["batch"], "high") == INF, "v1.36 leaves BestEffort at max")

    def v136_totals_and_capped(ctx):
        lay = layouts(ctx)["v136"]
        c = lay.containers
        pods = sorted({p.rsplit("/", 1)[0] for p in c.values()})
        g_pod = next(p for p in pods if "kubepods-pod" in p)
        b_pod = next(p for p in pods if "burstable-pod" in p)
        min_total = lay.value("statlet_node_memory_qos_min_bytes", id="/kubepods.slice")
        low_total = lay.value("statlet_node_memory_qos_low_bytes", id="/kubepods.slice")
        require(min_total == lay.knob(g_pod, "min") == 64 * MI, f"node memory.min total {min_total}")
        require(low_total == lay.knob(b_pod, "low") == 48 * MI, f"node memory.low total {low_total}")
        # kubepods sets no memory.low in v1.36: the Burstable tier is capped, the Guaranteed
        # memory.min is not.
        bu = "/kubepods.slice/kubepods-burstable.slice"
        for path in (bu, b_pod, c["web"], c["side"]):
            require(lay.value("statlet_memory_protection_capped", id=path, knob="low") == 1,
                    f"{path}: memory.low {lay.knob(path, 'low')} under kubepods' {lay.knob('/kubepods.slice', 'low')} "
                    f"not flagged capped")
        for path in (g_pod, c["db"]):
            require(lay.value("statlet_memory_protection_capped", id=path, knob="min") == 0, f"{path}: min capped")
        capped = [l["id"] for l, v in lay.values("statlet_memory_protection_capped") if v == 1]
        require(sorted(capped) == sorted([bu, b_pod, c["web"], c["side"]]), f"capped: {capped}")
        zones = {n: next((l["zone"] for l, v in lay.values("statlet_container_memory_qos_zone", id=c[n]) if v == 1), None)
                 for n in c}
        require(zones["db"] == "below_request", f"db (16 MiB under its held 64Mi memory.min): {zones['db']}")
        require(zones["web"] == "above_request", f"web (16 MiB under its capped 32Mi memory.low): {zones['web']}")
        ctx.note(f"v1.36: node totals min {min_total / MI:.0f} MiB, low {low_total / MI:.0f} MiB; capped (low): "
                 f"{len(capped)} cgroups; zones {zones}")
        if lay.crip is not None:
            # The pod call reads the ancestors: the same verdict as /metrics.
            ctrs = {ct.get("cgroupPath"): ct for st in lay.crip.get("stats", [])
                    for ct in st.get("linux", {}).get("containers", [])}
            q = ctrs.get(c["web"], {}).get("memory", {}).get("memoryQos", {})
            require(q.get("rules") == "v1.36" and q.get("reservationPolicy") == "TieredReservation"
                    and q.get("kubeletVersion") == "v1.36.2" and q.get("throttlingFactor") == "0.9"
                    and q.get("lowCapped") is True and q.get("protectionJudged") is True
                    and q.get("zone") == "above_request"
                    and int(q.get("expectedLowBytes", {}).get("value", 0)) == 32 * MI,
                    f"CRI ListPodSandboxStats memory_qos of web: {q}")
            ctx.note(f"CRI ListPodSandboxStats memory_qos of web: {q}")
        if lay.cri is not None:
            # The container call reads container cgroups alone, unless it reuses a younger
            # snapshot that read the ancestors: the rules either way, and a protection verdict
            # only with the pod call's (capped low, above its request).
            by_path = {st.get("cgroupPath"): st for st in lay.cri.get("stats", [])}
            q = by_path.get(c["web"], {}).get("memory", {}).get("memoryQos", {})
            judged = q.get("protectionJudged") is True
            require(q.get("rules") == "v1.36" and q.get("kubeletVersion") == "v1.36.2"
                    and (not judged or (q.get("lowCapped") is True and q.get("zone") == "above_request")),
                    f"CRI ListContainerStats memory_qos of web: {q}")

    def v137_defaults(ctx):
        lay = layouts(ctx)["v137"]
        labels = info(lay)
        require(labels.get("rules") == "v1.37" and labels.get("throttling_factor") == "none"
                and labels.get("reservation_policy") == "None", f"v1.37 judged by {labels}")
        n = expected_equals_actual(lay)
        for path in kubepods_tree(lay):
            for knob in ("min", "low"):
                exp = lay.value("statlet_container_memory_qos_expected_bytes", id=path, knob=knob)
                require(exp == 0, f"{path}: expected memory.{knob} {exp} under v1.37's defaults")
            if path.endswith(".scope"):
                require(lay.value("statlet_container_memory_qos_expected_bytes", id=path, knob="high") == INF,
                        f"{path}: a memory.high claimed with no factor")
        require(lay.value("statlet_node_memory_qos_min_bytes", id="/kubepods.slice") == 0, "node min total")
        require(not [l for l, v in lay.values("statlet_memory_protection_capped")], "capped flags with no protection")
        ctx.note(f"v1.37 defaults (gate on, policy None, no factor): {n} knobs expected = written, all 0 / max")

    def v137_no_throttling(ctx):
        lay = layouts(ctx)["v137"]
        web = lay.containers["web"]
        text = _read(os.path.join(ctx.g.root, "kubelet", "v137-scrapes.metrics"), "") or ""
        scrapes = [parse_metrics(chunk) for chunk in re.split(r"^# scrape .*$", text, flags=re.M)[1:]]
        require(len(scrapes) >= 12, f"only {len(scrapes)} scrapes of the v1.37 layout")

        def one(samples, name, **labels):
            return next((v for n, l, v in samples if n == name and all(l.get(k) == w for k, w in labels.items())), None)

        would_be = (16 * MI * 10 + 9 * (128 * MI - 16 * MI)) // 40960 * 4096  # factor 0.9, as v1.36
        usage = [one(s, "container_memory_usage_bytes", id=web) for s in scrapes]
        require(all(u is not None for u in usage), "web's usage missing from a scrape")
        above = [u for u in usage if u > would_be]
        require(len(above) >= 10, f"web above factor 0.9's memory.high ({would_be / MI:.1f} MiB) in only "
                f"{len(above)} scrapes: {[round(u / MI, 1) for u in usage]}")
        for s in scrapes:
            hot = [l["zone"] for n, l, v in s if n == "statlet_container_memory_qos_zone" and v == 1]
            require("throttling" not in hot, f"a throttling zone with no memory.high: {hot}")
            stalled = [l.get("id") for n, l, v in s if n.startswith("statlet_container_memory_high_stalled")]
            require(not stalled, f"the stall detector spoke of {stalled} with no memory.high")
            require(one(s, "container_memory_events_high_total", id=web) == 0, "memory.events high rose")
            require(one(s, "statlet_memory_high_bytes", id=web) == INF, "web has a memory.high")
        ctx.note(f"v1.37 defaults: web at {min(usage) / MI:.1f}..{max(usage) / MI:.1f} MiB over {len(scrapes)} scrapes "
                 f"(factor 0.9 would throttle from {would_be / MI:.1f} MiB): never throttling, no stall series, "
                 f"memory.events high 0")

    def v137_tiered_reread(ctx):
        lay = layouts(ctx)["v137-tiered"]
        labels = info(lay)
        require(labels.get("rules") == "v1.37" and labels.get("reservation_policy") == "TieredReservation",
                f"after the configuration changed: {labels}")
        n = expected_equals_actual(lay)
        c = lay.containers
        require(lay.value("statlet_container_memory_qos_expected_bytes", id="/kubepods.slice", knob="low") == 48 * MI,
                "v1.37 sets kubepods memory.low to the Burstable requests")
        capped = [l["id"] for l, v in lay.values("statlet_memory_protection_capped") if v == 1]
        require(not capped, f"capped under v1.37 TieredReservation: {capped}")
        side = next((l["zone"] for l, v in lay.values("statlet_container_memory_qos_zone", id=c["side"]) if v == 1), None)
        require(side == "below_request", f"side (8 MiB under its held 32Mi memory.low): {side}")
        require(lay.value("statlet_node_memory_qos_low_bytes", id="/kubepods.slice") == 48 * MI, "node low total")
        log = _read(os.path.join(ctx.g.root, "kubelet", "daemon.log"), "") or ""
        lines = [l.split("msg=", 1)[-1] for l in log.splitlines() if "memory qos: judged by" in l]
        require(any("TieredReservation (config)" in l for l in lines), f"no log line for the new configuration: {lines}")
        ctx.note(f"v1.37 TieredReservation, read while running: {n} knobs expected = written, nothing capped, "
                 f"side below_request")
        for l in lines:
            ctx.note("daemon log: " + l)

    checks = [
        ("kubelet.v136_tiered_expected_equals_written", "kubelet", v136_tiered),
        ("kubelet.v136_totals_capped_zones", "kubelet", v136_totals_and_capped),
        ("kubelet.v137_defaults_expect_nothing", "kubelet", v137_defaults),
        ("kubelet.v137_defaults_no_throttling_no_stall", "kubelet", v137_no_throttling),
        ("kubelet.v137_tiered_reread", "kubelet", v137_tiered_reread),
    ]
    return part, checks
