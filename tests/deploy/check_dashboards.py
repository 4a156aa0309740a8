#!/usr/bin/env python3
"""Checks the Grafana dashboards of deploy/dashboards/ select by cluster as kubernetes-mixin's
do: each has a `cluster` variable (after the data source, "All" = `.*`, which also matches
series without the label, so a single cluster needs no label), every other query variable
and every selector of every panel query is narrowed by `cluster=~"$cluster"`; and the
generated files are what generate.py writes now. (tests/e2e's dashboards test runs every
query against a real Prometheus.)

usage: check_dashboards.py REPO_ROOT"""
import importlib.util
import json
import os
import re
import sys

root = sys.argv[1]
board_dir = os.path.join(root, "deploy/dashboards")
failures = []
CLUSTER = 'cluster=~"$cluster"'


def check(cond, what):
    if not cond:
        failures.append(what)


def panels(ps):
    for p in ps:
        yield p
        yield from panels(p.get("panels", []))


spec = importlib.util.spec_from_file_location("generate", os.path.join(board_dir, "generate.py"))
generate = importlib.util.module_from_spec(spec)
spec.loader.exec_module(generate)
generated = {"statlet-node.json": generate.node_dashboard(), "statlet-pod.json": generate.pod_dashboard()}

selectors = 0
files = sorted(f for f in os.listdir(board_dir) if f.endswith(".json"))
for name in files:
    board = json.load(open(os.path.join(board_dir, name)))
    if name in generated:
        check(board == json.loads(json.dumps(generated[name])), f"{name} is not what generate.py writes now")
    variables = board["templating"]["list"]
    names = [v["name"] for v in variables]
    check(names[:2] == ["datasource", "cluster"], f"{name}: variables {names} do not start with datasource, cluster")
    for v in variables:
        if v["name"] == "cluster":
            check(v.get("includeAll") and v.get("allValue") == ".*" and "cluster)" in v["query"],
                  f"{name}: the cluster variable is not label_values(…, cluster) with All = .*")
        elif v.get("type") == "query":
            check(CLUSTER in v["query"], f"{name}: variable {v['name']} is not narrowed by cluster: {v['query']}")
    for p in panels(board.get("panels", [])):
        for t in p.get("targets", []):
            for sel in re.findall(r"[a-zA-Z_:][a-zA-Z0-9_:]*\{[^}]*\}", t.get("expr", "")):
                selectors += 1
                check(CLUSTER in sel, f"{name}: panel {p.get('title')!r} selects {sel} in every cluster")
for f in failures:
    print("FAIL:", f)
print(f"{len(files)} dashboards, {selectors} selectors narrowed by cluster; {len(failures)} failures")
sys.exit(1 if failures else 0)
