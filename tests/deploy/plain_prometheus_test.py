#!/usr/bin/python3
"""deploy/prometheus/scrape-config.yaml in Debian's Prometheus, without the Operator:
  - `promtool check config` accepts a prometheus.yml made of that job and statlet's rule file
    (Debian builds Prometheus without Kubernetes discovery, so the job is checked with its
    discovery swapped for a static target, and the discovery block itself for the fields
    Prometheus' kubernetes_sd_config has: role, namespaces.names);
  - the job, run against a real statlet with its Kubernetes discovery replaced by a static
    target carrying what role: pod discovery gives statlet's pod (its __meta labels), keeps
    that target and drops one of another pod and one of another port;
  - its series carry what kubernetes-mixin and statlet's alerts select by: job="cadvisor",
    service="statlet", node, metrics_path; `up` and container_cpu_usage_seconds_total of the
    root cgroup are there under those labels, and statlet's StatletDown expression selects
    the target.

usage: plain_prometheus_test.py STATLET_BINARY REPO_ROOT"""
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request

import yaml

binary, root = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(cond, seconds, what):
    deadline = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > deadline:
            sys.exit(f"{what} within {seconds} s")
        time.sleep(0.1)  # polling a condition against the deadline above


snippet = yaml.safe_load(open(os.path.join(root, "deploy/prometheus/scrape-config.yaml")))
job = snippet["scrape_configs"][0]
check(job.get("honor_labels") is True, "the job does not honor statlet's labels")
rules = os.path.join(root, "deploy/prometheus-rules/prometheus-rules.yaml")
tmp = tempfile.mkdtemp(prefix="statlet-plain-prometheus-")
procs = []
try:
    # 1. As an operator would write it: the job and the rule file.
    sd = job.get("kubernetes_sd_configs", [])
    check(len(sd) == 1 and set(sd[0]) <= {"role", "namespaces"} and sd[0].get("role") == "pod"
          and sd[0].get("namespaces") == {"names": ["statlet"]}, f"kubernetes_sd_configs {sd}")
    checked = {k: v for k, v in job.items() if k != "kubernetes_sd_configs"}
    checked["static_configs"] = [{"targets": ["node-1:10340"]}]
    with open(os.path.join(tmp, "check.yml"), "w") as f:
        yaml.safe_dump({"rule_files": [rules], "scrape_configs": [checked]}, f)
    out = subprocess.run(["promtool", "check", "config", os.path.join(tmp, "check.yml")], capture_output=True, text=True)
    check(out.returncode == 0, f"promtool check config: {out.stdout}{out.stderr}")

    # 2. The same job over static targets shaped as role: pod discovers them.
    statlet_port, prom_port = free_port(), free_port()
    statlet = subprocess.Popen([binary, f"--web.listen-address=127.0.0.1:{statlet_port}", "--cri.listen=",
                                "--runtime.endpoint=none", "--bpf=off"],
                               stdout=open(os.path.join(tmp, "statlet.log"), "w"), stderr=subprocess.STDOUT)
    procs.append(statlet)

    def pod_target(name, app, port_name):
        return {"targets": [f"127.0.0.1:{statlet_port}"],
                "labels": {"__meta_kubernetes_namespace": "statlet", "__meta_kubernetes_pod_name": name,
                           "__meta_kubernetes_pod_node_name": "node-1",
                           "__meta_kubernetes_pod_label_app_kubernetes_io_name": app,
                           "__meta_kubernetes_pod_container_port_name": port_name}}

    static = dict(job)
    del static["kubernetes_sd_configs"]
    static["scrape_interval"] = "1s"
    static["scrape_timeout"] = "1s"
    static["static_configs"] = [pod_target("statlet-abcde", "statlet", "metrics"),
                                pod_target("other-pod", "other", "metrics"),
                                pod_target("statlet-abcde", "statlet", "health")]
    with open(os.path.join(tmp, "prometheus.yml"), "w") as f:
        yaml.safe_dump({"global": {"evaluation_interval": "1s"}, "rule_files": [rules], "scrape_configs": [static]}, f)
    prometheus = subprocess.Popen(["prometheus", f"--config.file={tmp}/prometheus.yml", f"--storage.tsdb.path={tmp}/data",
                                   f"--web.listen-address=127.0.0.1:{prom_port}"],
                                  stdout=open(os.path.join(tmp, "prometheus.log"), "w"), stderr=subprocess.STDOUT)
    procs.append(prometheus)

    def query(q):
        url = f"http://127.0.0.1:{prom_port}/api/v1/query?" + urllib.parse.urlencode({"query": q})
        try:
            with urllib.request.urlopen(url, timeout=5) as r:
                return json.load(r)["data"]["result"]
        except OSError:
            return None

    wait_for(lambda: query('up{job="cadvisor"} == 1'), 60, "Prometheus scraped no statlet target")
    wait_for(lambda: query('container_cpu_usage_seconds_total{id="/"}'), 30, "no root cgroup series")
    targets = query("up")
    check(len(targets) == 1, f"the job keeps {len(targets)} targets, not statlet's one metrics port: {targets}")
    labels = targets[0]["metric"]
    want = {"job": "cadvisor", "service": "statlet", "node": "node-1", "metrics_path": "/metrics"}
    check({k: labels.get(k) for k in want} == want, f"up carries {labels}, not {want}")
    check(not any(k.startswith("__meta") for k in labels) and "namespace" not in labels,
          f"discovery labels leak onto the series: {labels}")
    cpu = query('container_cpu_usage_seconds_total{job="cadvisor", service="statlet", node="node-1", id="/"}')
    check(bool(cpu), "the mixin's selector finds no container_cpu_usage_seconds_total")
    # StatletDown's expression (up{service="statlet"} == 0) looks at this target.
    check([t["metric"] for t in query('up{service="statlet"}')] == [labels], "statlet's alerts do not select the target")
finally:
    for p in procs:
        p.terminate()
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
    if failures:
        for name in ("statlet.log", "prometheus.log"):
            path = os.path.join(tmp, name)
            if os.path.exists(path):
                print(f"--- {name}\n" + open(path).read()[-3000:])
    shutil.rmtree(tmp, ignore_errors=True)

for f in failures:
    print("FAIL:", f)
print(f"deploy/prometheus/scrape-config.yaml: {len(failures)} failures")
sys.exit(1 if failures else 0)
