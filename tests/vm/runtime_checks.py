"""Host-side checks of Memory QoS applied by a real runtime (guest/runtime_runs.sh).

Debian's containerd and runc ran in the guest on the cgroup-v2 kernel; a container was
created over CRI with a memory limit and the kubelet's unified memory.min / memory.high. The
checks read the guest's copy of the container's cgroup files (what runc wrote) and a daemon's
scrape taken once it showed the container applied: the runtime's values, the expected knobs,
the cgroup's knobs and the zone, each against the values the guest asked for.
"""

import json
import os

from guest_results import _parse_dump, _read


def _key_values(text):
    return dict(l.split("=", 1) for l in (text or "").splitlines() if "=" in l)


def make_checks(require, parse_metrics):
    def rt_dir(ctx):
        return os.path.join(ctx.g.root, "runtime")

    def part(g):
        d = os.path.join(g.root, "runtime")
        if not os.path.isdir(d):
            return False, "the guest ran no runtime stage (no statlet_vm_cri_pod or containerd in the guest)"
        if not os.path.isfile(os.path.join(d, "created")):
            log = (_read(os.path.join(d, "cri_pod.log"), "") or "")[-400:]
            ctd = (_read(os.path.join(d, "containerd.log"), "") or "")[-400:]
            return False, f"no container created over CRI: {log} containerd: {ctd}"
        return True, ""

    def view(ctx):
        d = rt_dir(ctx)
        created = _key_values(_read(os.path.join(d, "created")))
        expect = {k: int(v) for k, v in _key_values(_read(os.path.join(d, "expect"))).items()}
        samples = parse_metrics(_read(os.path.join(d, "scrape.metrics"), "") or "")
        cg = _parse_dump(_read(os.path.join(d, "container.cg"), ""), _read(os.path.join(d, "container.cg.inodes"), ""))
        return created, expect, samples, cg.get(created["cgroup"])

    def value(samples, name, **labels):
        got = [v for n, l, v in samples if n == name and all(l.get(k) == w for k, w in labels.items())]
        require(len(got) == 1, f"{name}{labels}: {len(got)} series")
        return got[0]

    def runc_wrote_the_knobs(ctx):
        created, expect, _, files = view(ctx)
        require(files is not None, f"no cgroup files read for {created['cgroup']}")
        for knob, want in (("memory.min", expect["min"]), ("memory.high", expect["high"]),
                           ("memory.max", expect["limit"])):
            require(files.value(knob) == want, f"{created['cgroup']}/{knob} = {files.value(knob)}, asked {want}")
        ctx.note(f"runc wrote memory.min {expect['min']}, memory.high {expect['high']}, memory.max {expect['limit']} "
                 f"in {created['cgroup']}")

    def applied_with_expected_knobs(ctx):
        created, expect, s, files = view(ctx)
        cid = created["cgroup"]
        require(value(s, "statlet_container_memory_qos_applied", id=cid) == 1, "not applied")
        for res, want in (("limit", expect["limit"]), ("min", expect["min"]), ("high", expect["high"])):
            got = value(s, "statlet_container_memory_qos_resource_bytes", id=cid, resource=res)
            require(got == want, f"the runtime's {res}: {got}, created with {want}")
        for knob, want in (("min", expect["min"]), ("high", expect["high"])):
            got = value(s, "statlet_container_memory_qos_expected_bytes", id=cid, knob=knob)
            require(got == want, f"expected {knob}: {got}, the runtime's unified value {want}")
        require(value(s, "statlet_memory_min_bytes", id=cid) == files.value("memory.min"), "memory.min differs")
        require(value(s, "statlet_memory_high_bytes", id=cid) == files.value("memory.high"), "memory.high differs")
        require(value(s, "container_spec_memory_limit_bytes", id=cid) == files.value("memory.max"), "limit differs")
        ctx.note(f"{cid}: applied, runtime limit/min/high {expect['limit']}/{expect['min']}/{expect['high']}, "
                 f"expected min/high = cgroup min/high")

    def zone_from_the_runtimes_request(ctx):
        created, expect, s, files = view(ctx)
        cid = created["cgroup"]
        zones = {l["zone"]: v for n, l, v in s if n == "statlet_container_memory_qos_zone" and l.get("id") == cid}
        require(sorted(zones) == ["above_request", "at_limit", "below_request", "throttling"], f"zones {zones}")
        hot = [z for z, v in zones.items() if v == 1]
        require(len(hot) == 1 and sum(zones.values()) == 1, f"zones not one-hot: {zones}")
        usage = value(s, "container_memory_usage_bytes", id=cid)
        # A sleeping busybox holds far less than its 16 MiB request, in the scrape and in the
        # guest's read after it.
        require(usage < expect["min"] and files.value("memory.current") < expect["min"],
                f"usage {usage} (cgroup {files.value('memory.current')}) not below the request {expect['min']}")
        require(hot == ["below_request"], f"zone {hot} with usage {usage} below the request {expect['min']}")
        ctx.note(f"zone below_request at usage {int(usage)} B (request {expect['min']})")

    def cri_view_applied(ctx):
        created, expect, _, _ = view(ctx)
        d = rt_dir(ctx)
        text = _read(os.path.join(d, "cri.json"))
        require(text, f"no CRI view: {(_read(os.path.join(d, 'cri.err'), '') or '')[-300:]}")
        by_id = {st["attributes"]["id"]: st for st in json.loads(text).get("stats", [])}
        q = by_id.get(created["container_id"], {}).get("memory", {}).get("memoryQos")
        require(q is not None, f"CRI stats carry no memory_qos for {created['container_id']}")
        require(q.get("applied") is True, f"CRI memory_qos not applied: {q}")
        for field, want in (("expectedMinBytes", expect["min"]), ("expectedHighBytes", expect["high"]),
                            ("minBytes", expect["min"]), ("requestBytes", expect["min"])):
            # A wrapped uint64: {"value": "<decimal>"}.
            require(int(q.get(field, {}).get("value", -1)) == want, f"CRI {field}: {q}")
        require(q.get("requestSource") == "runtime", f"CRI request source: {q}")
        require(q.get("zone") == "below_request", f"CRI zone: {q}")
        ctx.note(f"CRI memory_qos: {q}")

    checks = [
        ("runtime.runc_wrote_the_unified_knobs", "runtime", runc_wrote_the_knobs),
        ("runtime.memqos_applied_with_expected_knobs", "runtime", applied_with_expected_knobs),
        ("runtime.memqos_zone_from_the_runtimes_request", "runtime", zone_from_the_runtimes_request),
        ("runtime.cri_view_applied", "runtime", cri_view_applied),
    ]
    return part, checks
