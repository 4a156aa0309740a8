# The kubepods-like trees and the workloads in them (sourced by /init).
#
# Both cgroup drivers' layouts, as the kubelet makes them:
#   systemd:  /kubepods.slice/kubepods-<qos>.slice/kubepods-<qos>-pod<uid_>.slice/cri-containerd-<id>.scope
#             (guaranteed pods sit directly under kubepods.slice as kubepods-pod<uid_>.slice)
#   cgroupfs: /kubepods/<qos>/pod<uid>/<id>   (guaranteed: /kubepods/pod<uid>/<id>)
# $R/containers lists "name driver qos pod_uid container_id cgroup_path" per container.

# own_netns PID: PID has left init's network namespace (its unshare has run).
own_netns() { [ "$(readlink /proc/$1/ns/net)" != "$(readlink /proc/self/ns/net)" ]; }

container_id() { echo -n "statlet-vm-$1" | sha256sum | cut -c1-64; }

# add_container NAME DRIVER QOS POD_UID: creates the cgroup, sets $CPATH.
add_container() {
  local name=$1 driver=$2 qos=$3 uid=$4 id pod
  id=$(container_id "$name")
  if [ "$driver" = systemd ]; then
    local u=$(echo "$uid" | tr - _)
    if [ "$qos" = guaranteed ]; then pod=/kubepods.slice/kubepods-pod$u.slice
    else pod=/kubepods.slice/kubepods-$qos.slice/kubepods-$qos-pod$u.slice; fi
    CPATH=$pod/cri-containerd-$id.scope
  else
    if [ "$qos" = guaranteed ]; then pod=/kubepods/pod$uid
    else pod=/kubepods/$qos/pod$uid; fi
    CPATH=$pod/$id
  fi
  make_cgroup "$CPATH"
  echo "$name $driver $qos $uid $id $CPATH" >> $R/containers
}

POD_A=5f2b7c1e-8a3d-4e6f-9b0c-1d2e3f4a5b6c   # systemd, burstable: cpu, memory, memory.high
POD_G=0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d   # systemd, guaranteed: pids
POD_B=7e8f9a0b-1c2d-4e3f-a4b5-c6d7e8f9a0b1   # cgroupfs, burstable: network, io
POD_E=3c4d5e6f-7a8b-4c9d-8e0f-1a2b3c4d5e6f   # cgroupfs, besteffort: memory.max

# Known quantities the host asserts against (also written to $R/expect).
CPU_MAX="50000 100000"; BURN_THREADS=2; BURN_SECONDS=2
ALLOC_BYTES=64M
HIGH_LIMIT=32M; HIGH_ALLOC=128M
OOM_LIMIT=32M; OOM_ALLOC=128M; OOM_KILLS=2
PIDS_MAX=8; FORKER_THREADS=3
DIO_BS=1M; DIO_WRITES=24; DIO_READS=8
DIRTY_BYTES=16M
NET_BYTES=3000000; NET_PORT=5000

start_workloads() {
  local rep=$R/reports
  mkdir -p $rep
  for m in $(cat /mods/load-order); do
    case $m in brd) args="rd_nr=2 rd_size=65536" ;; *) args="" ;; esac
    insmod /mods/$m.ko $args || err "insmod $m failed"
  done
  mark modules_loaded

  # Pod sandboxes: a pause process per pod, each in its own network namespace.
  add_container sandbox-a systemd burstable $POD_A
  run_in $CPATH unshare -n $W pause; PAUSE_A=$!
  add_container sandbox-b cgroupfs burstable $POD_B
  run_in $CPATH unshare -n $W pause; PAUSE_B=$!
  echo "$POD_A $PAUSE_A" > $R/pod_pause_pids; echo "$POD_B $PAUSE_B" >> $R/pod_pause_pids
  wait_until 10 own_netns $PAUSE_A || err "pod A sandbox did not start"
  wait_until 10 own_netns $PAUSE_B || err "pod B sandbox did not start"
  # The containers of pods A and B share their sandbox's network namespace, as in Kubernetes.
  NS_A="nsenter -t $PAUSE_A -n"
  NS_B="nsenter -t $PAUSE_B -n"

  add_container cpu systemd burstable $POD_A
  echo "$CPU_MAX" > $CG$CPATH/cpu.max
  run_in $CPATH $NS_A $W burn --threads $BURN_THREADS --seconds $BURN_SECONDS --report $rep/cpu

  add_container memory systemd burstable $POD_A
  run_in $CPATH $NS_A $W alloc --bytes $ALLOC_BYTES --report $rep/memory

  add_container memory-high systemd burstable $POD_A
  echo $HIGH_LIMIT > $CG$CPATH/memory.high
  run_in $CPATH $NS_A $W alloc --bytes $HIGH_ALLOC --report $rep/memory-high

  add_container pids systemd guaranteed $POD_G
  echo $PIDS_MAX > $CG$CPATH/pids.max
  run_in $CPATH $W forker --threads $FORKER_THREADS --report $rep/pids

  add_container oom cgroupfs besteffort $POD_E
  echo $OOM_LIMIT > $CG$CPATH/memory.max
  run_in $CPATH $W oom-loop --bytes $OOM_ALLOC --kills $OOM_KILLS --report $rep/oom

  add_container io cgroupfs burstable $POD_B
  run_in $CPATH $NS_B $W dio --dev /dev/ram0 --bs $DIO_BS --writes $DIO_WRITES --reads $DIO_READS --report $rep/io

  # Dirty page cache on a block-backed file system (ram1), held: no periodic writeback, no
  # expiry and no background flushing before half a GiB, so the writer's pages stay dirty
  # (memory.stat file_dirty) until the guest powers off.
  echo 0 > /proc/sys/vm/dirty_writeback_centisecs
  echo 8640000 > /proc/sys/vm/dirty_expire_centisecs
  echo $((512 << 20)) > /proc/sys/vm/dirty_background_bytes
  echo $((768 << 20)) > /proc/sys/vm/dirty_bytes
  # A writeback context's share of those thresholds follows its recent writeout, and the
  # writer's (a new cgroup on a new disk) has none: background writeback would start at its
  # first page. min_ratio gives ram1's share a floor (sysfs-class-bdi in the kernel's ABI docs).
  echo 90 > /sys/class/bdi/$(cat /sys/block/ram1/dev)/min_ratio || err "bdi min_ratio of ram1"
  # busybox mke2fs makes ext2, which the ext4 driver mounts; ext4 asks for crc32c at every
  # mount (crc32c_generic among the modules).
  mkdir -p /mnt/dirty
  mke2fs /dev/ram1 > /tmp/mke2fs.log 2>&1 || err "mke2fs ram1: $(tail -n 2 /tmp/mke2fs.log | tr '\n' ' ')"
  mount -t ext4 /dev/ram1 /mnt/dirty 2> /tmp/mount.log ||
    err "mount ram1: $(cat /tmp/mount.log) $(dmesg | tail -n 2 | tr '\n' ' ')"
  add_container dirty cgroupfs burstable $POD_B
  run_in $CPATH $NS_B $W dirty --path /mnt/dirty/file --bytes $DIRTY_BYTES --report $rep/dirty

  # Network: pod B's eth0 is one end of a veth pair; the root namespace sends to it.
  $IP link add veth-podb type veth peer name eth0 netns $PAUSE_B || err "veth failed"
  $IP addr add 10.77.0.1/24 dev veth-podb; $IP link set veth-podb up
  nsenter -t $PAUSE_B -n sh -c "$IP addr add 10.77.0.2/24 dev eth0 && $IP link set eth0 up && $IP link set lo up" ||
    err "pod B network setup failed"
  add_container net cgroupfs burstable $POD_B
  run_in $CPATH $NS_B $W recv --port $NET_PORT --ready $rep/net-listening --report $rep/net
  wait_until 20 file_exists $rep/net-listening || err "receiver did not listen"
  make_cgroup /system.slice/netsend
  run_in /system.slice/netsend $W send --host 10.77.0.2 --port $NET_PORT --bytes $NET_BYTES --report $rep/net-sent
  mark workloads_started

  cat > $R/expect <<EXP
cpu_max=$CPU_MAX
burn_threads=$BURN_THREADS
burn_seconds=$BURN_SECONDS
alloc_bytes=$ALLOC_BYTES
high_limit=$HIGH_LIMIT
oom_limit=$OOM_LIMIT
oom_kills=$OOM_KILLS
pids_max=$PIDS_MAX
forker_threads=$FORKER_THREADS
dio_bs=$DIO_BS
dio_writes=$DIO_WRITES
dio_reads=$DIO_READS
dirty_bytes=$DIRTY_BYTES
net_bytes=$NET_BYTES
EXP
}

# Waits until every finite workload has reported (its counters are then final) and the
# memory.high allocator is being throttled.
wait_workloads() {
  local r high_cg deadline=$(( $(cut -d. -f1 /proc/uptime) + 45 ))
  for r in cpu memory pids oom io dirty net net-sent; do
    wait_until $(( deadline - $(cut -d. -f1 /proc/uptime) )) file_exists $R/reports/$r ||
      err "workload $r did not report"
  done
  high_cg=$(awk '$1 == "memory-high" {print $6}' $R/containers)
  wait_until 10 counter_above $CG$high_cg/memory.events high 0 || err "memory.high never hit"
  mark workloads_done
}
