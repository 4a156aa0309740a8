# The eBPF probes in the guest (sourced by /init): statlet_vm_bpf_dump loads them before
# the workloads and dumps what they saw when told, and a TCP stream whose receiving link
# goes down for a moment makes retransmits for the tcp probe.

retrans_segs() { awk '/^Tcp: [0-9]/ {print $13}' /proc/net/snmp; }  # RetransSegs
retrans_above() { [ "$(retrans_segs)" -gt "$1" ]; }
rx_above() { [ "$(nsenter -t $1 -n awk '/eth0:/ {print $2}' /proc/net/dev)" -gt "$2" ]; }

start_bpf_dump() {
  command -v statlet_vm_bpf_dump > /dev/null || return 0
  mkdir -p $R/statlet
  mkfifo /tmp/bpfctl
  exec 9<> /tmp/bpfctl   # held open for writing, so the dumper's open does not block
  make_cgroup /system.slice/bpfdump
  run_in /system.slice/bpfdump statlet_vm_bpf_dump --ready $R/statlet/bpf-ready \
    --control /tmp/bpfctl > $R/statlet/bpf.out 2> $R/statlet/bpf.err
  BPF_PID=$!
  wait_until 60 file_exists $R/statlet/bpf-ready || err "eBPF probes did not load"
  retrans_segs > $R/statlet/retrans-at-load
  mark bpf_loaded
}

# A stream from the tcp container (host network) to pod B; pod B's eth0 goes down until
# the sender's namespace counts a retransmitted segment, then comes back.
retransmit_workload() {
  local rep=$R/reports base rx0 sender tcp_cg net_cg
  [ -n "${BPF_PID:-}" ] || return 0
  add_container tcp systemd guaranteed $POD_G
  tcp_cg=$CPATH
  run_in $tcp_cg $W pause   # keeps the container populated after the sender is gone
  net_cg=$(awk '$1 == "net" {print $6}' $R/containers)
  run_in $net_cg $NS_B $W recv --port 5001 --ready $rep/tcp-listening --report $rep/tcp-recv
  wait_until 20 file_exists $rep/tcp-listening || err "second receiver did not listen"
  rx0=$(nsenter -t $PAUSE_B -n awk '/eth0:/ {print $2}' /proc/net/dev)
  run_in $tcp_cg $W send --host 10.77.0.2 --port 5001 --bytes 4G --report $rep/tcp-sent
  sender=$!
  wait_until 20 rx_above $PAUSE_B $((rx0 + 1000000)) || err "tcp stream did not start"
  # Under a slow emulator a down period can pass without a segment in flight: take the link
  # down again (at most three times) until the sender's namespace counts a retransmit.
  base=$(retrans_segs)
  local tries=0
  while :; do
    tries=$((tries + 1))
    nsenter -t $PAUSE_B -n $IP link set eth0 down
    wait_until 10 retrans_above $base && break
    nsenter -t $PAUSE_B -n $IP link set eth0 up
    [ $tries -ge 3 ] && { err "no retransmit while pod B's link was down (3 tries)"; break; }
    rx0=$(nsenter -t $PAUSE_B -n awk '/eth0:/ {print $2}' /proc/net/dev)
    wait_until 20 rx_above $PAUSE_B $((rx0 + 1000000)) || err "tcp stream did not resume"
  done
  nsenter -t $PAUSE_B -n $IP link set eth0 up
  # RetransSegs counts a retransmit whose transmit failed (the peer's link down), the
  # tracepoint only one that went out: the stream resumes only after such a one, so the
  # sender lives until it has.
  rx0=$(nsenter -t $PAUSE_B -n awk '/eth0:/ {print $2}' /proc/net/dev)
  wait_until 30 rx_above $PAUSE_B $((rx0 + 1000000)) || err "tcp stream did not resume after the link came back"
  kill $sender
  wait $sender 2>/dev/null
  mark retransmits_done
}

dump_bpf() {
  [ -n "${BPF_PID:-}" ] || return 0
  retrans_segs > $R/statlet/retrans-at-dump
  echo collect >&9
  wait_until 60 sh -c "! kill -0 $BPF_PID" || err "eBPF dump did not finish"
  wait $BPF_PID; echo $? > $R/statlet/bpf.rc
}

# The eBPF cgroup iterator against the files, both read at the same moment for every
# cgroup (Debian's 6.1 must render every file), then its cost against the files' pread
# floor at 1,000 cgroups, and the collector with and without it.
check_iterator() {
  command -v statlet_vm_iter_check > /dev/null || return 0
  log "cgroup iterator vs files"
  run_capture iter-check 120 statlet_vm_iter_check
  mark iter_checked
}

bench_iterator() {
  command -v statlet_cgroup_stats_bench > /dev/null || return 0
  log "cgroup iterator bench (1,000 cgroups)"
  run_capture iter-bench 120 statlet_cgroup_stats_bench --cgroups 1000 --rounds 5
  mark iter_bench_done
}
