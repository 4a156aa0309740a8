# Memory QoS applied by a real runtime (sourced by /init, last): Debian's containerd and runc
# on this cgroup-v2 kernel, a pod and a container created over CRI as a v1.27 kubelet with
# Memory QoS on creates them (a memory limit, and memory.min / memory.high in
# linux.resources.unified), and a daemon that reads the runtime's view beside the cgroup's.
# Results under $R/runtime/: what was created, scrapes, the container's cgroup files, the
# CRI view, containerd's and the daemon's logs. Absent when the build has no CRI driver.

RT=$R/runtime
RT_DIR=/tmp/ctd            # containerd's root and state: the guest's tmpfs
RT_SOCK=/run/ctd/containerd.sock
RT_PORT=9783
RT_CRI=/run/statlet/cri-runtime.sock
RT_IMAGE=localhost/statlet/busybox:1
RT_ROOT=/statlet-vm-cri
MI=1048576
RT_LIMIT=$((64 * MI)); RT_MIN=$((16 * MI))
# floor[(16Mi + 0.9 × (64Mi − 16Mi)) / 4096] × 4096, the kubelet's v1.27 value.
RT_HIGH=62074880

# No snapshotter module, no CNI, no AppArmor parser in the guest: the native snapshotter,
# host-network pods only, AppArmor left off. The guest's root is the initramfs, which
# pivot_root cannot leave: runc moves into the container's root without it.
rt_config() {
  cat <<CONF
version = 2
root = "$RT_DIR/root"
state = "/run/ctd/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.overlayfs", "io.containerd.tracing.processor.v1.otlp"]
[grpc]
  address = "$RT_SOCK"
[ttrpc]
  address = "$RT_SOCK.ttrpc"
[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = "$RT_DIR/opt"
  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = "$RT_IMAGE"
    disable_apparmor = true
    enable_selinux = false
    stats_collect_period = 1
    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "native"
      default_runtime_name = "runc"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          SystemdCgroup = false
          NoPivotRoot = true
          Root = "/run/ctd/runc"
    [plugins."io.containerd.grpc.v1.cri".cni]
      conf_dir = "$RT_DIR/net.d"
CONF
}

rt_metrics() { wget -q -O - http://127.0.0.1:$RT_PORT/metrics 2>/dev/null; }
# The daemon shows the container applied (its runtime's unified knobs read).
rt_applied() { rt_metrics | grep -F "$RT_CG" | grep -q '^statlet_container_memory_qos_applied{.* 1$'; }

runtime_runs() {
  [ -x /usr/local/bin/statlet_vm_cri_pod ] && [ -x /usr/bin/containerd ] || return 0
  mkdir -p $RT $RT_DIR/net.d /run/ctd /etc
  # The CRI plugin copies the node's hosts and resolv.conf into a host-network sandbox.
  [ -f /etc/hosts ] || echo "127.0.0.1 localhost" > /etc/hosts
  [ -f /etc/resolv.conf ] || : > /etc/resolv.conf
  hostname vm-node
  rt_config > $RT/containerd.toml
  mark runtime_start
  containerd --config $RT/containerd.toml > $RT/containerd.log 2>&1 &
  RT_PID=$!
  if ! wait_until 60 ctr --address $RT_SOCK version; then
    err "runtime: containerd did not answer"; return 0
  fi
  mark runtime_containerd_up
  if ! CONTAINERD_SNAPSHOTTER=native ctr --address $RT_SOCK -n k8s.io images import /data/vm-image.tar \
      > $RT/import.log 2>&1; then
    err "runtime: image import failed"; return 0
  fi
  statlet_vm_cri_pod --socket $RT_SOCK --image $RT_IMAGE --cgroup-root $RT_ROOT --limit $RT_LIMIT \
    --min $RT_MIN --high $RT_HIGH --out $RT/created > $RT/cri_pod.log 2>&1 ||
    { err "runtime: pod not created: $(tail -n 3 $RT/cri_pod.log)"; return 0; }
  mark runtime_container_started
  RT_CG=$(sed -n 's/^cgroup=//p' $RT/created)
  # The kubelet's own part (not the runtime's): the request summed up the pod, QoS and
  # kubepods cgroups, since the kernel caps a cgroup's memory.min by its ancestors'.
  local k=$(dirname $RT_CG)
  while [ "$k" != / ]; do echo $RT_MIN > $CG$k/memory.min; k=$(dirname $k); done
  cat > $RT/expect <<EXP
limit=$RT_LIMIT
min=$RT_MIN
high=$RT_HIGH
EXP
  local flags="--web.listen-address 127.0.0.1:$RT_PORT --runtime.endpoint=unix://$RT_SOCK --bpf=off"
  grep -q -- '--cri.listen' $R/statlet/help.out && flags="$flags --cri.listen $RT_CRI"
  flags="$flags --memory-qos.kubelet-version=v1.27.0 --memory-qos.feature-gate=true --memory-qos.kubelet-config="
  echo "$flags" > $RT/daemon.flags
  run_in /system.slice/statlet statlet $flags > $RT/daemon.log 2>&1
  local daemon=$!
  wait_until 60 rt_applied || err "runtime: the daemon never showed the container applied"
  mark runtime_applied
  rt_metrics > $RT/scrape.metrics
  dump_cgroups $RT/container.cg $RT_CG
  if [ -S $RT_CRI ]; then
    statlet stats --cri.endpoint unix://$RT_CRI -o json > $RT/cri.json 2> $RT/cri.err
  fi
  kill $daemon 2>/dev/null; wait $daemon 2>/dev/null
  kill $RT_PID 2>/dev/null
  mark runtime_done
}
