#!/usr/bin/env bash
# deploy/systemd/statlet-cri-proxy.service: what makes it safe as the kubelet's runtime
# endpoint, besides passing verify_systemd_unit.sh — ready (socket bound) before the
# kubelet starts, restarted whatever ends it, never rate-limited out, proxy mode on — and
# the kubelet drop-in that orders the kubelet after it without tying their restarts.
#   check_proxy_unit.sh UNIT KUBELET_DROPIN STATLET_BINARY
set -euo pipefail
unit="$1" dropin="$2" binary="$3"
"$(dirname "$0")/verify_systemd_unit.sh" "$unit" "$binary" >/dev/null
need() {  # need FILE LINE: the exact line is there
  grep -qxF -- "$2" "$1" || { echo "$(basename "$1") lacks: $2" >&2; exit 1; }
}
need "$unit" "Type=notify"
need "$unit" "Before=kubelet.service"
need "$unit" "Restart=always"
need "$unit" "StartLimitIntervalSec=0"
need "$unit" "RuntimeDirectoryPreserve=yes"
grep -q '^ExecStart=.* --cri.proxy ' "$unit" || { echo "ExecStart lacks --cri.proxy" >&2; exit 1; }
grep -q '^ExecStart=.* --runtime.endpoint=unix://' "$unit" || { echo "ExecStart lacks --runtime.endpoint" >&2; exit 1; }
need "$dropin" "Wants=statlet-cri-proxy.service"
need "$dropin" "After=statlet-cri-proxy.service"
if grep -q '^Requires=\|^BindsTo=' "$dropin"; then echo "the kubelet must not be restarted with statlet" >&2; exit 1; fi
echo "statlet-cri-proxy.service and its kubelet drop-in check"
