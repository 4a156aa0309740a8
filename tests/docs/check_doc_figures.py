#!/usr/bin/python3
"""The figures README.md and the DaemonSet's sizing comment quote from bench/RESULTS.md are
the ones bench/RESULTS.md holds: each quoted figure is looked up in bench/results.json (the
same run, written beside RESULTS.md by bench/results_md.py) and must be that value rounded
as the text shows it. A claim the text no longer makes fails too, so rewording a sentence
means updating its line here.

usage: check_doc_figures.py REPO_ROOT"""
import json
import os
import re
import sys

root = sys.argv[1]
failures = []
results = json.load(open(os.path.join(root, "bench/results.json")))
results_md = open(os.path.join(root, "bench/RESULTS.md")).read()


def fail(what):
    failures.append(what)


# ------------------------------------------------------------------ what results.json says
m = re.search(r"at revision (\w+)", results_md)
if not m or m.group(1) != results["machine"]["revision"]:
    fail(f"bench/RESULTS.md and bench/results.json are of different runs ({m and m.group(1)} vs "
         f"{results['machine']['revision']})")


def size(n):
    return next(s for s in results["cri"]["sizes"] if s["containers"] == n)


def row(n, side, what):
    return next(r for r in size(n)["rows"] if r["side"] == side and r["what"] == what)


def scrape(cgroups, field):
    m = re.search(rf"cgroups={cgroups} statlet .*\b{re.escape(field)}=([0-9.]+)", results["scrape"])
    return float(m.group(1))


def mib(kib):
    return kib / 1024


# ------------------------------------------------------------------ comparing
def number(text):
    """The figure as written ("1,315", "29.2") and half a unit of its last digit."""
    digits = text.replace(",", "")
    decimals = len(digits.split(".")[1]) if "." in digits else 0
    return float(digits), 0.5 * 10 ** -decimals


def claim(where, text, pattern, expected):
    """Every group of `pattern` in `text` against the value of the same index in `expected`."""
    m = re.search(pattern, text)
    if not m:
        fail(f"{where}: no longer says {pattern!r}: reword this check with the text")
        return
    for i, want in enumerate(expected, start=1):
        got, half = number(m.group(i))
        # The figure is `want` rounded to the digits shown (a hair of slack for binary floats).
        if abs(got - want) > half * 1.0001:
            fail(f"{where}: says {m.group(i)} in {m.group(0)!r}; bench/RESULTS.md gives {want:.4g}")


def flat(text, comment=None):
    """Lines joined into one string (a sentence wraps); comment markers dropped for YAML."""
    lines = []
    for line in text.splitlines():
        if comment is not None:
            stripped = line.strip()
            if not stripped.startswith(comment):
                continue
            line = stripped[len(comment):]
        lines.append(line.strip())
    return " ".join(lines)


N = r"([0-9][0-9,]*(?:\.[0-9]+)?)"

# ------------------------------------------------------------------ README.md
readme_text = open(os.path.join(root, "README.md")).read()
readme = flat(readme_text)
claim("README.md", readme, r"From the last run \(revision (?:\w+), " + N + " CPUs", [results["machine"]["cpus"]])
if f"From the last run (revision {results['machine']['revision']}," not in readme:
    fail(f"README.md: the quoted run is not bench/RESULTS.md's revision {results['machine']['revision']}")
for call in ("ListContainerStats", "ListPodSandboxStats"):
    for n, shown in ((30, "30"), (1000, "1,000")):
        ours, theirs = row(n, "statlet", call), row(n, "peer", call)
        claim("README.md", readme_text,
              rf"\| {call} \| {shown} \| {N} ms \| {N} ms \| {N}×, {N}× \|",
              [ours["p50_ms"], theirs["p50_ms"], theirs["p50_ms"] / ours["p50_ms"], theirs["cpu_ms"] / ours["cpu_ms"]])
claim("README.md", readme,
      rf"resident set after 10 calls of each stats call: {N} MiB at 30 containers, {N} MiB at 1,000 \({N} MiB after 10 "
      r"ListPodSandboxMetrics more\)",
      [mib(size(30)["rss_stats_kib"]), mib(size(1000)["rss_stats_kib"]), mib(size(1000)["rss_all_kib"])])

# ------------------------------------------------------------------ the DaemonSet's sizing
ds_path = "deploy/kubernetes/daemonset.yaml"
ds = flat(open(os.path.join(root, ds_path)).read(), comment="#")
big = size(1000)
lcs, lpss = row(1000, "statlet", "ListContainerStats"), row(1000, "statlet", "ListPodSandboxStats")
claim(ds_path, ds, rf"after repeated CRI calls RSS {N} MiB, {N} MiB at the peak",
      [mib(big["rss_all_kib"]), mib(big["rss_peak_kib"])])
claim(ds_path, ds, rf"memory cgroup {N} MiB, of which {N} MiB kernel memory",
      [mib(big["cgroup_all_kib"]), mib(big["kernel_all_kib"])])
claim(ds_path, ds, rf"CPU {N} ms per ListContainerStats, {N} ms per ListPodSandboxStats and {N} ms per scrape",
      [lcs["cpu_ms"], lpss["cpu_ms"], scrape(1000, "cpu_ms_per_scrape")])
# What that makes with the kubelet's 10 s stats period and a 15 s scrape, in millicores.
claim(ds_path, ds, rf"~{N}m with the kubelet's 10 s stats period and a 15 s scrape",
      [(lcs["cpu_ms"] + lpss["cpu_ms"]) / 10 + scrape(1000, "cpu_ms_per_scrape") / 15])

for f in failures:
    print("FAIL:", f)
print(f"figures of README.md and {ds_path} against bench/RESULTS.md (revision {results['machine']['revision']}): "
      f"{len(failures)} disagree")
sys.exit(1 if failures else 0)
