#!/usr/bin/env python3
"""Checks what `kubectl apply -k deploy/kubernetes[-prometheus-operator]` would install fits
together: every listed resource exists and parses; the Service selects the DaemonSet's pods
and names its port; RBAC binds the DaemonSet's service account; the image is the one the
kustomization rewrites; the ServiceMonitor selects the Service, keeps statlet's own labels
(honorLabels) and sets job="cadvisor" for kubernetes-mixin; and, where kubectl is installed,
that kubectl renders both kustomizations to exactly those objects.

usage: check_manifests.py REPO_ROOT"""
import os
import shutil
import subprocess
import sys

import yaml

root = sys.argv[1]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def load_kustomization(d):
    k = yaml.safe_load(open(os.path.join(d, "kustomization.yaml")))
    objects = []
    for res in k.get("resources", []):
        path = os.path.normpath(os.path.join(d, res))
        if os.path.isdir(path):
            objects += load_kustomization(path)[1]
            continue
        check(os.path.isfile(path), f"{d}: resource {res} does not exist")
        if os.path.isfile(path):
            objects += [o for o in yaml.safe_load_all(open(path)) if o]
    return k, objects


def one(objects, kind):
    found = [o for o in objects if o["kind"] == kind]
    check(len(found) == 1, f"expected one {kind}, found {len(found)}")
    return found[0] if found else {}


base_dir = os.path.join(root, "deploy/kubernetes")
mon_dir = os.path.join(root, "deploy/kubernetes-prometheus-operator")
base, objects = load_kustomization(base_dir)
kinds = sorted(o["kind"] for o in objects)
check(kinds == sorted(["Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
                       "ClusterRoleBinding", "DaemonSet", "Service"]), f"base kinds {kinds}")
ns = one(objects, "Namespace")["metadata"]["name"]
for o in objects:
    if o["kind"] not in ("Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"):
        check(o["metadata"].get("namespace") == ns, f"{o['kind']} {o['metadata']['name']} is not in namespace {ns}")

ds = one(objects, "DaemonSet")
pod = ds["spec"]["template"]
container = pod["spec"]["containers"][0]
check(ds["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
      "the DaemonSet's selector does not match its pods")
check(ds["spec"]["updateStrategy"]["type"] == "RollingUpdate", "DaemonSet without a rolling update")
check(pod["spec"].get("priorityClassName") == "system-node-critical", "DaemonSet without node-critical priority")
check(any(t.get("operator") == "Exists" and "key" not in t for t in pod["spec"].get("tolerations", [])),
      "DaemonSet does not tolerate every taint")
check("limits" in container.get("resources", {}) and "requests" in container["resources"],
      "container without requests and limits")
images = {i["name"] for i in base.get("images", [])}
check(container["image"].split(":")[0] in images, f"image {container['image']} is not rewritten by kustomization images")

sa = one(objects, "ServiceAccount")["metadata"]["name"]
check(pod["spec"].get("serviceAccountName") == sa, "the DaemonSet does not run as the manifest's service account")
binding = one(objects, "ClusterRoleBinding")
check({"kind": "ServiceAccount", "name": sa, "namespace": ns} in binding["subjects"], "RBAC does not bind the service account")
check(binding["roleRef"]["name"] == one(objects, "ClusterRole")["metadata"]["name"], "RBAC binds another role")

svc = one(objects, "Service")
check(svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items(), "the Service does not select statlet's pods")
port_names = {p["name"]: p for p in container.get("ports", [])}
for p in svc["spec"]["ports"]:
    check(p["targetPort"] in port_names, f"Service port {p['name']} targets {p['targetPort']}, not a container port")
# The web port the daemon is told to listen on is the one the Service names.
listen = [a.split("=", 1)[1] for a in container["args"] if a.startswith("--web.listen-address=")]
check(listen and all(int(listen[0].rsplit(":", 1)[1]) == p["containerPort"] for p in port_names.values()),
      f"--web.listen-address {listen} is not the container port")

# The DaemonSet serves stats mode: a pod cannot be its own kubelet's runtime endpoint
# (proxy mode runs on the host: deploy/systemd/statlet-cri-proxy.service).
check(not any(a == "--cri.proxy" or a.startswith("--cri.proxy=") for a in container["args"]),
      "the DaemonSet must not run proxy mode")

mon_k, mon_objects = load_kustomization(mon_dir)
sm = one(mon_objects, "ServiceMonitor")
check(sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items(),
      "the ServiceMonitor does not select the Service")
check(ns in sm["spec"]["namespaceSelector"]["matchNames"], "the ServiceMonitor looks in another namespace")
svc_ports = {p["name"] for p in svc["spec"]["ports"]}
for ep in sm["spec"]["endpoints"]:
    check(ep["port"] in svc_ports, f"ServiceMonitor endpoint port {ep['port']} is not a Service port")
    check(ep.get("honorLabels") is True, "ServiceMonitor without honorLabels: namespace/pod would become exported_*")
    check({"action": "replace", "targetLabel": "job", "replacement": "cadvisor"} in ep.get("relabelings", []),
          "ServiceMonitor does not set job=\"cadvisor\" (kubernetes-mixin's cadvisorSelector)")

kubectl = shutil.which("kubectl")
if kubectl:
    for d, objs in ((base_dir, objects), (mon_dir, mon_objects)):
        out = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True)
        check(out.returncode == 0, f"kubectl kustomize {d}: {out.stderr.strip()}")
        rendered = sorted((o["kind"], o["metadata"]["name"]) for o in yaml.safe_load_all(out.stdout) if o)
        check(rendered == sorted((o["kind"], o["metadata"]["name"]) for o in objs),
              f"kubectl kustomize {d} renders {rendered}")
    print("kubectl kustomize: both kustomizations render")
else:
    print("kubectl is not installed: kustomize rendering not checked (the structure was)")

for f in failures:
    print("FAIL:", f)
print(f"{len(objects)} objects, {len(mon_objects)} with the ServiceMonitor, {len(failures)} failures")
sys.exit(1 if failures else 0)
