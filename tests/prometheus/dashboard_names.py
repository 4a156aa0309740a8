#!/usr/bin/python3
"""Every metric a dashboard under deploy/dashboards queries is a family statlet serves, with
only labels that family (or the cgroup labels) carries.

usage: dashboard_names.py TABLE_MD PULLS_MD DASHBOARD_JSON...
TABLE_MD: the output of statlet_metric_table_md (the one family table, self metrics too).
PULLS_MD: docs/image-pulls.md, whose table lists the image-pull families.
A histogram family also serves <name>_bucket (with `le`), _sum and _count. Families listed
without their labels (self metrics, image pulls) get their names checked, not their labels.
"""
import json
import re
import sys

# The cgroup labels, the target's (job, instance) and the cluster label multi-cluster setups
# put on every series (the dashboards' cluster variable).
CGROUP_LABELS = {"container", "id", "image", "name", "namespace", "pod", "job", "instance", "cluster"}


def families(*tables):
    """name -> its labels (None: not listed, any accepted), with a histogram's series names."""
    out = {}
    for table in tables:
        for line in open(table, encoding="utf-8"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            m = re.match(r"^`([a-z_:][a-z0-9_:]*)(\{[a-z_,]*\})?`$", cells[0]) if len(cells) >= 3 else None
            if not m:
                continue
            name, kind = m.group(1), cells[1]
            labels = set(re.findall(r"`([a-z_]+)`", cells[3])) if len(cells) >= 7 else None
            out[name] = labels
            if kind == "histogram":
                for suffix in ("_bucket", "_sum", "_count"):
                    out[name + suffix] = None if labels is None else labels | {"le"}
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
    fams = families(sys.argv[1], sys.argv[2])
    if len(fams) < 50:
        print(f"FAIL: only {len(fams)} families parsed from {sys.argv[1]}")
        return 1
    bad = []
    seen = 0
    for path in sys.argv[3:]:
        for e in exprs(json.load(open(path, encoding="utf-8"))):
            for name, body in re.findall(r"\b((?:container|statlet)_[a-z0-9_]+)(?:\{([^}]*)\})?", e):
                seen += 1
                if name not in fams:
                    bad.append(f"{path}: {name} is not served")
                    continue
                for label in re.findall(r"([a-z_]+)\s*(?:=~|!=|!~|=)", body or ""):
                    if fams[name] is not None and label not in CGROUP_LABELS and label not in fams[name]:
                        bad.append(f"{path}: {name} has no label {label}")
    for b in bad:
        print("FAIL:", b)
    print(f"{seen} metric references checked, {len(bad)} bad")
    return 1 if bad or seen == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
