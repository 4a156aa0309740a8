# Helpers shared by the guest scripts (busybox sh).

R=/results           # everything the host asserts on; packed onto the console at the end
CG=/sys/fs/cgroup
W=statlet_vm_workload
# busybox-static sh runs its own applets before PATH: iproute2 by full path (veth needs it).
IP=/usr/sbin/ip

now() { cut -d' ' -f1 /proc/uptime; }
log() { echo "vm[$(now)]: $*"; echo "$(now) $*" >> $R/init.log; }
err() { log "ERROR: $*"; echo "$*" >> $R/errors; }
mark() { echo "$1=$(now)" >> $R/times; }

# wait_until SECONDS CMD...: poll CMD every 0.1 s until it succeeds or the deadline passes.
wait_until() {
  local limit=$1; shift
  local deadline=$(( $(cut -d. -f1 /proc/uptime) + limit ))
  while ! "$@" 2>/dev/null; do
    [ "$(cut -d. -f1 /proc/uptime)" -ge "$deadline" ] && return 1
    sleep 0.1
  done
}
file_exists() { [ -f "$1" ]; }
counter_above() { [ "$(sed -n "s/^$2 //p" "$1")" -gt "$3" ]; }  # FILE KEY VALUE

# enable_controllers DIR: every controller DIR has, for its children.
enable_controllers() {
  local c
  for c in $(cat "$1/cgroup.controllers"); do echo "+$c" > "$1/cgroup.subtree_control"; done
}

# make_cgroup RELPATH: creates it and its parents, enabling controllers on the way down.
make_cgroup() {
  local path=$CG part
  for part in $(echo "$1" | tr '/' ' '); do
    [ -d "$path/$part" ] || mkdir "$path/$part"
    enable_controllers "$path"
    path=$path/$part
  done
}

# run_in RELPATH CMD...: starts CMD in the cgroup (moved before exec) in the background;
# the new process's pid is in $!.
run_in() {
  local cg=$1; shift
  sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$CG$cg" "$@" &
}

CG_FILES="cgroup.procs cgroup.threads cpu.stat cpu.max cpu.weight cpu.pressure
  memory.current memory.peak memory.stat memory.events memory.events.local memory.high
  memory.max memory.min memory.low memory.swap.current memory.swap.max memory.pressure
  pids.current pids.max pids.events io.stat io.pressure"

# dump_cgroups OUT RELPATH...: every file of every cgroup as "path:line" in one grep, so
# one phase's readings are taken within a single process's run; inodes to OUT.inodes.
dump_cgroups() {
  local out=$1 p f files=""; shift
  for p in "$@"; do for f in $CG_FILES; do files="$files $CG$p/$f"; done; done
  grep -H '' $files > "$out" 2>/dev/null
  for p in "$@"; do echo "$(stat -c %i "$CG$p") $p"; done > "$out.inodes"
}
