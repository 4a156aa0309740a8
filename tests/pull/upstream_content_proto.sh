#!/usr/bin/env bash
# Fetches containerd's content service definition as Debian ships it (the package
# golang-github-containerd-containerd-dev, the same version as the containerd package),
# without installing it, and prints the path of a copy with the gogoproto options removed
# (they change generated Go code only, and protoc would need gogo.proto for them).
#
# usage: upstream_content_proto.sh CACHE_DIR
# The copy is keyed by package version, so a cached one is reused offline.
set -euo pipefail
cache=$1
pkg=golang-github-containerd-containerd-dev
version=$(apt-cache show "$pkg" 2>/dev/null | awk '/^Version:/ && !v {v = $2} END {print v}')
[ -n "$version" ] || { echo "upstream_content_proto: apt-cache knows no $pkg (run apt-get update)" >&2; exit 1; }
out="$cache/containerd-content-$version"
if [ -f "$out/content.proto" ]; then echo "$out/content.proto"; exit 0; fi
mkdir -p "$cache"
work=$(mktemp -d "$cache/fetch.XXXXXX")
trap 'rm -rf "$work"' EXIT
( cd "$work" && apt-get download "$pkg" >&2 2> >(grep -v 'unsandboxed' >&2) )
dpkg -x "$work"/"$pkg"_*.deb "$work/root"
src=$(find "$work/root" -path '*/api/services/content/v1/content.proto' | head -n1)
[ -n "$src" ] || { echo "upstream_content_proto: no content.proto in $pkg $version" >&2; exit 1; }
mkdir -p "$out.tmp"
sed -E -e '/^import weak "gogoproto\/gogo.proto";/d' -e '/^\s*option \(gogoproto\./d' \
       -e 's/\s*\[\(gogoproto[^]]*\]//g' "$src" > "$out.tmp/content.proto"
rm -rf "$out"; mv "$out.tmp" "$out"
echo "$out/content.proto"
