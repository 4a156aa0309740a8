#!/usr/bin/env bash
# Fetches Debian's cgroup-v2 kernel (the linux-image-6.1.*-amd64 that linux-image-amd64
# depends on) without installing it, and keeps only what the VM stage boots: vmlinuz and
# the modules it insmods (with their dependencies, in load order).
#
# usage: fetch_kernel.sh CACHE_DIR MODULE...   prints the kernel directory on stdout.
# The directory is keyed by package name and version, so a cached one is reused offline.
set -euo pipefail
cache=$1; shift
modules=("$@")

meta_pkg=linux-image-amd64
image_pkg=$(apt-cache depends "$meta_pkg" 2>/dev/null | awk '/Depends: linux-image-[0-9]/ {print $2; exit}')
[ -n "$image_pkg" ] || { echo "fetch_kernel: apt-cache knows no $meta_pkg (run apt-get update)" >&2; exit 1; }
version=$(apt-cache show "$image_pkg" | awk '/^Version:/ {print $2; exit}')
out="$cache/kernel-${image_pkg}_${version}"
want_key="${modules[*]}"
# A cached kernel with every wanted module (and maybe more) serves as it is.
if [ -f "$out/complete" ]; then
  have=" $(cat "$out/complete") " missing=0
  for m in "${modules[@]}"; do case "$have" in *" $m "*) ;; *) missing=1 ;; esac; done
  [ "$missing" = 0 ] && { echo "$out"; exit 0; }
fi

work=$(mktemp -d "${cache}/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
( cd "$work" && apt-get download "$image_pkg" >&2 2> >(grep -v 'unsandboxed' >&2) )
dpkg -x "$work"/"${image_pkg}"_*.deb "$work/root"
moddir=$(echo "$work"/root/lib/modules/*)

rm -rf "$out"; mkdir -p "$out/mods"
cp "$work"/root/boot/vmlinuz-* "$out/vmlinuz"
basename "$moddir" > "$out/release"

# depends= in a module's .modinfo section names what must be loaded first.
module_depends() {
  objcopy -O binary --only-section=.modinfo "$1" /dev/stdout | tr '\0' '\n' |
    sed -n 's/^depends=//p' | tr ',' ' '
}
find_module() {  # module names use '_' where file names may use '-'
  local alt=${1//_/-}
  find "$moddir" \( -name "$1.ko" -o -name "$1.ko.xz" -o -name "$alt.ko" -o -name "$alt.ko.xz" \) | head -n1
}
declare -A loaded=()
load_order=()
add_module() {
  local name=$1 file dep
  [ -n "${loaded[$name]:-}" ] && return 0
  file=$(find_module "$name")
  [ -n "$file" ] || { echo "fetch_kernel: module $name not in $image_pkg" >&2; exit 1; }
  if [[ $file == *.xz ]]; then xz -dc "$file" > "$out/mods/$name.ko"; else cp "$file" "$out/mods/$name.ko"; fi
  loaded[$name]=1
  for dep in $(module_depends "$out/mods/$name.ko"); do add_module "$dep"; done
  load_order+=("$name")
}
for m in "${modules[@]}"; do add_module "$m"; done
printf '%s\n' "${load_order[@]}" > "$out/mods/load-order"
echo "$image_pkg $version" > "$out/package"
echo "$want_key" > "$out/complete"
echo "$out"
