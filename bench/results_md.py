#!/usr/bin/python3
"""Turns one bench/run's outputs into bench/RESULTS.md and bench/results.json.

usage: results_md.py OUT_DIR RESULTS.md results.json
OUT_DIR holds cri.json (bench_cri --json), e2e.json (bench_e2e_list_stats --json), proxy.json (bench_proxy --json),
encoder.json (Google Benchmark JSON),
otlp.json (bench_otlp_rounds --json), kept.json (bench_prometheus_kept --json) and the
text output of every bench (<name>.txt).
"""
import datetime
import json
import os
import platform
import subprocess
import sys


def machine():
    cpu = "?"
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        mem_kib = int(f.readline().split()[1])
    rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    return {
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(mem_kib / 1024 / 1024, 1),
        "revision": rev,
    }


def cri_tables(cri):
    lines = []
    for size in cri["sizes"]:
        n = size["containers"]
        lines.append(f"\n### CRI stats calls, {n} containers\n")
        lines.append("| side | call | p50 ms [min–max] | CPU ms/call [min–max] | bytes | vs floor (p50, CPU) |")
        lines.append("|---|---|---|---|---|---|")
        floors = {r["what"]: r for r in size["rows"] if r["side"] == "floor"}
        for r in size["rows"]:
            ref = floors.get(r["ref"])
            vs = (f"{r['p50_ms'] / ref['p50_ms']:.2f}×, {r['cpu_ms'] / ref['cpu_ms']:.2f}×"
                  if ref and ref["p50_ms"] > 0 and ref["cpu_ms"] > 0 else "–")
            lines.append(f"| {r['side']} | {r['what']} | {r['p50_ms']:.3f} [{r['p50_min_ms']:.3f}–{r['p50_max_ms']:.3f}] "
                         f"| {r['cpu_ms']:.3f} [{r['cpu_min_ms']:.3f}–{r['cpu_max_ms']:.3f}] | {r['bytes'] or '–'} | {vs} |")
        rows = {(r["side"], r["what"]): r for r in size["rows"]}
        for call in ("ListContainerStats", "ListPodSandboxStats"):
            ours, theirs = rows.get(("statlet", call)), rows.get(("peer", call))
            if ours and theirs and ours["p50_ms"] > 0 and ours["cpu_ms"] > 0:
                lines.append(f"\n{call}: containerd / statlet = {theirs['p50_ms'] / ours['p50_ms']:.1f}× latency, "
                             f"{theirs['cpu_ms'] / ours['cpu_ms']:.1f}× CPU per call.")
                bound = rows.get(("floor", "files, max kept"))
                if bound and bound["p50_ms"] > 0 and bound["cpu_ms"] > 0:
                    kept = size.get("files_max_kept", 0)
                    files = size.get("files_floor_stats", 0) - size.get("files_rendered", 0)
                    every = "every one" if kept >= files else f"{kept:.0f} of {files:.0f} (RLIMIT_NOFILE)"
                    lines.append(f"The same files with {every} kept open: containerd / floor = "
                                 f"{theirs['p50_ms'] / bound['p50_ms']:.1f}× latency, "
                                 f"{theirs['cpu_ms'] / bound['cpu_ms']:.1f}× CPU.")
        stats_files = size.get("files_floor_stats")
        rendered = size.get("files_rendered", 0)
        walks = f", {rendered:.0f} of them from the eBPF walks" if rendered else ""
        container_files = size.get("files_floor_containers")
        containers_part = f"; the container stats calls' {container_files:.0f}" if container_files else ""
        stats_part = f" (the pod stats calls' collections {stats_files:.0f}{walks}{containers_part})" if stats_files else ""
        lines.append(f"\nFiles per collection: floor {size['files_floor']:.0f}{stats_part}, "
                     f"statlet {size['files_statlet']:.0f}. "
                     f"Daemon RSS after 10 calls of each stats call {size['rss_stats_kib'] / 1024:.1f} MiB "
                     f"(anonymous {size['anon_stats_kib'] / 1024:.1f}), after 10 ListPodSandboxMetrics more "
                     f"{size['rss_all_kib'] / 1024:.1f} MiB (anonymous {size['anon_all_kib'] / 1024:.1f}), "
                     f"peak {size['rss_peak_kib'] / 1024:.1f} MiB.")
        if size.get("cgroup_all_kib", -1) >= 0:
            lines.append(f"The daemon's memory cgroup after all calls (what a memory limit sees): "
                         f"{size['cgroup_all_kib'] / 1024:.1f} MiB, of which kernel memory "
                         f"{size['kernel_all_kib'] / 1024:.1f} MiB (mostly the kept cgroup files' buffers).")
    return lines


def e2e_tables(e):
    where = "every cgroup of the host" if e["whole_host"] else "the stage's cgroups only"
    lines = []
    for shape in e["shapes"]:
        lines.append(f"\n### CRI ListContainerStats beside containerd, {shape['pods']} real pods, "
                     f"{shape['containers']} containers (bench_e2e_list_stats)\n")
        lines.append(f"containerd 1.6 + runc, `sleep` containers spread over the pods; statlet collects {where} with "
                     f"`--cri.max-age=0s`. {e['rounds']} rounds alternating which side goes first, {e['calls']} calls "
                     "per side and round; median of the rounds' medians [min–max]; CPU from /proc/<pid>/stat (10 ms "
                     "ticks). Both sides answered the same container ids in every round (the bench fails otherwise). "
                     "The floor is statlet's Version call on the same channel: gRPC's per-call cost.\n")
        lines.append("| side | call | p50 ms [min–max] | CPU ms/call [min–max] |")
        lines.append("|---|---|---|---|")
        for r in shape["rows"]:
            lines.append(f"| {r['side']} | {r['call']} | {r['p50_ms']:.3f} [{r['p50_min_ms']:.3f}–{r['p50_max_ms']:.3f}] "
                         f"| {r['cpu_ms']:.3f} [{r['cpu_min_ms']:.3f}–{r['cpu_max_ms']:.3f}] |")
        cpu = (f"{shape['cpu_ratio']:.1f}× CPU per call" if shape["cpu_ratio"] > 0
               else "statlet's CPU per call below what the ticks resolve")
        lines.append(f"\ncontainerd / statlet (medians): {shape['latency_ratio']:.1f}× latency, {cpu}.")
    return lines


def proxy_table(proxy):
    lines = [f"\n### CRI proxy: containerd straight vs through statlet (--cri.proxy)\n",
             f"{proxy['rounds']} rounds alternating the sides, {proxy['calls']} calls of each kind per side and round, "
             f"{proxy['cycles']} pod cycles per side and round, {proxy['pods']} pods listed. "
             "Targets: ≤ +100 µs p50 and ≤ +1 ms p99 per passed call, the pod cycle ≤ 1.05× direct, "
             "proxy RSS ≤ stats-mode RSS + 5 MiB after 10,000 passed calls.\n",
             "| call | direct p50 ms [min–max] | statlet p50 ms [min–max] | added p50 µs [min–max] | "
             "direct p99 ms | statlet p99 ms | added p99 µs [min–max] |",
             "|---|---|---|---|---|---|---|"]
    for u in proxy["unary"]:
        lines.append(f"| {u['call']} | {u['direct_p50_ms']:.3f} [{u['direct_p50_min_ms']:.3f}–{u['direct_p50_max_ms']:.3f}] "
                     f"| {u['statlet_p50_ms']:.3f} [{u['statlet_p50_min_ms']:.3f}–{u['statlet_p50_max_ms']:.3f}] "
                     f"| {u['added_p50_us']:+.0f} [{u['added_p50_min_us']:+.0f}…{u['added_p50_max_us']:+.0f}] "
                     f"| {u['direct_p99_ms']:.3f} | {u['statlet_p99_ms']:.3f} "
                     f"| {u['added_p99_us']:+.0f} [{u['added_p99_min_us']:+.0f}…{u['added_p99_max_us']:+.0f}] |")
    c = proxy["cycle"]
    lines.append(f"\nPod cycle (RunPodSandbox → CreateContainer → StartContainer → StopContainer → RemoveContainer → "
                 f"StopPodSandbox → RemovePodSandbox): direct {c['direct_ms']:.1f} ms [{c['direct_min_ms']:.1f}–"
                 f"{c['direct_max_ms']:.1f}], through statlet {c['statlet_ms']:.1f} ms [{c['statlet_min_ms']:.1f}–"
                 f"{c['statlet_max_ms']:.1f}], ratio {c['ratio']:.3f}× [{c['ratio_min']:.3f}–{c['ratio_max']:.3f}].")
    m = proxy["memory"]
    lines.append(f"RSS after {m['passed']} passed calls: proxy {m['proxy_kib'] / 1024:.1f} MiB "
                 f"({m['proxy_before_kib'] / 1024:.1f} before them), stats mode {m['stats_kib'] / 1024:.1f} MiB "
                 f"({m['stats_before_kib'] / 1024:.1f}): {(m['proxy_kib'] - m['stats_kib']) / 1024:+.1f} MiB.")
    return lines


def encoder_table(enc):
    lines = ["\n### Prometheus encoder (Google Benchmark, medians of the repetitions)\n",
             "| benchmark | ns per series | CPU ns per iteration |", "|---|---|---|"]
    for b in enc["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        per = b.get("ns_per_series")
        if per is not None and per < 1e-3:  # an inverted rate counter: seconds per series
            per *= 1e9
        lines.append(f"| {b['run_name']} | {per:.1f} | {b['cpu_time']:.0f} |" if per is not None
                     else f"| {b['run_name']} | – | {b['cpu_time']:.0f} |")
    return lines


def otlp_table(o):
    lines = ["\n### OTLP export encode against the /metrics text encode of the same snapshot "
             "(bench_otlp_rounds: alternating rounds, CPU ms per encode, medians [min–max])\n",
             "| containers | OTLP ms | text ms | OTLP / text | points | ns/point | series | ns/series "
             "| OTLP bytes (requests) | text bytes |", "|---|---|---|---|---|---|---|---|---|---|"]
    for n in o["nodes"]:
        om, tm, r = n["otlp_ms"], n["text_ms"], n["ratio"]
        lines.append(f"| {n['containers']} | {om[0]:.3f} [{om[1]:.3f}–{om[2]:.3f}] | {tm[0]:.3f} [{tm[1]:.3f}–{tm[2]:.3f}] "
                     f"| {r[0]:.2f}× [{r[1]:.2f}–{r[2]:.2f}] | {n['points']} | {om[0] * 1e6 / n['points']:.1f} "
                     f"| {n['series']} | {tm[0] * 1e6 / n['series']:.1f} | {n['otlp_bytes']} ({n['requests']}) "
                     f"| {n['text_bytes']} |")
    lines.append(f"\nLinearity (ns per point at 1,000 containers over that at 100): OTLP {o['linearity_otlp']:.2f}, "
                 f"text {o['linearity_text']:.2f}. {o['rounds']} rounds.")
    return lines


def kept_table(k):
    lines = ["\n### /metrics encode re-rendering only what changed (bench_prometheus_kept: alternating rounds, "
             "CPU ms per encode, medians [min–max])\n",
             f"{k['containers']} containers, {k['cgroups']} cgroups, {k['series']} series, {k['bytes']} bytes; "
             f"the 10 % snapshot changes {k['changed_10'] * 100:.1f} % of the series' lines, the all-moved one "
             f"{k['changed_all'] * 100:.1f} %. Each side alternates A with its other snapshot; every round checks "
             "that the kept text is byte for byte the full encode's.\n",
             "| side | ms per encode |", "|---|---|"]
    for s in k["sides"]:
        lines.append(f"| {s['side']} | {s['ms_p50']:.3f} [{s['ms_min']:.3f}–{s['ms_max']:.3f}] |")
    for key, what in (("ratio_10", "10 % of values moved"), ("ratio_all", "every value moved"),
                      ("ratio_0", "nothing moved (the floor)")):
        r = k.get(key)
        if r:
            lines.append(f"\nkept / full, {what}: {r['p50']:.3f} [{r['min']:.3f}–{r['max']:.3f}]")
    m = k["kept"]
    lines.append(f"\nKept state after the 10 % side: text {m['text_live'] / 2**20:.1f} MiB live in "
                 f"{m['text_chunks'] / 2**20:.1f} MiB of chunks (+{m['text_spare'] / 2**20:.1f} MiB spare), "
                 f"index {m['index'] / 2**20:.1f} MiB, {m['label_combinations']} label combinations. "
                 f"{k['rounds']} rounds; same work checked: {k['same_work']}.")
    a = k.get("kept_all")
    if a:
        lines.append(f"After the all-moved side (families rendered whole, their text living one encode): text "
                     f"{a['text_live'] / 2**20:.1f} MiB live in {a['text_chunks'] / 2**20:.1f} MiB of chunks "
                     f"(+{a['text_spare'] / 2**20:.1f} MiB spare), index {a['index'] / 2**20:.1f} MiB. "
                     f"A full encode keeps its output: {k['bytes'] / 2**20:.1f} MiB.")
    return lines


def main():
    out, md_path, json_path = sys.argv[1:4]
    m = machine()
    results = {"machine": m}
    lines = ["# statlet benchmark results", "",
             f"Written by `bench/run` on {m['date']} at revision {m['revision']}: {m['cpus']} CPUs ({m['cpu']}), "
             f"{m['memory_gib']} GiB, kernel {m['kernel']}. Every whole-process bench alternates its sides in rounds "
             "within one run; figures are medians with the rounds' spread. Reproduce with `sudo bench/run`."]
    failed_path = os.path.join(out, "failed.txt")
    if os.path.exists(failed_path):
        with open(failed_path) as f:
            failed = f.read().strip()
        results["failed"] = failed.splitlines()
        lines += ["", "**Failed in this run** (their figures are partial or missing): " + "; ".join(results["failed"])]
    cri_path = os.path.join(out, "cri.json")
    if os.path.exists(cri_path):
        with open(cri_path) as f:
            results["cri"] = json.load(f)
        lines += cri_tables(results["cri"])
    e2e_path = os.path.join(out, "e2e.json")
    if os.path.exists(e2e_path):
        with open(e2e_path) as f:
            results["e2e"] = json.load(f)
        lines += e2e_tables(results["e2e"])
    proxy_path = os.path.join(out, "proxy.json")
    if os.path.exists(proxy_path):
        with open(proxy_path) as f:
            results["proxy"] = json.load(f)
        lines += proxy_table(results["proxy"])
    enc_path = os.path.join(out, "encoder.json")
    if os.path.exists(enc_path):
        with open(enc_path) as f:
            results["encoder"] = json.load(f)
        lines += encoder_table(results["encoder"])
    for name, table in (("otlp", otlp_table), ("kept", kept_table)):
        path = os.path.join(out, name + ".json")
        if os.path.exists(path):
            with open(path) as f:
                results[name] = json.load(f)
            lines += table(results[name])
    for name in ("scrape", "collection"):
        path = os.path.join(out, name + ".txt")
        if os.path.exists(path):
            with open(path) as f:
                text = f.read()
            results[name] = text
            lines += [f"\n### {name} (raw output)\n", "```", text.rstrip(), "```"]
    with open(md_path, "w") as f:
        f.write("\n".join(lines) + "\n")
    with open(json_path, "w") as f:
        json.dump(results, f, indent=1)


if __name__ == "__main__":
    main()
