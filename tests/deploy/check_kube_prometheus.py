#!/usr/bin/env python3
"""Checks deploy/kube-prometheus against kube-prometheus' own files (kept in
tests/deploy/kube-prometheus/, see its README.md):
  - the kubelet ServiceMonitor patch, applied as kustomize applies it (kubectl kustomize,
    where kubectl is installed) and as RFC 6902 says, removes exactly the /metrics/cadvisor
    endpoint; the same patch on a ServiceMonitor whose endpoints moved fails;
  - the jsonnet snippet, mixed into an object shaped as kube-prometheus' (its
    kubernetesControlPlane.serviceMonitorKubelet, from the saved ServiceMonitor) by Debian's
    jsonnet, gives the same endpoints;
  - statlet's ServiceMonitor takes over the cAdvisor endpoint's scrape settings (path,
    interval, honorLabels, honorTimestamps) and those of its metric relabelings that match
    statlet's families; each one left out matches no family statlet serves;
  - kube-prometheus' rule file passes `promtool check rules` (the e2e stage loads it) and
    selects cAdvisor's series as statlet's ServiceMonitor labels them.

usage: check_kube_prometheus.py REPO_ROOT"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_manifests_lib import documented_families, json_patch  # noqa: E402

root = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


kp = os.path.join(root, "tests/deploy/kube-prometheus")
deploy = os.path.join(root, "deploy/kube-prometheus")
kubelet_sm = yaml.safe_load(open(os.path.join(kp, "kubernetesControlPlane-serviceMonitorKubelet.yaml")))
patch_file = os.path.join(deploy, "kubelet-servicemonitor-patch.yaml")
patch = yaml.safe_load(open(patch_file))
paths = [e.get("path", "/metrics") for e in kubelet_sm["spec"]["endpoints"]]
want = [e for e in kubelet_sm["spec"]["endpoints"] if e.get("path") != "/metrics/cadvisor"]
check("/metrics/cadvisor" in paths and len(want) == len(paths) - 1,
      f"kube-prometheus' kubelet ServiceMonitor has endpoints {paths}")

# ---------------------------------------------------------------- the patch, as RFC 6902 says
patched = json_patch(kubelet_sm, patch)
check(patched["spec"]["endpoints"] == want, "the patch does not remove exactly the /metrics/cadvisor endpoint")
moved = json.loads(json.dumps(kubelet_sm))
moved["spec"]["endpoints"].reverse()
try:
    json_patch(moved, patch)
    check(False, "the patch applies to a ServiceMonitor whose /metrics/cadvisor endpoint moved")
except ValueError:
    pass

# ---------------------------------------------------------------- the patch, through kustomize
kubectl = shutil.which("kubectl")
if kubectl:
    with tempfile.TemporaryDirectory() as d:
        shutil.copy(os.path.join(kp, "kubernetesControlPlane-serviceMonitorKubelet.yaml"), d)
        shutil.copy(patch_file, d)
        # patchesJson6902: understood by every kustomize kubectl embeds (1.14 on).
        with open(os.path.join(d, "kustomization.yaml"), "w") as f:
            yaml.safe_dump({"resources": ["kubernetesControlPlane-serviceMonitorKubelet.yaml"],
                            "patchesJson6902": [{"target": {"group": "monitoring.coreos.com", "version": "v1",
                                                            "kind": "ServiceMonitor", "name": "kubelet",
                                                            "namespace": "monitoring"},
                                                 "path": "kubelet-servicemonitor-patch.yaml"}]}, f)
        out = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True)
        check(out.returncode == 0, f"kubectl kustomize with the patch: {out.stderr.strip()}")
        if out.returncode == 0:
            rendered = yaml.safe_load(out.stdout)
            check(rendered["spec"]["endpoints"] == want, "kustomize's patched kubelet ServiceMonitor differs")
    print("kubectl kustomize: the patch removes /metrics/cadvisor from kube-prometheus' kubelet ServiceMonitor")
else:
    print("kubectl is not installed: the patch was applied here only")

# ---------------------------------------------------------------- the jsonnet snippet
jsonnet = shutil.which("jsonnet")
if jsonnet:
    with tempfile.TemporaryDirectory() as d:
        with open(os.path.join(d, "kp.json"), "w") as f:
            json.dump({"kubernetesControlPlane": {"serviceMonitorKubelet": kubelet_sm}, "other": {"kept": True}}, f)
        expr = "(import 'kp.json') + (import 'kubelet-without-cadvisor.libsonnet')"
        out = subprocess.run([jsonnet, "-J", d, "-J", deploy, "-e", expr], capture_output=True, text=True)
        check(out.returncode == 0, f"jsonnet: {out.stderr.strip()}")
        if out.returncode == 0:
            result = json.loads(out.stdout)
            sm = result["kubernetesControlPlane"]["serviceMonitorKubelet"]
            check(sm["spec"]["endpoints"] == want, "the jsonnet snippet does not remove exactly /metrics/cadvisor")
            sm["spec"]["endpoints"] = kubelet_sm["spec"]["endpoints"]
            check(sm == kubelet_sm and result["other"] == {"kept": True}, "the jsonnet snippet changes more")
    print("jsonnet: the snippet removes /metrics/cadvisor and nothing else")
else:
    print("jsonnet is not installed: the snippet was not evaluated")

# ---------------------------------------------------------------- statlet's ServiceMonitor
ours = yaml.safe_load(open(os.path.join(deploy, "servicemonitor.yaml")))["spec"]["endpoints"]
check(len(ours) == 1, "statlet's kube-prometheus ServiceMonitor has more than one endpoint")
ours = ours[0]
theirs = [e for e in kubelet_sm["spec"]["endpoints"] if e.get("path") == "/metrics/cadvisor"][0]
for key in ("path", "interval", "honorLabels", "honorTimestamps"):
    check(ours.get(key) == theirs.get(key), f"statlet's endpoint {key}={ours.get(key)!r}, the kubelet's {theirs.get(key)!r}")
families = documented_families(root)


def matches_any(rule):
    """Whether a metric relabeling's __name__ part can match a family statlet serves."""
    regex = rule["regex"]
    name_part = regex.split(";")[0] if rule["sourceLabels"][0] == "__name__" else ".*"
    return [f for f in families if re.fullmatch(name_part, f)]


ours_mr = ours.get("metricRelabelings", [])
for rule in theirs["metricRelabelings"]:
    if rule in ours_mr:
        check(matches_any(rule), f"kept metric relabeling {rule['regex']} matches no statlet family")
    else:
        check(not matches_any(rule), f"kube-prometheus' metric relabeling {rule['regex']} is left out but matches "
                                     f"{matches_any(rule)}")
for rule in ours_mr:
    check(rule in theirs["metricRelabelings"], f"statlet's metric relabeling {rule} is not kube-prometheus'")

# ---------------------------------------------------------------- the rule file
rules_doc = yaml.safe_load(open(os.path.join(kp, "kubernetesControlPlane-prometheusRule.yaml")))
with tempfile.NamedTemporaryFile("w", suffix=".yaml") as f:
    yaml.safe_dump(rules_doc["spec"], f)
    f.flush()
    out = subprocess.run(["promtool", "check", "rules", "--lint=none", f.name], capture_output=True, text=True)
    check(out.returncode == 0, f"promtool check rules on kube-prometheus' rules: {out.stdout} {out.stderr}")
exprs = [r["expr"] for g in rules_doc["spec"]["groups"] for r in g["rules"]]
cadvisor = [e for e in exprs if "metrics_path=\"/metrics/cadvisor\"" in e]
check(cadvisor and all('job="kubelet"' in e for e in cadvisor), "kube-prometheus' cAdvisor selector changed")
used = sorted({m for e in cadvisor for m in re.findall(r"\b(container_[a-z_]+)\{", e)})
for name in used:
    check(name in families, f"kube-prometheus' rules use {name}, which statlet does not serve")
print(f"kube-prometheus' rules: {len(exprs)} rules, {len(cadvisor)} on cAdvisor's series, families {', '.join(used)}")

for f in failures:
    print("FAIL:", f)
print(f"{len(failures)} failures")
sys.exit(1 if failures else 0)
