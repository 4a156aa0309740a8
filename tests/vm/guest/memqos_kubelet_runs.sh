# Memory QoS as a kubelet of each generation lays it (sourced by /init, after every other
# stage): the guest's kubepods trees are cleared, then a node is laid out as
#   v136         a v1.36 kubelet with memoryReservationPolicy TieredReservation and factor 0.9
#                writes it: Guaranteed memory.min, Burstable memory.low, kubepods memory.min =
#                Guaranteed + Burstable and no kubepods memory.low (so the Burstable tier's
#                protection is capped), memory.high by the formula;
#   v137         a v1.37 kubelet with its defaults writes it (gate on, policy None, no factor):
#                no knob at all, while a Burstable container churns past what factor 0.9
#                would have throttled at;
#   v137-tiered  the same kubelet once its configuration file says TieredReservation (read
#                again by the running daemon): kubepods memory.low now passes the tier down.
# A second daemon judges each layout from the kubelet's configuration file and the API
# server's Node and pods (statlet_vm_apiserver, a stand-in serving them per the API's JSON).
# Results under $R/kubelet/: one scrape per layout (v136.metrics, v137-*.metrics, …), the
# layouts' cgroup files (*.cg), the CRI and JSON views, the daemon's log.

KQ=$R/kubelet
KQ_API_PORT=9781
KQ_PORT=9782
KQ_CRI=/run/statlet/cri-kubelet.sock
KQ_CONF=/tmp/kubelet/config.yaml
KQ_API_DIR=/tmp/kubelet/api
KQ_NODE=vm-node
KQ_UID_G=1b2c3d4e-5f60-4172-8394-a5b6c7d8e9f0   # Guaranteed: db (64Mi)
KQ_UID_B=2c3d4e5f-6071-4283-94a5-b6c7d8e9f0a1   # Burstable: web (+ side)
KQ_UID_E=3d4e5f60-7182-4394-a5b6-c7d8e9f0a1b2   # BestEffort: batch
MI=1048576
KQ_ALLOC=$((512 * MI))   # node allocatable: kubepods memory.max

KP=/kubepods.slice
KP_BU=$KP/kubepods-burstable.slice
KP_BE=$KP/kubepods-besteffort.slice
kq_pod_path() {  # QOS UID
  local u=$(echo "$2" | tr - _)
  case $1 in
    guaranteed) echo $KP/kubepods-pod$u.slice ;;
    *) echo $KP/kubepods-$1.slice/kubepods-$1-pod$u.slice ;;
  esac
}
KQ_POD_G=$(kq_pod_path guaranteed $KQ_UID_G)
KQ_POD_B=$(kq_pod_path burstable $KQ_UID_B)
KQ_POD_E=$(kq_pod_path besteffort $KQ_UID_E)
kq_ctr() { echo $1/cri-containerd-$(container_id kq-$2).scope; }  # POD_PATH NAME

# The kubelet's memory.high, in integers: floor[(request + 0.9 × (limit − request)) / page] × page.
kq_high() { echo $(( (10 * $1 + 9 * ($2 - $1)) / 40960 * 4096 )); }

# Every cgroup of a layout, for the dumps.
kq_cgroups() { find $CG$KP -type d | sed "s|^$CG||" | sort; }

unpopulated() { ! grep -q 'populated 1' "$1/cgroup.events"; }
# Kills every process under the kubepods trees and removes them, deepest first.
kq_clear() {
  local t
  for t in $KP /kubepods; do
    [ -d $CG$t ] || continue
    echo 1 > $CG$t/cgroup.kill
    wait_until 20 unpopulated $CG$t || err "kubelet layouts: $t still populated"
    find $CG$t -depth -type d -exec rmdir {} \; 2>/dev/null
    [ -d $CG$t ] && err "kubelet layouts: $t not removed"
  done
}

# kq_knobs CGROUP min low high max: writes the memory knobs ("-" leaves one at its default).
kq_knobs() {
  local p=$CG$1
  make_cgroup "$1"
  [ "$2" != - ] && echo $2 > $p/memory.min
  [ "$3" != - ] && echo $3 > $p/memory.low
  [ "$4" != - ] && echo $4 > $p/memory.high
  [ "$5" != - ] && echo $5 > $p/memory.max
  return 0
}

# kq_pod NAME UID QOS CONTAINERS_JSON STATUSES_JSON: one Pod as the API server writes it.
kq_pod() {
  echo "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"$1\",\"namespace\":\"kq\",\"uid\":\"$2\",\"resourceVersion\":\"100\"},\"spec\":{\"nodeName\":\"$KQ_NODE\",\"containers\":[$4]},\"status\":{\"phase\":\"Running\",\"qosClass\":\"$3\",\"containerStatuses\":[$5]}}"
}
kq_status() { echo "{\"name\":\"$1\",\"containerID\":\"containerd://$(container_id kq-$1)\",\"ready\":true}"; }
kq_container() {  # NAME REQUEST LIMIT ("" for none)
  local r="" l=""
  [ -n "$2" ] && r="\"requests\":{\"memory\":\"$2\"}"
  [ -n "$3" ] && l="\"limits\":{\"memory\":\"$3\"}"
  [ -n "$r" ] && [ -n "$l" ] && r="$r,"
  echo "{\"name\":\"$1\",\"image\":\"busybox\",\"resources\":{$r$l}}"
}
# kq_api VERSION PODS…: the Node object and the pod list the stand-in serves.
kq_api() {
  local version=$1 items="" p; shift
  for p in "$@"; do items="$items${items:+,}$p"; done
  mkdir -p $KQ_API_DIR
  echo "{\"apiVersion\":\"v1\",\"kind\":\"Node\",\"metadata\":{\"name\":\"$KQ_NODE\"},\"status\":{\"nodeInfo\":{\"kubeletVersion\":\"$version\"}}}" > $KQ_API_DIR/node.json.tmp
  mv $KQ_API_DIR/node.json.tmp $KQ_API_DIR/node.json
  echo "{\"apiVersion\":\"v1\",\"kind\":\"PodList\",\"metadata\":{\"resourceVersion\":\"100\"},\"items\":[$items]}" > $KQ_API_DIR/pods.json.tmp
  mv $KQ_API_DIR/pods.json.tmp $KQ_API_DIR/pods.json
}

kq_metrics() { wget -q -O - http://127.0.0.1:$KQ_PORT/metrics 2>/dev/null; }
kq_has() { kq_metrics | grep -qF "$1"; }
kq_daemon_start() {
  local flags="--web.listen-address 127.0.0.1:$KQ_PORT --runtime.endpoint=none --bpf=off"
  grep -q -- '--cri.listen' $R/statlet/help.out && flags="$flags --cri.listen $KQ_CRI"
  flags="$flags --memory-qos.apiserver=http://127.0.0.1:$KQ_API_PORT --memory-qos.node-name=$KQ_NODE"
  flags="$flags --memory-qos.kubelet-config=$KQ_CONF"
  echo "$flags" >> $KQ/daemon.flags
  run_in /system.slice/statlet statlet $flags >> $KQ/daemon.log 2>&1
  KQ_DAEMON=$!
}
kq_daemon_stop() { kill $KQ_DAEMON 2>/dev/null; wait $KQ_DAEMON 2>/dev/null; }

# kq_capture NAME: a scrape, the layout's cgroup files and the CRI view, as NAME.*
kq_capture() {
  kq_metrics > $KQ/$1.metrics
  dump_cgroups $KQ/$1.cg $(kq_cgroups)
  if [ -S $KQ_CRI ]; then
    statlet stats --cri.endpoint unix://$KQ_CRI -o json > $KQ/$1.cri.json 2> $KQ/$1.cri.err
    statlet stats --cri.endpoint unix://$KQ_CRI --pods -o json > $KQ/$1.crip.json 2> $KQ/$1.crip.err
  fi
  mark kubelet_$1
}

kq_layout_v136() {
  local g=$(kq_ctr $KQ_POD_G db) w=$(kq_ctr $KQ_POD_B web) s=$(kq_ctr $KQ_POD_B side) e=$(kq_ctr $KQ_POD_E batch)
  local gmin=$((64 * MI)) wreq=$((32 * MI)) wlim=$((128 * MI)) sreq=$((16 * MI))
  local bsum=$((wreq + sreq))
  # kubepods: memory.min = Guaranteed + Burstable; v1.36 sets no memory.low there.
  kq_knobs $KP $((gmin + bsum)) 0 max $KQ_ALLOC
  kq_knobs $KP_BU 0 $bsum max max
  kq_knobs $KP_BE 0 0 max max
  kq_knobs $KQ_POD_G $gmin 0 max $gmin
  kq_knobs $g $gmin 0 max $gmin
  kq_knobs $KQ_POD_B 0 $bsum max max
  kq_knobs $w 0 $wreq $(kq_high $wreq $wlim) $wlim
  kq_knobs $s 0 $sreq $(kq_high $sreq $KQ_ALLOC) max
  kq_knobs $KQ_POD_E 0 0 max max
  kq_knobs $e 0 0 max max   # v1.36 writes no memory.high for BestEffort
  kq_api v1.36.2 \
    "$(kq_pod db-0 $KQ_UID_G Guaranteed "$(kq_container db 64Mi 64Mi)" "$(kq_status db)")" \
    "$(kq_pod web-0 $KQ_UID_B Burstable "$(kq_container web 32Mi 128Mi),$(kq_container side 16Mi "")" \
        "$(kq_status web),$(kq_status side)")" \
    "$(kq_pod batch-0 $KQ_UID_E BestEffort "$(kq_container batch "" "")" "$(kq_status batch)")"
  mkdir -p $(dirname $KQ_CONF)
  cat > $KQ_CONF <<CONF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
featureGates:
  MemoryQoS: true
memoryReservationPolicy: TieredReservation
memoryThrottlingFactor: 0.9
CONF
  # Usage below each request: the Guaranteed one protected, the Burstable one not (capped).
  run_in $g $W alloc --bytes 16M --report $KQ/v136-db.report
  run_in $w $W alloc --bytes 16M --report $KQ/v136-web.report
  run_in $s $W pause
  run_in $e $W pause
  echo "db=$g web=$w side=$s batch=$e" > $KQ/v136.containers
  wait_until 30 file_exists $KQ/v136-db.report && wait_until 30 file_exists $KQ/v136-web.report ||
    err "kubelet layouts: v1.36 allocators did not report"
}

# v1.37's defaults: no knob written; web churns a 120 MiB window under its 128Mi limit, past
# the 116.8 MiB factor 0.9 would have set as memory.high; side holds 8 MiB of its 32Mi request.
kq_layout_v137() {
  local g=$(kq_ctr $KQ_POD_G db) w=$(kq_ctr $KQ_POD_B web) s=$(kq_ctr $KQ_POD_B side) e=$(kq_ctr $KQ_POD_E batch)
  kq_knobs $KP 0 0 max $KQ_ALLOC
  kq_knobs $KP_BU 0 0 max max
  kq_knobs $KP_BE 0 0 max max
  kq_knobs $KQ_POD_G 0 0 max $((64 * MI))
  kq_knobs $g 0 0 max $((64 * MI))
  kq_knobs $KQ_POD_B 0 0 max max
  kq_knobs $w 0 0 max $((128 * MI))
  kq_knobs $s 0 0 max max
  kq_knobs $KQ_POD_E 0 0 max max
  kq_knobs $e 0 0 max max
  kq_api v1.37.0 \
    "$(kq_pod db-0 $KQ_UID_G Guaranteed "$(kq_container db 64Mi 64Mi)" "$(kq_status db)")" \
    "$(kq_pod web-0 $KQ_UID_B Burstable "$(kq_container web 16Mi 128Mi),$(kq_container side 32Mi "")" \
        "$(kq_status web),$(kq_status side)")" \
    "$(kq_pod batch-0 $KQ_UID_E BestEffort "$(kq_container batch "" "")" "$(kq_status batch)")"
  cat > $KQ_CONF <<CONF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
CONF
  run_in $g $W alloc --bytes 16M --report $KQ/v137-db.report
  run_in $w $W alloc-loop --chunk 1M --window 120M --report $KQ/v137-web.report; KQ_CHURN=$!
  run_in $s $W alloc --bytes 8M --report $KQ/v137-side.report
  run_in $e $W pause
  echo "db=$g web=$w side=$s batch=$e" > $KQ/v137.containers
}

# The same node once the kubelet's configuration says TieredReservation (v1.37 also sets
# kubepods memory.low to the Burstable requests): written while the daemon runs.
kq_layout_v137_tiered() {
  local g=$(kq_ctr $KQ_POD_G db) w=$(kq_ctr $KQ_POD_B web) s=$(kq_ctr $KQ_POD_B side)
  local gmin=$((64 * MI)) wreq=$((16 * MI)) sreq=$((32 * MI))
  local bsum=$((wreq + sreq))
  echo $((gmin + bsum)) > $CG$KP/memory.min; echo $bsum > $CG$KP/memory.low
  echo $bsum > $CG$KP_BU/memory.low
  echo $gmin > $CG$KQ_POD_G/memory.min; echo $gmin > $CG$g/memory.min
  echo $bsum > $CG$KQ_POD_B/memory.low
  echo $wreq > $CG$w/memory.low; echo $sreq > $CG$s/memory.low
  cat > $KQ_CONF.tmp <<CONF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
cgroupDriver: systemd
memoryReservationPolicy: TieredReservation
CONF
  cat $KQ_CONF.tmp > $KQ_CONF   # in place, as a file mounted alone must be rewritten
}

memqos_kubelet_runs() {
  local t
  grep -q -- '--memory-qos.kubelet-version' $R/statlet/help.out || return 0
  mkdir -p $KQ /run/statlet
  kq_clear
  mark kubelet_cleared
  run_in /system.slice/statlet statlet_vm_apiserver --port $KQ_API_PORT --dir $KQ_API_DIR > $KQ/apiserver.log 2>&1
  KQ_API=$!

  kq_layout_v136
  kq_daemon_start
  wait_until 60 kq_has 'statlet_node_memory_qos_low_bytes{' || err "kubelet layouts: v1.36 never judged"
  kq_capture v136
  statlet stats -o json --memory-qos.kubelet-config $KQ_CONF --memory-qos.kubelet-version v1.36.2 \
    > $KQ/v136.stats.json 2> $KQ/v136.stats.err
  kq_daemon_stop
  kq_clear

  kq_layout_v137
  kq_daemon_start
  wait_until 60 kq_has 'rules="v1.37"' || err "kubelet layouts: v1.37 never judged"
  wait_until 30 counter_above $CG$(kq_ctr $KQ_POD_B web)/memory.stat anon $((117 * MI)) ||
    err "kubelet layouts: web never churned past 117 MiB"
  mark kubelet_v137_churning
  # A scrape a second for longer than the stall detector's dwell and rise grace.
  : > $KQ/v137-scrapes.metrics
  for t in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do
    echo "# scrape $(now)" >> $KQ/v137-scrapes.metrics
    kq_metrics >> $KQ/v137-scrapes.metrics
    sleep 1
  done
  kq_capture v137
  kill -USR1 $KQ_CHURN

  kq_layout_v137_tiered
  wait_until 60 kq_has 'reservation_policy="TieredReservation"' || err "kubelet layouts: the new configuration was never read"
  kq_capture v137-tiered
  kq_daemon_stop
  kill $KQ_API 2>/dev/null; wait $KQ_API 2>/dev/null
  kq_clear
  mark kubelet_done
}
