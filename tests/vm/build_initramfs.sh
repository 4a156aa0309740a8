#!/usr/bin/env bash
# Builds the guest's initramfs: busybox-static, iproute2's ip and tc, the given binaries
# (in /usr/local/bin) with every library ldd names, the kernel's modules, and the guest
# scripts (GUEST_DIR/init becomes /init, the rest goes to /guest). With statlet_vm_cri_pod
# among the binaries, Debian's containerd, its runc shim, runc and ctr go to /usr/bin with
# their libraries too (guest/runtime_runs.sh), and each --data FILE to /data.
#
# usage: build_initramfs.sh OUT KERNEL_DIR GUEST_DIR [--data FILE]... BINARY...
# OUT is rebuilt only when a hash over every input file changes.
set -euo pipefail
out=$1 kernel_dir=$2 guest=$3; shift 3
data=()
while [ "${1:-}" = --data ]; do data+=("$2"); shift 2; done
bins=("$@")
system_bins=(/bin/busybox /usr/sbin/ip /usr/sbin/tc)
runtime_bins=()
for b in "${bins[@]}"; do
  [ "$(basename "$b")" = statlet_vm_cri_pod ] &&
    runtime_bins=(/usr/bin/containerd /usr/bin/containerd-shim-runc-v2 /usr/sbin/runc /usr/bin/ctr)
done

inputs=("$0" "$guest"/* "${bins[@]}" "${system_bins[@]}" ${runtime_bins[@]+"${runtime_bins[@]}"}
  ${data[@]+"${data[@]}"} "$kernel_dir"/mods/*)
key=$(sha256sum "${inputs[@]}" | sha256sum | cut -c1-32)
if [ -f "$out" ] && [ "$(cat "$out.key" 2>/dev/null)" = "$key" ]; then
  echo "initramfs: cached ($key)" >&2; exit 0
fi

root=$(mktemp -d "$(dirname "$out")/initramfs.XXXXXX")
trap 'rm -rf "$root"' EXIT
mkdir -p "$root"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,lib64,proc,sys,dev,tmp,run,mods,guest,data,etc}

copy_with_libs() {  # copy $1 to $root$2 and the shared libraries it needs at their paths
  local src=$1 dst=$2 lib
  install -D -m 0755 "$src" "$root$dst"
  # "libfoo.so => /path (addr)" and "/lib64/ld-linux-x86-64.so.2 (addr)"
  for lib in $(ldd "$src" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
    [ -e "$root$lib" ] || install -D -m 0755 "$(readlink -f "$lib")" "$root$lib"
  done
}

install -m 0755 /bin/busybox "$root/bin/busybox"
copy_with_libs /usr/sbin/ip /usr/sbin/ip
copy_with_libs /usr/sbin/tc /usr/sbin/tc
for b in "${bins[@]}"; do copy_with_libs "$b" "/usr/local/bin/$(basename "$b")"; done
for b in ${runtime_bins[@]+"${runtime_bins[@]}"}; do copy_with_libs "$b" "/usr/bin/$(basename "$b")"; done
for f in ${data[@]+"${data[@]}"}; do cp "$f" "$root/data/"; done
[ -e "$root/lib64/ld-linux-x86-64.so.2" ] || install -D -m 0755 "$(readlink -f /lib64/ld-linux-x86-64.so.2)" "$root/lib64/ld-linux-x86-64.so.2"
cp "$kernel_dir"/mods/* "$root/mods/"
install -m 0755 "$guest/init" "$root/init"
cp "$guest"/*.sh "$root/guest/"
[ "$(id -u)" = 0 ] && mknod -m 600 "$root/dev/console" c 5 1

# Uncompressed: the guest unpacks it without spending emulated CPU on gunzip.
( cd "$root" && find . -print0 | LC_ALL=C sort -z | cpio --null -o -H newc --quiet ) > "$out.tmp"
mv "$out.tmp" "$out"
echo "$key" > "$out.key"
echo "initramfs: built $(du -h "$out" | cut -f1) ($key)" >&2
