#!/usr/bin/env bash
# Fetches one of containerd's service definitions as Debian ships it (the package
# golang-github-containerd-containerd-dev, the same version as the containerd package),
# without installing it, and prints the path of a copy with the gogoproto options removed
# (they change generated Go code only, and protoc would need gogo.proto for them). The
# images service imports containerd's descriptor type: its copy sits beside it as
# descriptor.proto, and the import names it so.
#
# usage: upstream_content_proto.sh CACHE_DIR [SERVICE]   (SERVICE: content (default), leases, images)
# The copies are keyed by package version, so a cached one is reused offline.
set -euo pipefail
cache=$1
service=${2:-content}
pkg=golang-github-containerd-containerd-dev
version=$(apt-cache show "$pkg" 2>/dev/null | awk '/^Version:/ && !v {v = $2} END {print v}')
[ -n "$version" ] || { echo "upstream_content_proto: apt-cache knows no $pkg (run apt-get update)" >&2; exit 1; }
out="$cache/containerd-content-$version"
if [ -f "$out/$service.proto" ]; then echo "$out/$service.proto"; exit 0; fi
mkdir -p "$cache"
work=$(mktemp -d "$cache/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
( cd "$work" && apt-get download "$pkg" >&2 2> >(grep -v 'unsandboxed' >&2) )
dpkg -x "$work"/"$pkg"_*.deb "$work/root"
strip() {
  sed -E -e '/^import weak "gogoproto\/gogo.proto";/d' -e '/^\s*option \(gogoproto\./d' \
         -e 's/\s*\[\(gogoproto[^]]*\]//g' \
         -e 's#^import "github.com/containerd/containerd/api/types/descriptor.proto";#import "descriptor.proto";#' "$1"
}
src=$(find "$work/root" -path "*/api/services/$service/v1/$service.proto" | head -n1)
[ -n "$src" ] || { echo "upstream_content_proto: no $service.proto in $pkg $version" >&2; exit 1; }
mkdir -p "$out"
if [ "$service" = images ]; then
  d=$(find "$work/root" -path '*/api/types/descriptor.proto' | head -n1)
  [ -n "$d" ] || { echo "upstream_content_proto: no descriptor.proto in $pkg $version" >&2; exit 1; }
  strip "$d" > "$out/descriptor.proto.tmp" && mv "$out/descriptor.proto.tmp" "$out/descriptor.proto"
fi
strip "$src" > "$out/$service.proto.tmp" && mv "$out/$service.proto.tmp" "$out/$service.proto"
echo "$out/$service.proto"
