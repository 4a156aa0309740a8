#!/usr/bin/env python3
"""Checks what `kubectl apply -k deploy/<variant>` would install fits together and follows
the cluster's conventions:
  - every listed resource exists and parses; the Service selects the DaemonSet's pods and
    names its port; RBAC binds the DaemonSet's service account; the image is the one the
    kustomization rewrites;
  - hygiene: the pod runs on Linux nodes only (nodeSelector kubernetes.io/os: linux); the
    namespace enforces the Pod Security level the pod needs (computed here from the pod's
    spec, as pod-security-admission's checks do); every object carries the
    app.kubernetes.io recommended labels, version = CMakeLists.txt's project version;
  - the Prometheus Operator variants: the ServiceMonitor selects the Service, keeps statlet's
    own labels (honorLabels), drops the target labels naming statlet's pod, and sets
    job="cadvisor" (deploy/kubernetes-prometheus-operator) or job="kubelet" and
    metrics_path="/metrics/cadvisor" (deploy/kube-prometheus, checked further by
    check_kube_prometheus.py); kube-prometheus' Prometheus may discover it;
  - the CRI-O variant (a kustomize component): its patches, applied here as RFC 6902 says,
    leave a DaemonSet that talks to CRI-O's socket through a mount of it and nothing of
    containerd;
  - where kubectl is installed, that `kubectl kustomize` renders each variant to exactly
    those objects (the CRI-O component needs kustomize 3.7 or newer: older kubectls, such as
    Debian's 1.20, are told apart and say so).

usage: check_manifests.py REPO_ROOT"""
import copy
import os
import re
import shutil
import subprocess
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from check_manifests_lib import json_patch  # noqa: E402

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


# ---------------------------------------------------------------- Pod Security Standards
# The baseline level's checks (kubernetes/pod-security-admission policy/check_*.go): a pod
# that fails any needs `privileged`. (`restricted` is not asked for: the agent runs as root.)
BASELINE_CAPS = {"AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                 "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT"}


def pod_security_level(pod_spec):
    why = []
    for f in ("hostNetwork", "hostPID", "hostIPC"):
        if pod_spec.get(f):
            why.append(f)
    why += [f"hostPath volume {v['name']}" for v in pod_spec.get("volumes", []) if "hostPath" in v]
    for c in pod_spec.get("containers", []) + pod_spec.get("initContainers", []):
        sc = c.get("securityContext", {})
        if sc.get("privileged"):
            why.append(f"{c['name']} privileged")
        why += [f"{c['name']} adds {cap}" for cap in sc.get("capabilities", {}).get("add", []) if cap not in BASELINE_CAPS]
        why += [f"{c['name']} hostPort" for p in c.get("ports", []) if p.get("hostPort")]
    return ("privileged" if why else "baseline"), why


# ---------------------------------------------------------------- recommended labels
project_version = re.search(r"project\(statlet VERSION ([0-9.]+)", open(os.path.join(root, "CMakeLists.txt")).read())
project_version = project_version.group(1) if project_version else "?"


def check_labels(o, where):
    labels = o["metadata"].get("labels", {})
    want = {"app.kubernetes.io/name": "statlet", "app.kubernetes.io/instance": "statlet",
            "app.kubernetes.io/version": project_version, "app.kubernetes.io/part-of": "statlet"}
    for k, v in want.items():
        check(labels.get(k) == v, f"{where}: {o['kind']} {o['metadata']['name']} has {k}={labels.get(k)!r}, not {v!r}")
    if o["kind"] != "Namespace":
        check(labels.get("app.kubernetes.io/component"),
              f"{where}: {o['kind']} {o['metadata']['name']} has no app.kubernetes.io/component")


# ---------------------------------------------------------------- the base
base_dir = os.path.join(root, "deploy/kubernetes")
base, objects = load_kustomization(base_dir)
kinds = sorted(o["kind"] for o in objects)
check(kinds == sorted(["Namespace", "CustomResourceDefinition", "ServiceAccount", "ClusterRole",
                       "ClusterRoleBinding", "DaemonSet", "Service"]), f"base kinds {kinds}")
namespace = one(objects, "Namespace")
ns = namespace["metadata"]["name"]
for o in objects:
    if o["kind"] not in ("Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"):
        check(o["metadata"].get("namespace") == ns, f"{o['kind']} {o['metadata']['name']} is not in namespace {ns}")
    check_labels(o, "deploy/kubernetes")

ds = one(objects, "DaemonSet")
pod = ds["spec"]["template"]
container = pod["spec"]["containers"][0]
check(ds["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
      "the DaemonSet's selector does not match its pods")
check(ds["spec"]["selector"]["matchLabels"] == {"app.kubernetes.io/name": "statlet"},
      "the DaemonSet's selector (immutable) is not the one label every release keeps")
check_labels({"kind": "Pod", "metadata": {"name": "template", **pod["metadata"]}}, "the DaemonSet's pod template")
check(ds["spec"]["updateStrategy"]["type"] == "RollingUpdate", "DaemonSet without a rolling update")
check(pod["spec"].get("priorityClassName") == "system-node-critical", "DaemonSet without node-critical priority")
check(pod["spec"].get("nodeSelector", {}).get("kubernetes.io/os") == "linux",
      "the DaemonSet's pods may land on non-Linux nodes (no nodeSelector kubernetes.io/os: linux)")
check(any(t.get("operator") == "Exists" and "key" not in t for t in pod["spec"].get("tolerations", [])),
      "DaemonSet does not tolerate every taint")
check("limits" in container.get("resources", {}) and "requests" in container["resources"],
      "container without requests and limits")
images = {i["name"] for i in base.get("images", [])}
check(container["image"].split(":")[0] in images, f"image {container['image']} is not rewritten by kustomization images")

level, why = pod_security_level(pod["spec"])
ns_labels = namespace["metadata"].get("labels", {})
check(ns_labels.get("pod-security.kubernetes.io/enforce") == level,
      f"namespace {ns} enforces {ns_labels.get('pod-security.kubernetes.io/enforce')!r}; the pod needs {level} "
      f"({', '.join(why)})")
for mode in ("audit", "warn"):
    check(ns_labels.get(f"pod-security.kubernetes.io/{mode}") in (None, level),
          f"namespace {ns} {mode}s at another level than the pod needs")

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


# ---------------------------------------------------------------- Prometheus Operator variants
def check_servicemonitor(d, job, path):
    k, objs = load_kustomization(d)
    where = os.path.relpath(d, root)
    for o in objs:
        check_labels(o, where)
    sm = one(objs, "ServiceMonitor")
    check(sm["spec"]["selector"]["matchLabels"].items() <= svc["metadata"]["labels"].items(),
          f"{where}: the ServiceMonitor does not select the Service")
    check(ns in sm["spec"]["namespaceSelector"]["matchNames"], f"{where}: the ServiceMonitor looks in another namespace")
    svc_ports = {p["name"] for p in svc["spec"]["ports"]}
    for ep in sm["spec"]["endpoints"]:
        rl = ep.get("relabelings", [])
        check(ep["port"] in svc_ports, f"{where}: endpoint port {ep['port']} is not a Service port")
        check(ep.get("path") == path, f"{where}: endpoint path {ep.get('path')}, not {path}")
        check(ep.get("honorLabels") is True, f"{where}: no honorLabels: namespace/pod would become exported_*")
        check({"action": "replace", "targetLabel": "job", "replacement": job} in rl, f"{where}: does not set job=\"{job}\"")
        check({"action": "replace", "sourceLabels": ["__metrics_path__"], "targetLabel": "metrics_path"} in rl,
              f"{where}: does not set metrics_path")
        check({"action": "replace", "sourceLabels": ["__meta_kubernetes_pod_node_name"], "targetLabel": "node"} in rl,
              f"{where}: does not set node")
        dropped = [r for r in rl if r.get("action") == "labeldrop"]
        check(dropped and all(re.fullmatch(dropped[0]["regex"], l) for l in ("namespace", "pod", "container"))
              and not re.fullmatch(dropped[0]["regex"], "service"),
              f"{where}: the target labels naming statlet's pod are not dropped (or service is)")
    rules = [o for o in objs if o["kind"] == "PrometheusRule"]
    check(len(rules) == 1, f"{where}: statlet's PrometheusRule is not installed")
    return k, objs, sm


mon_dir = os.path.join(root, "deploy/kubernetes-prometheus-operator")
kp_dir = os.path.join(root, "deploy/kube-prometheus")
mon_k, mon_objects, _ = check_servicemonitor(mon_dir, "cadvisor", "/metrics")
kp_k, kp_objects, kp_sm = check_servicemonitor(kp_dir, "kubelet", "/metrics/cadvisor")
# kube-prometheus' Prometheus discovers targets in a namespace only with a Role there.
role = [o for o in kp_objects if o["kind"] == "Role"]
rb = [o for o in kp_objects if o["kind"] == "RoleBinding"]
check(len(role) == 1 and len(rb) == 1, "deploy/kube-prometheus: no Role and RoleBinding for Prometheus' discovery")
if role and rb:
    check(role[0]["metadata"]["namespace"] == ns and rb[0]["metadata"]["namespace"] == ns,
          "deploy/kube-prometheus: the discovery Role is not in statlet's namespace")
    granted = {(g, r) for rule in role[0]["rules"] for g in rule["apiGroups"] for r in rule["resources"]
               if {"get", "list", "watch"} <= set(rule["verbs"])}
    for need in (("", "services"), ("", "pods"), ("", "endpoints"), ("discovery.k8s.io", "endpointslices")):
        check(need in granted, f"deploy/kube-prometheus: the discovery Role lacks {need}")
    check({"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"} in rb[0]["subjects"],
          "deploy/kube-prometheus: the RoleBinding does not name kube-prometheus' Prometheus")

# ---------------------------------------------------------------- the CRI-O variant
crio_dir = os.path.join(root, "deploy/kubernetes-cri-o")
crio_k = yaml.safe_load(open(os.path.join(crio_dir, "kustomization.yaml")))
check(crio_k.get("resources") == ["../kubernetes"], "deploy/kubernetes-cri-o is not the base plus its component")
component_dir = os.path.normpath(os.path.join(crio_dir, crio_k.get("components", ["?"])[0]))
component = yaml.safe_load(open(os.path.join(component_dir, "kustomization.yaml")))
check(component.get("kind") == "Component", f"{component_dir} is not a kustomize Component")
crio_ds = ds
try:
    for p in component.get("patches", []):
        check(p["target"]["kind"] == "DaemonSet" and p["target"]["name"] == ds["metadata"]["name"],
              "the CRI-O component patches something else")
        crio_ds = json_patch(crio_ds, yaml.safe_load(p["patch"]))
except (ValueError, KeyError, IndexError) as e:
    check(False, f"the CRI-O component's patch does not apply to deploy/kubernetes: {e}")
crio_pod = crio_ds["spec"]["template"]["spec"]
crio_c = crio_pod["containers"][0]
endpoint = [a.split("=", 1)[1] for a in crio_c["args"] if a.startswith("--runtime.endpoint=")]
check(endpoint == ["unix:///run/crio/crio.sock"], f"CRI-O variant: runtime endpoint {endpoint}")
volumes = {v["name"]: v for v in crio_pod["volumes"]}
mounts = [m for m in crio_c["volumeMounts"] if endpoint and endpoint[0][len("unix://"):].startswith(m["mountPath"] + "/")]
check(len(mounts) == 1 and volumes.get(mounts[0]["name"], {}).get("hostPath", {}).get("path") == "/var/run/crio",
      "CRI-O variant: the socket's directory is not mounted from the node's /var/run/crio")
check("containerd" not in yaml.safe_dump(crio_c["args"]) + yaml.safe_dump(crio_pod["volumes"]),
      "CRI-O variant: containerd is still named in the args or volumes")
check("--pull.enabled=false" in crio_c["args"] and not any(a.startswith("--pull.apiserver") for a in crio_c["args"]),
      "CRI-O variant: pulls through statlet (which watch containerd's content store) are not off")

# ---------------------------------------------------------------- kubectl kustomize
kubectl = shutil.which("kubectl")
if kubectl:
    version = subprocess.run([kubectl, "version", "--client"], capture_output=True, text=True).stdout
    m = re.search(r"Kustomize Version: v(\d+)\.(\d+)", version)
    components = bool(m) and (int(m.group(1)), int(m.group(2))) >= (3, 7)
    variants = [(base_dir, objects, None), (mon_dir, mon_objects, None), (kp_dir, kp_objects, None)]
    if components:
        variants.append((crio_dir, objects, crio_ds))
    for d, objs, want_ds in variants:
        out = subprocess.run([kubectl, "kustomize", d], capture_output=True, text=True)
        check(out.returncode == 0, f"kubectl kustomize {d}: {out.stderr.strip()}")
        rendered = [o for o in yaml.safe_load_all(out.stdout) if o]
        names = sorted((o["kind"], o["metadata"]["name"]) for o in rendered)
        check(names == sorted((o["kind"], o["metadata"]["name"]) for o in objs), f"kubectl kustomize {d} renders {names}")
        if want_ds is not None:
            got = [o for o in rendered if o["kind"] == "DaemonSet"]
            want_ds = copy.deepcopy(want_ds)
            want_ds["spec"]["template"]["spec"]["containers"][0]["image"] = got[0]["spec"]["template"]["spec"][
                "containers"][0]["image"] if got else None
            check(got and got[0] == want_ds, f"kubectl kustomize {d}: the DaemonSet differs from the patched base")
    print(f"kubectl kustomize: {len(variants)} kustomizations render"
          + ("" if components else " (this kubectl's kustomize predates components: CRI-O variant checked here only)"))
else:
    print("kubectl is not installed: kustomize rendering not checked (the structure was)")

for f in failures:
    print("FAIL:", f)
print(f"{len(objects)} objects, {len(mon_objects)} with the ServiceMonitor, {len(kp_objects)} for kube-prometheus; "
      f"pod security level {level}; {len(failures)} failures")
sys.exit(1 if failures else 0)
