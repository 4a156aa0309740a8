#!/bin/sh
# Publishes statlet's image archive (cmake --build build/release --target statlet_image
# writes build/release/statlet-image.tar) to where a cluster's nodes take it from.
#
#   publish.sh push ARCHIVE REGISTRY/REPOSITORY [skopeo copy options...]
#       Pushes every tag of the archive (VERSION and VERSION-REVISION, see build_image.py)
#       with skopeo (Debian: apt-get install skopeo), then prints the `images:` entry that
#       points deploy/kubernetes at what it pushed, pinned by digest. E.g.
#         deploy/image/publish.sh push build/release/statlet-image.tar registry.example:5000/statlet
#       A plain-HTTP registry takes --dest-tls-verify=false; credentials come from
#       `skopeo login REGISTRY` or --dest-creds USER:PASSWORD.
#
#   publish.sh load ARCHIVE [containerd|k3s|cri-o]
#       Loads the archive into this node's runtime, for nodes that pull from no registry
#       (run it on each node, as root); the pods then find statlet:VERSION there, as the
#       DaemonSet's `imagePullPolicy: IfNotPresent` asks. containerd (the default) is
#       reached at $CONTAINERD_ADDRESS, else /run/containerd/containerd.sock.
#
# tests/deploy/image_publish_test.py pushes to Debian's docker-registry on loopback and
# reads the image back; tests/e2e loads it into containerd and runs the DaemonSet's pod.
set -eu

usage() {
  sed -n '2,20s/^# \{0,1\}//p' "$0" >&2
  exit 2
}

# The tags the archive's index names (org.opencontainers.image.ref.name), one per line.
tags() {
  tar -xOf "$1" index.json | tr '{},' '\n\n\n' |
    sed -n 's/^ *"org.opencontainers.image.ref.name": *"\([^"]*\)".*/\1/p'
}

[ $# -ge 2 ] || usage
command=$1 archive=$2
shift 2
[ -f "$archive" ] || { echo "publish.sh: $archive: no such archive (cmake --build BUILD --target statlet_image writes it)" >&2; exit 1; }
all_tags=$(tags "$archive")
[ -n "$all_tags" ] || { echo "publish.sh: $archive names no tag in its index.json: not an archive of build_image.py" >&2; exit 1; }

case $command in
push)
  [ $# -ge 1 ] || usage
  repository=$1
  shift
  case $repository in
  */*) ;;
  *) echo "publish.sh: $repository: give REGISTRY/REPOSITORY, e.g. registry.example:5000/statlet" >&2; exit 2 ;;
  esac
  command -v skopeo >/dev/null || { echo "publish.sh: skopeo is not installed (apt-get install skopeo)" >&2; exit 1; }
  digestfile=$(mktemp)
  trap 'rm -f "$digestfile"' EXIT
  newest=
  for tag in $all_tags; do
    echo "pushing $repository:$tag" >&2
    skopeo --insecure-policy copy --quiet --digestfile "$digestfile" "$@" \
      "oci-archive:$archive:$tag" "docker://$repository:$tag"
    newest=$tag
  done
  # The last tag is the build's own (VERSION-REVISION when the build knew its revision).
  cat <<EOF
pushed $(echo $all_tags | wc -w) tags of $(cat "$digestfile"). Point deploy/kubernetes/kustomization.yaml at it:
images:
  - name: statlet
    newName: $repository
    newTag: "$newest"
    digest: $(cat "$digestfile")
or: (cd deploy/kubernetes && kustomize edit set image statlet=$repository:$newest@$(cat "$digestfile"))
EOF
  ;;
load)
  runtime=${1:-containerd}
  case $runtime in
  containerd) ctr -n k8s.io images import "$archive" ;;
  k3s) k3s ctr -n k8s.io images import "$archive" ;;
  cri-o)
    for tag in $all_tags; do
      skopeo --insecure-policy copy --quiet "oci-archive:$archive:$tag" \
        "containers-storage:docker.io/library/statlet:$tag"
    done
    ;;
  *) echo "publish.sh: runtime $runtime: expected containerd, k3s or cri-o" >&2; exit 2 ;;
  esac
  echo "loaded statlet:$(echo $all_tags | tr ' ' ',') into $runtime" >&2
  ;;
*) usage ;;
esac
