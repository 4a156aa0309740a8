#!/usr/bin/python3
"""Every metric a dashboard under deploy/dashboards queries is a family statlet serves, with
only labels that family (or the cgroup labels) carries.

usage: dashboard_names.py TABLE_MD DASHBOARD_JSON...
TABLE_MD: the output of statlet_metric_table_md (the one family table, self metrics too).
"""
import json
import re
import sys

CGROUP_LABELS = {"container", "id", "image", "name", "namespace", "pod", "job", "instance"}


def families(table_md):
    out = {}
    for line in open(table_md, encoding="utf-8"):
        m = re.match(r"^\| `([a-z_:][a-z0-9_:]*)` \|[^|]*\|[^|]*\| ([^|]*) \|", line)
        if m:
            labels = set(re.findall(r"`([a-z_]+)`", m.group(2)))
            out[m.group(1)] = labels
    return out


def exprs(node):
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ("expr", "query") and isinstance(v, str):
                yield v
            else:
                yield from exprs(v)
    elif isinstance(node, list):
        for v in node:
            yield from exprs(v)


def main():
    fams = families(sys.argv[1])
    if len(fams) < 50:
        print(f"FAIL: only {len(fams)} families parsed from {sys.argv[1]}")
        return 1
    bad = []
    seen = 0
    for path in sys.argv[2:]:
        for e in exprs(json.load(open(path, encoding="utf-8"))):
            for name, body in re.findall(r"\b((?:container|statlet)_[a-z0-9_]+)(?:\{([^}]*)\})?", e):
                seen += 1
                if name not in fams:
                    bad.append(f"{path}: {name} is not served")
                    continue
                for label in re.findall(r"([a-z_]+)\s*(?:=~|!=|!~|=)", body or ""):
                    if label not in CGROUP_LABELS and label not in fams[name]:
                        bad.append(f"{path}: {name} has no label {label}")
    for b in bad:
        print("FAIL:", b)
    print(f"{seen} metric references checked, {len(bad)} bad")
    return 1 if bad or seen == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
