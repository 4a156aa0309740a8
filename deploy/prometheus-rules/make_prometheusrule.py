#!/usr/bin/env python3
"""Writes prometheusrule.yaml (a Prometheus Operator PrometheusRule) from the groups of
prometheus-rules.yaml, the file edited by hand: /usr/bin/python3 deploy/prometheus-rules/make_prometheusrule.py"""
import os

here = os.path.dirname(os.path.abspath(__file__))
rules = open(os.path.join(here, "prometheus-rules.yaml")).read()
groups = rules[rules.index("groups:"):]
HEADER = """# statlet's alerts as a Prometheus Operator PrometheusRule (kube-prometheus' Prometheus
# selects every PrometheusRule; the labels are those its own rules carry). Written by
# make_prometheusrule.py from prometheus-rules.yaml, which says how series are selected;
# tests/deploy checks that the two hold the same rules and runs their promtool tests.
apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata:
  name: statlet
  namespace: statlet
  labels:
    app.kubernetes.io/name: statlet
    app.kubernetes.io/instance: statlet
    app.kubernetes.io/version: "0.1.0"
    app.kubernetes.io/component: alert-rules
    app.kubernetes.io/part-of: statlet
    prometheus: k8s
    role: alert-rules
spec:
"""
body = "".join(("  " + line if line.strip() else line) + "\n" for line in groups.splitlines())
with open(os.path.join(here, "prometheusrule.yaml"), "w") as f:
    f.write(HEADER + body)
