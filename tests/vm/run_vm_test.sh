#!/usr/bin/env bash
# The VM stage: boots Debian's cgroup-v2 kernel under qemu with an initramfs holding
# statlet, the workloads and guest/init; one boot runs every workload and statlet run,
# the guest prints its results as one block on the serial console, and check_results.py
# asserts on them here on the host.
#
# usage: run_vm_test.sh --out DIR BINARY...
#   BINARY    copied into the guest's /usr/local/bin (statlet, statlet_vm_workload, ...)
# env: STATLET_VM_CACHE (default $XDG_CACHE_HOME/statlet-vm) keeps the kernel between runs;
#      STATLET_VM_ACCEL=tcg|kvm forces one accelerator.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=""
[ "${1:-}" = --out ] && { out=$2; shift 2; }
[ -n "$out" ] && [ $# -gt 0 ] || { echo "usage: $0 --out DIR BINARY..." >&2; exit 2; }
bins=("$@")
cache=${STATLET_VM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/statlet-vm}
mkdir -p "$cache" "$out"
elapsed() { echo "$(( $(date +%s%N) / 1000000 - start_ms ))"; }
start_ms=$(( $(date +%s%N) / 1000000 ))

kernel=$("$here/fetch_kernel.sh" "$cache" veth brd sch_netem crc32c_generic ext4)
# The guest's containerd imports the e2e stage's busybox image (deterministic: the same
# bytes each run, so the initramfs stays cached).
data=()
for b in "${bins[@]}"; do
  if [ "$(basename "$b")" = statlet_vm_cri_pod ]; then
    /usr/bin/python3 "$here/../e2e/make_oci_image.py" "$out/vm-image.tar" localhost/statlet/busybox:1 > /dev/null
    data=(--data "$out/vm-image.tar")
  fi
done
"$here/build_initramfs.sh" "$out/initramfs.cpio" "$kernel" "$here/guest" ${data[@]+"${data[@]}"} "${bins[@]}"
prep_ms=$(elapsed)
echo "vm: kernel $(cat "$kernel/package"), preparation ${prep_ms} ms"

BEGIN_MARK='=====STATLET-VM-RESULTS-BEGIN'
END_MARK='=====STATLET-VM-RESULTS-END====='

qemu_pid=""
stop_qemu() { [ -n "$qemu_pid" ] && kill "$qemu_pid" 2>/dev/null; wait "$qemu_pid" 2>/dev/null; qemu_pid=""; }
trap stop_qemu EXIT

# boot ACCEL FIRST_OUTPUT_S STALL_S TOTAL_S: 0 when the console holds a complete result
# block. Gives up when the guest prints nothing within FIRST_OUTPUT_S, goes silent for
# STALL_S, or runs past TOTAL_S.
boot() {
  local accel=$1 first=$2 stall=$3 total=$4 console="$out/console-$1.log"
  local t0 last_size=0 last_change size now
  : > "$console"
  qemu-system-x86_64 -accel "$accel" -m 1024 -smp 2 -nodefaults -display none -nic none \
    -no-reboot -serial "file:$console" -kernel "$kernel/vmlinuz" -initrd "$out/initramfs.cpio" \
    -append 'console=ttyS0 psi=1 quiet loglevel=1 panic=-1' 2> "$out/qemu-$accel.err" &
  qemu_pid=$!
  t0=$(date +%s); last_change=$t0
  while kill -0 "$qemu_pid" 2>/dev/null; do
    sleep 0.2
    grep -q "^$END_MARK" "$console" && break
    now=$(date +%s); size=$(stat -c %s "$console")
    if [ "$size" != "$last_size" ]; then last_size=$size; last_change=$now; fi
    if [ "$size" = 0 ] && [ $((now - t0)) -ge "$first" ]; then
      echo "vm: $accel: no console output within ${first}s"; stop_qemu; return 1
    fi
    if [ $((now - last_change)) -ge "$stall" ] || [ $((now - t0)) -ge "$total" ]; then
      echo "vm: $accel: guest stalled or ran too long, last lines:"; tail -n 5 "$console"
      stop_qemu; return 1
    fi
  done
  wait "$qemu_pid" 2>/dev/null || true
  qemu_pid=""
  grep -q "^$END_MARK" "$console" || { echo "vm: $accel: qemu ended without results:"; tail -n 5 "$console"; cat "$out/qemu-$accel.err"; return 1; }
}

accel=""
if [ "${STATLET_VM_ACCEL:-}" != tcg ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
  echo "vm: trying KVM"
  boot kvm 8 30 150 && accel=kvm
fi
if [ -z "$accel" ] && [ "${STATLET_VM_ACCEL:-}" != kvm ]; then
  echo "vm: using TCG"
  boot_start=$(elapsed)
  boot tcg 30 150 360 && accel=tcg
fi
[ -n "$accel" ] || { echo "vm: FAIL: no accelerator produced results"; exit 1; }
boot_ms=$(( $(elapsed) - ${boot_start:-$prep_ms} ))
console="$out/console-$accel.log"
grep '^vm\[' "$console" || true

# Decode the block: base64 lines between the markers, checked against the guest's md5.
rm -rf "$out/results"; mkdir -p "$out/results"
want_md5=$(sed -n "s/^$BEGIN_MARK md5=\([0-9a-f]*\)=*\r*$/\1/p" "$console")
sed -n "/^$BEGIN_MARK/,/^$END_MARK/p" "$console" | sed '1d;$d' | tr -d '\r' | base64 -d > "$out/results.tgz"
got_md5=$(md5sum < "$out/results.tgz" | cut -d' ' -f1)
[ "$want_md5" = "$got_md5" ] || { echo "vm: FAIL: result block corrupted (md5 $got_md5, guest said $want_md5)"; exit 1; }
tar xzf "$out/results.tgz" -C "$out/results"

echo "vm: accelerator=$accel boot_to_result_ms=$boot_ms total_ms=$(elapsed)"
exec /usr/bin/python3 -B "$here/check_results.py" "$out/results" --accel "$accel" --boot-ms "$boot_ms"
