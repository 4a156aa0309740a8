#!/usr/bin/env bash
# Starts and stops a private containerd for the e2e stage.
#
#   containerd_harness.sh start DIR CGROUP_ROOT IMAGE   containerd on DIR/containerd.sock
#   containerd_harness.sh stop DIR                      stop it and remove every trace
#   containerd_harness.sh stop-daemon DIR               stop containerd alone (its pods and
#                                                       state stay, as when it crashes)
#   containerd_harness.sh start-daemon DIR              start it again over that state
#
# containerd runs in a network namespace of its own (the CNI bridge and the pods' veths
# live there, never in the host's; kept at DIR/netns across restarts), with root, state,
# sockets and CNI files under DIR.
# Pods are expected under CGROUP_ROOT (their cgroup_parent); stop kills what is left in
# those cgroups and removes them, deepest first, in every hierarchy, as the kubelet would.
# Only processes this harness started are signalled, each by its PID.
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"

die() { echo "containerd_harness: $*" >&2; exit 1; }

wait_for() {  # wait_for SECONDS COMMAND...: polls COMMAND until it succeeds
  local deadline=$((SECONDS + $1)); shift
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$deadline" ] || return 1
    sleep 0.1
  done
}

cgroup_mounts() { findmnt -rn -t cgroup,cgroup2 -o TARGET; }

start() {
  local dir="$1" cgroup_root="$2" image="$3"
  command -v containerd >/dev/null || die "containerd is not installed (.ci/install-deps)"
  command -v runc >/dev/null || die "runc is not installed (.ci/install-deps)"
  [ -x /usr/lib/cni/bridge ] || die "CNI plugins missing in /usr/lib/cni (containernetworking-plugins)"
  mkdir -p "$dir/cni/net.d" "$dir/cni/ipam" "$dir/certs.d"
  echo "$cgroup_root" > "$dir/cgroup-root"
  sed -e "s|@DIR@|$dir|g" -e "s|@IMAGE@|$image|g" "$HERE/containerd.toml.in" > "$dir/containerd.toml"
  sed -e "s|@DIR@|$dir|g" "$HERE/10-bridge.conflist.in" > "$dir/cni/net.d/10-bridge.conflist"
  /usr/bin/python3 "$HERE/make_oci_image.py" "$dir/image.tar" "$image" > "$dir/image.digest"

  # A network namespace of its own, kept at DIR/netns (a restarted containerd finds its
  # bridge there), with lo up.
  touch "$dir/netns"
  unshare --net="$dir/netns" ip link set lo up
  start_daemon "$dir"
  ctr --address "$dir/containerd.sock" -n k8s.io images import "$dir/image.tar" > "$dir/import.log" 2>&1 \
    || { cat "$dir/import.log" >&2; die "image import failed"; }
}

# containerd in DIR/netns; exec keeps the PID, so it is containerd's.
start_daemon() {
  local dir="$1"
  nsenter --net="$dir/netns" containerd --config "$dir/containerd.toml" >> "$dir/containerd.log" 2>&1 < /dev/null &
  echo $! > "$dir/containerd.pid"
  if ! wait_for 30 ctr --address "$dir/containerd.sock" version; then
    tail -20 "$dir/containerd.log" >&2
    die "containerd did not answer on $dir/containerd.sock"
  fi
}

# SIGTERM to containerd alone (the shims and their containers go on); waits for it to exit.
stop_daemon() {
  local dir="$1" pid
  pid="$(cat "$dir/containerd.pid")"
  kill -TERM "$pid" 2>/dev/null || return 0
  wait_for 10 sh -c "! kill -0 $pid" || kill -KILL "$pid" 2>/dev/null || true
  wait_for 10 sh -c "! kill -0 $pid"
}

# Processes whose command line names this containerd's socket: the shims it started.
shim_pids() {
  local dir="$1" p
  for p in /proc/[0-9]*; do
    if { tr '\0' ' ' < "$p/cmdline"; } 2>/dev/null | grep -q -- "-address $dir/containerd.sock "; then
      echo "${p#/proc/}"
    fi
  done
}

stop() {
  local dir="$1" cgroup_root="" pid mnt h
  [ -d "$dir" ] || return 0
  [ -f "$dir/cgroup-root" ] && cgroup_root="$(cat "$dir/cgroup-root")"
  local shims; shims="$(shim_pids "$dir")"
  if [ -f "$dir/containerd.pid" ]; then
    pid="$(cat "$dir/containerd.pid")"
    if kill -TERM "$pid" 2>/dev/null; then
      wait_for 10 sh -c "! kill -0 $pid" || kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  for pid in $shims; do kill -KILL "$pid" 2>/dev/null || true; done
  # Container processes left in the pods' cgroups (the shims are gone: nobody reaps them).
  if [ -n "$cgroup_root" ]; then
    for h in $(cgroup_mounts); do
      [ -d "$h$cgroup_root" ] || continue
      find "$h$cgroup_root" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do
        kill -KILL "$pid" 2>/dev/null || true
      done
    done
  fi
  # Rootfs and netns mounts under DIR, deepest first.
  awk -v d="$dir/" 'index($5, d) == 1 { print $5 }' /proc/self/mountinfo | sort -r | while read -r mnt; do
    umount -l "$mnt" 2>/dev/null || true
  done
  if [ -n "$cgroup_root" ]; then
    for h in $(cgroup_mounts); do
      [ -d "$h$cgroup_root" ] || continue
      # rmdir fails while a killed process is still exiting: retry for a few seconds.
      wait_for 10 sh -c "find '$h$cgroup_root' -depth -type d -exec rmdir {} + 2>/dev/null; [ ! -d '$h$cgroup_root' ]" \
        || echo "containerd_harness: could not remove $h$cgroup_root" >&2
    done
  fi
  rm -rf --one-file-system "$dir"
}

case "${1:-}" in
  start) [ $# -eq 4 ] || die "usage: $0 start DIR CGROUP_ROOT IMAGE"; start "$2" "$3" "$4" ;;
  stop) [ $# -eq 2 ] || die "usage: $0 stop DIR"; stop "$2" ;;
  stop-daemon) [ $# -eq 2 ] || die "usage: $0 stop-daemon DIR"; stop_daemon "$2" ;;
  start-daemon) [ $# -eq 2 ] || die "usage: $0 start-daemon DIR"; start_daemon "$2" ;;
  *) die "usage: $0 start DIR CGROUP_ROOT IMAGE | stop DIR | stop-daemon DIR | start-daemon DIR" ;;
esac
