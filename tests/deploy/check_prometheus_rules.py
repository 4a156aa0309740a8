#!/usr/bin/env python3
"""Checks statlet's alerts (deploy/prometheus-rules/) with Debian's promtool:
  - `promtool check rules` on the rule file and on the PrometheusRule's spec, which must
    hold the same groups;
  - every family an expression names is one statlet serves (docs/metrics.md,
    docs/image-pulls.md), or `up`;
  - `promtool test rules tests/deploy/prometheus_rules_test.yaml` passes, and every alert of
    the file has a case in which it fires and one in which it must not.

usage: check_prometheus_rules.py REPO_ROOT"""
import os
import re
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_manifests_lib import documented_families  # noqa: E402

root = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def promtool(*args):
    out = subprocess.run(["promtool", *args], capture_output=True, text=True)
    return out.returncode, out.stdout + out.stderr


rules_file = os.path.join(root, "deploy/prometheus-rules/prometheus-rules.yaml")
rule_object = yaml.safe_load(open(os.path.join(root, "deploy/prometheus-rules/prometheusrule.yaml")))
rules = yaml.safe_load(open(rules_file))
check(rule_object["kind"] == "PrometheusRule", "prometheusrule.yaml is not a PrometheusRule")
check(rule_object["spec"] == rules, "prometheusrule.yaml's groups differ from prometheus-rules.yaml "
                                    "(run deploy/prometheus-rules/make_prometheusrule.py)")

rc, out = promtool("check", "rules", "--lint=all", "--lint-fatal", rules_file)
check(rc == 0, f"promtool check rules {rules_file}:\n{out}")
with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
    yaml.safe_dump(rule_object["spec"], f)
    f.flush()
    rc, out = promtool("check", "rules", "--lint=all", "--lint-fatal", f.name)
    check(rc == 0, f"promtool check rules on the PrometheusRule's spec:\n{out}")

families = documented_families(root)
alerts = []
for g in rules["groups"]:
    for r in g["rules"]:
        alerts.append(r["alert"])
        check(r.get("labels", {}).get("severity") in ("info", "warning", "critical"), f"{r['alert']}: no severity")
        check(r.get("annotations", {}).get("summary") and r["annotations"].get("description"),
              f"{r['alert']}: summary and description are required")
        for name in re.findall(r"\b([a-z_]+)\s*(?:\{|\[|\)|$|\s)", r["expr"]):
            if name.startswith(("container_", "statlet_", "machine_")):
                check(name in families, f"{r['alert']}: {name} is no family statlet serves")
check(len(alerts) == len(set(alerts)), f"alert names repeat: {alerts}")

tests_file = os.path.join(root, "tests/deploy/prometheus_rules_test.yaml")
rc, out = promtool("test", "rules", tests_file)
check(rc == 0, f"promtool test rules:\n{out}")
fires, quiet = set(), set()
for t in yaml.safe_load(open(tests_file))["tests"]:
    for a in t.get("alert_rule_test", []):
        (fires if a.get("exp_alerts") else quiet).add(a["alertname"])
for a in alerts:
    check(a in fires, f"{a}: no promtool case in which it fires")
    check(a in quiet, f"{a}: no promtool case in which it must not fire")

for f in failures:
    print("FAIL:", f)
print(f"{len(alerts)} alerts, each with cases that fire and that must not: promtool "
      f"{'passed' if rc == 0 else 'FAILED'}; {len(failures)} failures")
sys.exit(1 if failures else 0)
