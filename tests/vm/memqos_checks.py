"""Host-side checks of the guest's Memory QoS runs (guest/memqos_runs.sh).

The guest scraped /metrics every period while three containers ran: one livelocked at
memory.high, one throttled normally (clean page cache), one growing step by step. These
checks read those scrapes, the guest's marks ($R/times) and the daemon's log, and record
the measurements docs/memory-qos.md quotes: onset-to-flag time, memory PSI full avg10 and
memory.events high rates during the livelock and during normal throttling.
"""

import json
import os
import re
import statistics

from guest_results import _read

# The daemon's defaults (collector/memory_high_stall.h, flags in cmd/options_memory_qos.cc); the guest
# runs it with them.
DWELL_S = 10.0
PSI_FULL_THRESHOLD = 0.40  # ratio, as statlet_pressure_stall_ratio serves it
USAGE_MARGIN = 0.05
RISE_GRACE_S = 3.0


class Scrape:
    def __init__(self, start):
        self.start = start
        self.end = start
        self.samples = []  # (name, labels, value)

    def value(self, name, **labels):
        for n, l, v in self.samples:
            if n == name and all(l.get(k) == want for k, want in labels.items()):
                return v
        return None

    def zone(self, cid):
        hot = [l.get("zone") for n, l, v in self.samples
               if n == "statlet_container_memory_qos_zone" and l.get("id") == cid and v == 1]
        return hot[0] if len(hot) == 1 else None


class MemQos:
    def __init__(self, root, parse_metrics):
        d = os.path.join(root, "memqos")
        self.present = os.path.isdir(d)
        self.containers = {}
        for line in (_read(os.path.join(d, "containers"), "") or "").splitlines():
            name, path = line.split()
            self.containers[name] = path
        self.expect = dict(l.split("=", 1) for l in (_read(os.path.join(d, "expect"), "") or "").splitlines() if "=" in l)
        self.scrapes = []
        cur = None
        for line in (_read(os.path.join(d, "scrapes"), "") or "").splitlines():
            m = re.match(r"^# scrape (\S+)", line)
            if m:
                cur = Scrape(float(m.group(1)))
                self.scrapes.append(cur)
                continue
            m = re.match(r"^# done (\S+)", line)
            if m and cur is not None:
                cur.end = float(m.group(1))
                continue
            if cur is not None:
                cur.samples.extend(parse_metrics(line))
        self.reports = {n: _read(os.path.join(d, n + ".report")) for n in ("livelock", "cache", "steps")}
        self.swaps = _read(os.path.join(d, "swaps"), "")

    def series(self, cid, name, **labels):
        """[(scrape end time, value)] of one series over the scrapes that have it."""
        out = []
        for s in self.scrapes:
            v = s.value(name, id=cid, **labels)
            if v is not None:
                out.append((s.end, v))
        return out

    def period(self):
        gaps = [b.end - a.end for a, b in zip(self.scrapes, self.scrapes[1:])]
        return max(gaps) if gaps else None

    def rates(self, cid, t0, t1):
        """memory.events high per second and PSI full avg10 (ratio) over scrapes in [t0, t1]."""
        ev = [(t, v) for t, v in self.series(cid, "container_memory_events_high_total") if t0 <= t <= t1]
        psi = [v for t, v in self.series(cid, "statlet_pressure_stall_ratio", resource="memory", kind="full",
                                         window="10s") if t0 <= t <= t1]
        rate = (ev[-1][1] - ev[0][1]) / (ev[-1][0] - ev[0][0]) if len(ev) >= 2 and ev[-1][0] > ev[0][0] else None
        return rate, psi


def _fmt(v, spec=".2f"):
    return "n/a" if v is None else format(v, spec)


def make_checks(require, parse_metrics):
    """(part detector, [(name, part, fn)]) for check_results.py."""
    cache = {}

    def mq(ctx):
        if "mq" not in cache:
            cache["mq"] = MemQos(ctx.g.root, parse_metrics)
        return cache["mq"]

    def part(g):
        help_text = g.statlet_file("help.out") or ""
        if "--memory-qos.stall-dwell" not in help_text:
            return False, "statlet --help lists no --memory-qos.stall-dwell"
        if not os.path.isdir(os.path.join(g.root, "memqos")):
            return False, "the guest ran no Memory QoS workloads"
        return True, ""

    def times(ctx, *names):
        t = ctx.g.times
        missing = [n for n in names if n not in t]
        require(not missing, f"guest marks missing: {missing} (errors: {ctx.g.errors})")
        return [t[n] for n in names]

    def livelock_flagged(ctx):
        m = mq(ctx)
        live = m.containers["qos-livelock"]
        require(len(m.swaps.strip().splitlines()) <= 1, f"the guest has swap: {m.swaps}")
        start, onset, flagged = times(ctx, "livelock_start", "livelock_onset", "livelock_flagged")
        stalled = m.series(live, "statlet_container_memory_high_stalled")
        require(stalled, "no statlet_container_memory_high_stalled series for the livelocked container")
        first_flag = next((t for t, v in stalled if v == 1), None)
        require(first_flag is not None, "never flagged in the scrapes")
        # The detector's own onset: the first scrape from which usage at memory.high, PSI
        # full >= threshold and rising events held without a break up to the flag.
        high = {t: v for t, v in m.series(live, "statlet_memory_high_bytes")}
        usage = {t: v for t, v in m.series(live, "container_memory_usage_bytes")}
        psi = {t: v for t, v in m.series(live, "statlet_pressure_stall_ratio", resource="memory", kind="full",
                                         window="10s")}
        ev = m.series(live, "container_memory_events_high_total")
        cond_start = None
        prev_ev = None
        last_rise = None
        for t, e in ev:
            if t > first_flag:
                break
            if prev_ev is not None and e > prev_ev:
                last_rise = t
            rising = last_rise is not None and t - last_rise <= RISE_GRACE_S
            holds = (t in high and t in usage and t in psi and usage[t] >= high[t] * (1 - USAGE_MARGIN)
                     and psi[t] >= PSI_FULL_THRESHOLD and rising)
            if not holds:
                cond_start = None
            elif cond_start is None:
                cond_start = t
            prev_ev = e
        period = m.period()
        since = m.series(live, "statlet_container_memory_high_stalled_since_seconds")
        require(since, "no statlet_container_memory_high_stalled_since_seconds while stalled")
        ctx.note(f"livelock: memory.high {m.expect['live_high']}, memory.max {m.expect['live_max']}, no swap; "
                 f"collection period {_fmt(period)} s (max gap)")
        ctx.note(f"livelock: allocator start {start:.2f}s, first memory.events high {onset:.2f}s, "
                 f"conditions held from {_fmt(cond_start)}s, flag seen {first_flag:.2f}s")
        ctx.note(f"livelock: onset-to-flag {first_flag - onset:.2f} s (events high > 0 to flag); "
                 f"conditions-to-flag {_fmt(None if cond_start is None else first_flag - cond_start)} s "
                 f"(dwell {DWELL_S:g} s)")
        require(cond_start is not None, "the scrapes never show the conditions holding before the flag")
        require(first_flag - cond_start <= DWELL_S + period + 0.5,
                f"flagged {first_flag - cond_start:.2f} s after the conditions held: > dwell {DWELL_S} + one "
                f"collection {period:.2f} s")
        require(first_flag - cond_start >= DWELL_S - period - 0.5, "flagged before the dwell was over")

    def normal_throttling_not_flagged(ctx):
        m = mq(ctx)
        cache_cg = m.containers["qos-cache"]
        stalled = m.series(cache_cg, "statlet_container_memory_high_stalled")
        require(len(stalled) >= 10, f"only {len(stalled)} scrapes of the cache container")
        require(all(v == 0 for t, v in stalled), "the normally throttled container was flagged")
        t0, t1 = stalled[0][0], stalled[-1][0]
        rate, psi = m.rates(cache_cg, t0, t1)
        require(rate is not None and rate > 0, f"memory.events high never rose for the cache container ({rate})")
        zones = [s.zone(cache_cg) for s in m.scrapes if s.zone(cache_cg)]
        ctx.note(f"normal throttling (page cache, memory.high {m.expect['cache_high']}): {len(stalled)} scrapes "
                 f"over {t1 - t0:.1f} s, never flagged; memory.events high {rate:.1f}/s; PSI full avg10 "
                 f"max {max(psi) * 100:.2f}% median {statistics.median(psi) * 100:.2f}%; zones seen "
                 f"{sorted(set(zones))}")
        require(max(psi) < PSI_FULL_THRESHOLD, f"PSI full avg10 reached {max(psi)}")

    def steps_walk_zones(ctx):
        m = mq(ctx)
        steps = m.containers["qos-steps"]
        t_below, t_above, t_thr = times(ctx, "step_below_request", "step_above_request", "step_throttling")
        require(t_below <= t_above <= t_thr, f"zone marks out of order: {t_below}, {t_above}, {t_thr}")
        order = {"below_request": 0, "above_request": 1, "throttling": 2, "at_limit": 3}
        seq = [s.zone(steps) for s in m.scrapes if s.zone(steps)]
        walked = [z for i, z in enumerate(seq) if i == 0 or z != seq[i - 1]]
        ctx.note(f"steps (memory.min {m.expect['steps_min']}, memory.high {m.expect['steps_high']}, "
                 f"+{m.expect['step']} per step): zones walked {walked}")
        require(walked[:3] == ["below_request", "above_request", "throttling"],
                f"zones walked {walked}, want below_request -> above_request -> throttling")
        require(all(order[a] <= order[b] for a, b in zip(seq, seq[1:])), f"zone went back: {walked}")

    def flag_clears(ctx):
        m = mq(ctx)
        live = m.containers["qos-livelock"]
        stopped, cleared = times(ctx, "livelock_stopped", "livelock_cleared")
        stalled = m.series(live, "statlet_container_memory_high_stalled")
        first_clear = next((t for t, v in stalled if t > stopped and v == 0), None)
        require(first_clear is not None, "the flag did not clear in the scrapes")
        period = m.period()
        # The allocator has stopped when memory.events high stops rising (a throttled task
        # sees the signal only after its penalty sleeps): the last rise before the clear.
        ev = [(t, v) for t, v in m.series(live, "container_memory_events_high_total") if t <= first_clear]
        last_rise = max((b[0] for a, b in zip(ev, ev[1:]) if b[1] > a[1]), default=None)
        require(last_rise is not None, "memory.events high never rose")
        ctx.note(f"flag cleared {first_clear - stopped:.2f} s after the allocator was told to stop, "
                 f"{first_clear - last_rise:.2f} s after the last rise of memory.events high (bound: rise grace "
                 f"{RISE_GRACE_S:g} s + one collection {period:.2f} s)")
        require(first_clear - last_rise <= RISE_GRACE_S + period + 0.5,
                f"cleared {first_clear - last_rise:.2f} s after the last rise")
        require(first_clear - stopped <= 30, f"cleared {first_clear - stopped:.2f} s after stop")
        require("chunks=" in (m.reports["livelock"] or ""), "the allocator wrote no report")
        log = ctx.g.statlet_file("daemon.log") or ""
        enters = [l for l in log.splitlines() if "memory.high stall: enter" in l and live in l]
        exits = [l for l in log.splitlines() if "memory.high stall: exit" in l and live in l]
        require(len(enters) == 1 and len(exits) == 1,
                f"log lines for the livelocked container: {len(enters)} enter, {len(exits)} exit")
        ctx.note("daemon log: " + enters[0].split("msg=", 1)[-1])
        ctx.note("daemon log: " + exits[0].split("msg=", 1)[-1])

    def measurements(ctx):
        m = mq(ctx)
        live = m.containers["qos-livelock"]
        flagged, stopped = times(ctx, "livelock_flagged", "livelock_stopped")
        onset = ctx.g.times["livelock_onset"]
        rate, psi = m.rates(live, onset, stopped)
        require(rate is not None and psi, "no livelock readings")
        ctx.note(f"livelock: memory.events high {rate:.1f}/s; PSI full avg10 max {max(psi) * 100:.2f}% median "
                 f"{statistics.median(psi) * 100:.2f}% (from onset to stop, {len(psi)} scrapes)")
        late = [v for t, v in m.series(live, "statlet_pressure_stall_ratio", resource="memory", kind="full",
                                       window="10s") if flagged - 5 <= t <= stopped]
        ctx.note(f"livelock around the flag: PSI full avg10 min {min(late) * 100:.2f}%")
        usage = [v for t, v in m.series(live, "container_memory_usage_bytes") if onset <= t <= stopped]
        ctx.note(f"livelock usage: {min(usage) / 2**20:.1f}..{max(usage) / 2**20:.1f} MiB "
                 f"(memory.high {m.expect['live_high']}, memory.max {m.expect['live_max']}); "
                 f"allocator report: {(m.reports['livelock'] or '').strip()}")
        require(max(usage) < 256 * 2**20 - 2**20, "the livelocked container reached memory.max")

    def cri_and_metrics_carry_the_view(ctx):
        # The workloads stage's memory-high container (memory.high 32M, 128M of anonymous
        # memory, no swap) is livelocked too: by the daemon's final reads it has been
        # stalled for far longer than the dwell, on both edges.

        mh = ctx.g.containers["memory-high"]
        rc = (ctx.g.statlet_file("cri-stats.rc") or "").strip()
        doc = json.loads(ctx.g.statlet_file("cri-stats.out") or "{}")
        require(rc == "0", f"CRI ListContainerStats exit {rc}")
        by_id = {st["attributes"]["id"]: st for st in doc.get("stats", [])}
        q = by_id.get(mh.id, {}).get("memory", {}).get("memoryQos")
        require(q is not None, "CRI stats carry no memory_qos for the memory-high container")
        require(q.get("zone") == "throttling" and q.get("highStalled") is True and int(q.get("highStalledSince", 0)) > 0,
                f"CRI memory_qos of the memory-high container: {q}")
        cache_id = None
        m = mq(ctx)
        for cid, st in by_id.items():
            if st.get("cgroupPath") == m.containers["qos-cache"]:
                cache_id = cid
        require(cache_id is not None, "CRI stats lack the cache container")
        cq = by_id[cache_id]["memory"]["memoryQos"]
        require(not cq.get("highStalled"), f"CRI flags the cache container: {cq}")
        ctx.note(f"CRI memory_qos: memory-high container {q}; cache container {cq}")
        text = ctx.g.statlet_file("metrics.out") or ""
        flagged = [l for l in text.splitlines()
                   if l.startswith("statlet_container_memory_high_stalled{") and f'id="{mh.path}"' in l]
        require(flagged and flagged[0].endswith(" 1"), f"/metrics: {flagged}")

    checks = [
        ("memqos.livelock_flagged_within_dwell", "memqos", livelock_flagged),
        ("memqos.normal_throttling_not_flagged", "memqos", normal_throttling_not_flagged),
        ("memqos.steps_walk_zones", "memqos", steps_walk_zones),
        ("memqos.flag_clears_when_allocator_stops", "memqos", flag_clears),
        ("memqos.measurements", "memqos", measurements),
        ("memqos.cri_and_metrics_carry_the_view", "memqos", cri_and_metrics_carry_the_view),
    ]
    return part, checks
