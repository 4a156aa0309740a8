# Memory QoS in the guest (sourced by /init), while the daemon runs: a container
# livelocked at memory.high, one throttled normally (clean page cache, reclaimed cheaply),
# and one whose allocator grows step by step through the zones. A scraper collects every
# MEMQOS_PERIOD seconds (as Prometheus would) and keeps the Memory QoS lines of each scrape;
# the guest waits on what the scrapes show, and marks the times the host asserts on.
# Results under $R/memqos/: containers, scrapes, reports, cgroup dumps.

POD_Q=6a7b8c9d-0e1f-4a2b-8c3d-4e5f6a7b8c9d   # systemd, burstable: Memory QoS
MEMQOS_PERIOD=1
LIVE_HIGH=16M; LIVE_MAX=256M; LIVE_WINDOW=64M
CACHE_HIGH=8M; CACHE_MAX=256M
STEPS_MIN=24M; STEPS_HIGH=56M; STEPS_MAX=256M; STEP=20M

MQ=$R/memqos

# mq_container NAME: a container cgroup of pod Q (systemd layout), path in $CPATH; listed
# in $MQ/containers (not $R/containers: the collector checks ran before these existed).
mq_container() {
  local id u
  id=$(container_id "$1"); u=$(echo "$POD_Q" | tr - _)
  CPATH=/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod$u.slice/cri-containerd-$id.scope
  make_cgroup "$CPATH"
  echo "$1 $CPATH" >> $MQ/containers
}

# The Memory QoS lines of one scrape of the memqos containers, after a "# scrape UPTIME" line.
MQ_FAMILIES='^(statlet_container_memory_|statlet_pressure_stall_ratio|container_memory_events_high_total|container_memory_usage_bytes|statlet_memory_(min|high)_bytes|container_spec_memory_limit_bytes)'
mq_scraper() {
  while [ ! -f /tmp/memqos-stop ]; do
    echo "# scrape $(now)"
    wget -q -O - http://127.0.0.1:$STATLET_PORT/metrics | grep -E "$MQ_FAMILIES" | grep -F "$POD_Q_SLICE"
    echo "# done $(now)"
    sleep $MEMQOS_PERIOD
  done
}

# mq_last FAMILY_AND_LABELS_REGEX: the value in the newest scrape line matching it.
mq_last() { grep -E "$1" $MQ/scrapes 2>/dev/null | tail -n 1 | sed 's/.* //'; }
mq_is() { [ "$(mq_last "$1")" = "$2" ]; }
stalled_is() { mq_is "^statlet_container_memory_high_stalled\{id=\"$1\"" "$2"; }
zone_is() { mq_is "^statlet_container_memory_qos_zone\{id=\"$1\".*zone=\"$2\"" 1; }

memqos_runs() {
  local go=/tmp/memqos-go k
  mkdir -p $MQ $go
  : > $MQ/containers
  POD_Q_SLICE=kubepods-burstable-pod$(echo "$POD_Q" | tr - _).slice
  cat > $MQ/expect <<EXP
period=$MEMQOS_PERIOD
live_high=$LIVE_HIGH
live_max=$LIVE_MAX
cache_high=$CACHE_HIGH
steps_min=$STEPS_MIN
steps_high=$STEPS_HIGH
step=$STEP
EXP
  mq_container qos-livelock; LIVE=$CPATH
  echo $LIVE_HIGH > $CG$LIVE/memory.high; echo $LIVE_MAX > $CG$LIVE/memory.max
  [ -f $CG$LIVE/memory.swap.max ] && echo 0 > $CG$LIVE/memory.swap.max
  mq_container qos-cache; CACHE=$CPATH
  echo $CACHE_HIGH > $CG$CACHE/memory.high; echo $CACHE_MAX > $CG$CACHE/memory.max
  mq_container qos-steps; STEPS=$CPATH
  echo $STEPS_MIN > $CG$STEPS/memory.min; echo $STEPS_HIGH > $CG$STEPS/memory.high
  echo $STEPS_MAX > $CG$STEPS/memory.max
  # Its ancestors carry the request too, as a kubelet sums it up the tree: the kernel caps a
  # cgroup's memory.min by its ancestors' (cgroup-v2.rst), and statlet's zones follow.
  k=$(dirname $STEPS)
  while [ "$k" != / ]; do echo $STEPS_MIN > $CG$k/memory.min; k=$(dirname $k); done
  cat /proc/swaps > $MQ/swaps

  mq_scraper > $MQ/scrapes 2> $MQ/scraper.err &
  SCRAPER=$!
  run_in $CACHE $W cache-reader --path /dev/ram0 --report $MQ/cache.report; CACHE_PID=$!
  run_in $STEPS $W alloc-steps --step $STEP --steps 3 --go $go --report $MQ/steps.report
  mark memqos_start
  run_in $LIVE $W alloc-loop --chunk 1M --window $LIVE_WINDOW --report $MQ/livelock.report; LIVE_PID=$!
  mark livelock_start
  wait_until 30 counter_above $CG$LIVE/memory.events high 0 && mark livelock_onset ||
    err "memqos: the allocator never crossed memory.high"

  # The stepwise allocator walks the zones while the livelock develops.
  for k in 1 2 3; do
    touch $go/$k
    case $k in 1) z=below_request ;; 2) z=above_request ;; 3) z=throttling ;; esac
    wait_until 40 zone_is $STEPS $z && mark step_$z || err "memqos: steps container never showed zone $z"
  done

  wait_until 90 stalled_is $LIVE 1 && mark livelock_flagged || err "memqos: the livelock was never flagged"
  dump_cgroups $MQ/cg-flagged $LIVE $CACHE $STEPS
  # The allocator stops touching pages (it holds what it has): the flag must clear.
  kill -USR1 $LIVE_PID
  mark livelock_stopped
  wait_until 40 stalled_is $LIVE 0 && mark livelock_cleared || err "memqos: the flag never cleared"
  wait_until 20 file_exists $MQ/livelock.report || err "memqos: the allocator did not stop"
  kill -USR1 $CACHE_PID
  wait_until 20 file_exists $MQ/cache.report || err "memqos: the cache reader did not stop"
  touch /tmp/memqos-stop
  wait $SCRAPER
  dump_cgroups $MQ/cg-end $LIVE $CACHE $STEPS
  mark memqos_done
}
