# statlet's runs inside the guest (sourced by /init). Each run leaves its output, stderr
# and exit code under $R/statlet/; the host decides what passed. The guest's own readings
# of the same cgroup files are taken right before ("before") and after ("after") the
# collection, so every statlet number can be bracketed.

STATLET_PORT=9779
CRI_SOCK=/run/statlet/cri.sock

# Every container cgroup and every pod cgroup above them.
tracked_cgroups() {
  awk '{print $6}' $R/containers
  awk '{print $6}' $R/containers | sed 's|/[^/]*$||' | sort -u
}

dump_all() {
  local phase=$1 uid pid
  mkdir -p $R/cg $R/net
  dump_cgroups $R/cg/$phase $(tracked_cgroups)
  while read -r uid pid; do
    grep -H '' /proc/$pid/net/dev | sed "s|^/proc/$pid/net/dev|$uid|"
  done < $R/pod_pause_pids > $R/net/$phase.dev
  while read -r uid pid; do
    echo "$uid $(readlink /proc/$pid/ns/net | tr -dc 0-9)"
  done < $R/pod_pause_pids > $R/net/netns
}

# run_capture NAME TIMEOUT CMD...: stdout, stderr and exit code under $R/statlet/NAME.*
run_capture() {
  local name=$1 limit=$2; shift 2
  timeout "$limit" "$@" > $R/statlet/$name.out 2> $R/statlet/$name.err
  echo $? > $R/statlet/$name.rc
}

high_events() { sed -n 's/^high //p' $CG$(awk '$1 == "memory-high" {print $6}' $R/containers)/memory.events; }
high_events_above() { [ "$(high_events)" -gt "$1" ]; }

run_collector() {
  local high_after
  mkdir -p $R/statlet
  dump_all before
  run_capture stats 60 statlet stats -o json
  dump_all after
  # The throttled allocator charges in bursts up to 2 s apart: wait for the next one so
  # the host sees memory.events high rise past the bracket.
  high_after=$(high_events)
  wait_until 10 high_events_above $high_after
  high_events > $R/cg/high_events_later
  run_capture stats-subtree 60 statlet stats -o json --cgroup /kubepods
  mark collector_done
}

daemon_alive() { kill -0 "$1" 2>/dev/null; }
metrics_served() { wget -q -O $R/statlet/metrics.out http://127.0.0.1:$STATLET_PORT/metrics; }
# Stops the wait early when the daemon has exited (e.g. a build without the daemon).
served_or_exited() { metrics_served || ! daemon_alive "$1"; }

# The daemon serves /metrics, and the CRI socket and eBPF probes when this build has
# them (their flags appear in --help); $R/statlet/daemon.flags records what was asked.
# It starts before the workloads, as on a node, so its probes see every event.
start_daemon() {
  local flags="--web.listen-address 127.0.0.1:$STATLET_PORT"
  mkdir -p $R/statlet /run/statlet
  statlet --help > $R/statlet/help.out 2>&1
  grep -q -- '--cri.listen' $R/statlet/help.out && flags="$flags --cri.listen $CRI_SOCK"
  grep -q -- '--bpf' $R/statlet/help.out && flags="$flags --bpf=on"
  # Which files the eBPF walks render is a debug line (check_results.py reads it).
  grep -q -- '--log.level' $R/statlet/help.out && flags="$flags --log.level=debug"
  echo "$flags" > $R/statlet/daemon.flags
  make_cgroup /system.slice/statlet
  run_in /system.slice/statlet statlet $flags > $R/statlet/daemon.log 2>&1
  DAEMON_PID=$!
  wait_until 60 served_or_exited $DAEMON_PID
  mark daemon_started
}

# The dirty writer's memory.stat, to $R/statlet/dirty-PHASE.stat.
dirty_stat() { cat $CG$(awk '$1 == "dirty" {print $6}' $R/containers)/memory.stat > $R/statlet/dirty-$1.stat; }

# Reads the daemon's endpoints after the workloads, then stops it. The dirty writer's
# memory.stat is read right before and after the scrape, to bracket its file_dirty there.
check_daemon() {
  dirty_stat before-metrics
  if metrics_served; then
    dirty_stat after-metrics
    echo 0 > $R/statlet/metrics.rc
    if grep -q -- '--cri.listen' $R/statlet/daemon.flags; then
      wait_until 20 test -S $CRI_SOCK
      run_capture cri-stats 60 statlet stats --cri.endpoint unix://$CRI_SOCK -o json
      run_capture cri-statsp 60 statlet stats --cri.endpoint unix://$CRI_SOCK --pods -o json
    fi
  else
    echo 1 > $R/statlet/metrics.rc
  fi
  if daemon_alive $DAEMON_PID; then
    echo running > $R/statlet/daemon.rc
    kill $DAEMON_PID
  else
    wait $DAEMON_PID; echo $? > $R/statlet/daemon.rc
  fi
  mark daemon_done
}
