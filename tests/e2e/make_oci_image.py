#!/usr/bin/env python3
"""Builds an OCI image tarball from the host's busybox-static, offline.

usage: make_oci_image.py OUT.tar IMAGE_NAME [RANDOM_MB SEED]

The first layer holds /bin/busybox with a symlink per applet, /etc/passwd and /etc/group
and the usual empty directories; the image runs `sleep` forever by default, so the same
image serves as the pod sandbox image. With RANDOM_MB, a second layer holds one file of
that many MiB of pseudo-random bytes drawn from SEED (incompressible, so the layer's size
on the wire is about RANDOM_MB: image pull tests use it to make pulls take seconds).
Deterministic: every mtime is zero and the same SEED gives the same bytes. Prints the
manifest digest; OUT.tar.json describes the image (manifest, config, layer digests and
sizes) for tests that follow its pull."""
import gzip
import hashlib
import io
import json
import random
import subprocess
import sys
import tarfile

BUSYBOX = "/bin/busybox"


def tar_entry(t, name, kind=tarfile.REGTYPE, mode=0o644, data=None, link=None):
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.mtime = kind, mode, 0
    if link is not None:
        info.linkname = link
    if data is not None:
        info.size = len(data)
        t.addfile(info, io.BytesIO(data))
    else:
        t.addfile(info)


def rootfs_layer():
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for d in ("bin", "dev", "etc", "proc", "root", "run", "sys", "tmp", "var"):
            tar_entry(t, d, tarfile.DIRTYPE, 0o1777 if d == "tmp" else 0o755)
        with open(BUSYBOX, "rb") as f:
            tar_entry(t, "bin/busybox", mode=0o755, data=f.read())
        applets = subprocess.run([BUSYBOX, "--list"], check=True, capture_output=True, text=True).stdout.split()
        for applet in sorted(set(applets) - {"busybox"}):
            tar_entry(t, "bin/" + applet, tarfile.SYMTYPE, 0o777, link="busybox")
        tar_entry(t, "etc/passwd", data=b"root:x:0:0:root:/root:/bin/sh\n")
        tar_entry(t, "etc/group", data=b"root:x:0:\n")
    return raw.getvalue()


def random_layer(mib, seed):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        tar_entry(t, "random.bin", data=random.Random(seed).randbytes(mib << 20))
    return raw.getvalue()


def main():
    if len(sys.argv) not in (3, 5):
        sys.exit("usage: make_oci_image.py OUT.tar IMAGE_NAME [RANDOM_MB SEED]")
    out, name = sys.argv[1], sys.argv[2]
    blobs = {}

    def blob(data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return digest, len(data)

    raws = [(rootfs_layer(), 6)]
    if len(sys.argv) == 5:
        # Level 1: random bytes do not compress, a higher level only costs time.
        raws.append((random_layer(int(sys.argv[3]), sys.argv[4]), 1))
    layers = []
    for raw, level in raws:
        digest, size = blob(gzip.compress(raw, compresslevel=level, mtime=0))
        layers.append({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": digest, "size": size})
    config = {
        "architecture": "amd64", "os": "linux", "created": "1970-01-01T00:00:00Z",
        "config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sleep", "2147483647"], "WorkingDir": "/"},
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest() for raw, _ in raws]},
    }
    config_digest, config_size = blob(json.dumps(config, sort_keys=True).encode())
    manifest = {
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", "digest": config_digest,
                   "size": config_size},
        "layers": layers,
    }
    manifest_digest, manifest_size = blob(json.dumps(manifest, sort_keys=True).encode())
    index = {"schemaVersion": 2, "manifests": [{
        "mediaType": "application/vnd.oci.image.manifest.v1+json", "digest": manifest_digest,
        "size": manifest_size, "platform": {"architecture": "amd64", "os": "linux"},
        "annotations": {"io.containerd.image.name": name,
                        "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]}}]}
    with tarfile.open(out, "w") as t:
        tar_entry(t, "oci-layout", data=json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        tar_entry(t, "index.json", data=json.dumps(index).encode())
        tar_entry(t, "blobs", tarfile.DIRTYPE, 0o755)
        tar_entry(t, "blobs/sha256", tarfile.DIRTYPE, 0o755)
        for digest, data in blobs.items():
            tar_entry(t, "blobs/sha256/" + digest.split(":", 1)[1], data=data)
    with open(out + ".json", "w") as f:
        json.dump({"manifest": manifest_digest, "config": config_digest,
                   "layers": [{"digest": l["digest"], "size": l["size"]} for l in layers]}, f)
    print(manifest_digest)


if __name__ == "__main__":
    main()
