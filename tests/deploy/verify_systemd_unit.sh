#!/usr/bin/env bash
# deploy/systemd/statlet.service passes systemd's own checks (systemd-analyze verify: known
# directives, valid capability names, an executable ExecStart), with ExecStart pointed at
# this build's binary, and its options are ones this statlet accepts (--help lists them).
#   verify_systemd_unit.sh UNIT STATLET_BINARY
set -euo pipefail
unit="$1" binary="$2"
dir="$(mktemp -d)"
trap 'rm -rf "$dir"' EXIT
sed "s|/usr/local/bin/statlet|$binary|" "$unit" > "$dir/statlet.service"
# verify only warns about unknown keys: any output is a failure.
out="$(systemd-analyze verify --man=no "$dir/statlet.service" 2>&1)" || { echo "$out" >&2; exit 1; }
[ -z "$out" ] || { echo "$out" >&2; exit 1; }
# Capability names systemd would ignore with a log line, checked against the kernel's list.
known="$(setpriv --list-caps)"
for cap in $(grep -E '^(AmbientCapabilities|CapabilityBoundingSet)=' "$unit" | cut -d= -f2-); do
  grep -qx "$(tr 'A-Z' 'a-z' <<<"${cap#CAP_}")" <<<"$known" || { echo "unknown capability $cap" >&2; exit 1; }
done
help="$("$binary" --help 2>&1)"
for flag in $(grep '^ExecStart=' "$unit" | grep -o -- '--[a-z.-]*'); do
  grep -q -- "$flag" <<<"$help" || { echo "ExecStart passes $flag, which statlet does not know" >&2; exit 1; }
done
echo "statlet.service verifies"
