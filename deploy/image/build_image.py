#!/usr/bin/env python3
"""Builds statlet's container image from a built statlet binary, without a container engine.

usage:
  build_image.py --binary PATH --oci-archive OUT.tar [--name REF]...  an OCI image archive
  build_image.py --binary PATH --rootfs DIR                            the image's file tree

The image holds only what the binary runs with: statlet at /usr/bin/statlet, every shared
library the dynamic loader resolves for it on the build host (`ldd`), the libraries it loads
only when a feature asks for them (DLOPENED) with theirs, the loader itself, a
CA bundle (OTLP and API-server TLS) and /etc/passwd + /etc/group naming root and an
unprivileged `statlet` user (uid/gid 10340) for hosts that run it without root. Nothing
else: no shell, no package manager, so a read-only root filesystem is all it needs. Build
on the Debian release the image is meant to match (Debian 12 here and in the Containerfile,
whose last stage is this script's --rootfs output).

The OCI archive (an image layout in a tar, one layer) is what `ctr -n k8s.io images import`,
`podman load` and `skopeo copy oci-archive:…` read (deploy/image/publish.sh pushes or loads
it). Each REF names it; by default the binary's own version and revision (`statlet
--version`): docker.io/library/statlet:VERSION, the tag the manifests name, and
docker.io/library/statlet:VERSION-REVISION, one tag per build, never reused. Deterministic:
every mtime is zero and entries are sorted, so the same inputs give the same digests.
Prints the manifest digest and the names.
"""
import argparse
import gzip
import hashlib
import io
import json
import os
import re
import subprocess
import sys
import tarfile

PASSWD = "root:x:0:0:root:/root:/usr/sbin/nologin\nstatlet:x:10340:10340:statlet:/nonexistent:/usr/sbin/nologin\n"
GROUP = "root:x:0:\nstatlet:x:10340:\n"
CA_BUNDLE = "/etc/ssl/certs/ca-certificates.crt"
DIRS = ["etc", "etc/ssl", "etc/ssl/certs", "proc", "sys", "dev", "run", "tmp", "usr", "usr/bin", "usr/lib",
        "usr/lib64", "var", "var/run"]
SYMLINKS = {"lib": "usr/lib", "lib64": "usr/lib64", "bin": "usr/bin"}
# Libraries statlet loads with dlopen (not in its DT_NEEDED, so ldd does not list them):
# libcurl for OTLP over HTTP (kCurlSoname in exporters/otlp/curl_library.h; checked below
# against the binary's own string).
DLOPENED = ["libcurl.so.4"]


def shared_libraries(binary):
    """(path in the image, path on this host) of every library ldd resolves, and the loader."""
    out = subprocess.run(["ldd", binary], check=True, capture_output=True, text=True).stdout
    libs = []
    for line in out.splitlines():
        line = line.strip()
        m = re.match(r"(\S+) => (\S+) \(0x[0-9a-f]+\)$", line)
        if m:
            soname, path = m.groups()
            # The loader searches the multiarch directory by soname: keep the name, copy the file.
            libs.append((os.path.join("usr/lib", os.path.basename(os.path.dirname(path)), soname), path))
            continue
        m = re.match(r"(/\S+) \(0x[0-9a-f]+\)$", line)
        if m:  # the loader, at the absolute path the binary names (PT_INTERP)
            libs.append((m.group(1).lstrip("/"), m.group(1)))
        elif "not found" in line:
            sys.exit(f"build_image: {binary}: {line}")
    return libs


def dlopened_libraries(binary):
    """(path in the image, path on this host) of each DLOPENED library and of what it links."""
    data = open(binary, "rb").read()
    libs = []
    for soname in DLOPENED:
        if soname.encode() + b"\0" not in data:
            sys.exit(f"build_image: {binary} does not name {soname}: update DLOPENED")
        out = subprocess.run(["ldconfig", "-p"], check=True, capture_output=True, text=True).stdout
        m = re.search(r"^\s*" + re.escape(soname) + r" \(libc6,x86-64\) => (\S+)$", out, re.M)
        if not m:
            sys.exit(f"build_image: {soname} is not installed on this host")
        path = m.group(1)
        libs.append((os.path.join("usr/lib", os.path.basename(os.path.dirname(path)), soname), path))
        libs += shared_libraries(path)
    return libs


def image_files(binary):
    """Every entry of the image: (path, kind, mode, bytes or link target), sorted by path."""
    entries = {d: ("dir", 0o1777 if d == "tmp" else 0o755, None) for d in DIRS}
    for link, target in SYMLINKS.items():
        entries[link] = ("symlink", 0o777, target)
    entries["var/run"] = ("symlink", 0o777, "../run")
    entries["usr/bin/statlet"] = ("file", 0o755, open(binary, "rb").read())
    for in_image, on_host in shared_libraries(binary) + dlopened_libraries(binary):
        # /lib64/ld-linux… and /lib/x86_64-linux-gnu/… go under usr/ (lib, lib64 are links).
        for short, full in (("lib64/", "usr/lib64/"), ("lib/", "usr/lib/")):
            if in_image.startswith(short):
                in_image = full + in_image[len(short):]
        parent = os.path.dirname(in_image)
        while parent and parent not in entries:
            entries[parent] = ("dir", 0o755, None)
            parent = os.path.dirname(parent)
        entries[in_image] = ("file", 0o755, open(os.path.realpath(on_host), "rb").read())
    entries["etc/passwd"] = ("file", 0o644, PASSWD.encode())
    entries["etc/group"] = ("file", 0o644, GROUP.encode())
    if os.path.exists(CA_BUNDLE):
        entries[CA_BUNDLE.lstrip("/")] = ("file", 0o644, open(CA_BUNDLE, "rb").read())
    return sorted(entries.items())


def write_rootfs(files, root):
    os.makedirs(root, exist_ok=True)
    for path, (kind, mode, data) in files:
        dest = os.path.join(root, path)
        if kind == "dir":
            os.makedirs(dest, exist_ok=True)
            os.chmod(dest, mode)
        elif kind == "symlink":
            if os.path.lexists(dest):
                os.remove(dest)
            os.symlink(data, dest)
        else:
            with open(dest, "wb") as f:
                f.write(data)
            os.chmod(dest, mode)


def layer_tar(files):
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as t:
        for path, (kind, mode, data) in files:
            info = tarfile.TarInfo(path)
            info.mode, info.mtime, info.uid, info.gid = mode, 0, 0, 0
            if kind == "dir":
                info.type = tarfile.DIRTYPE
                t.addfile(info)
            elif kind == "symlink":
                info.type, info.linkname = tarfile.SYMTYPE, data
                t.addfile(info)
            else:
                info.size = len(data)
                t.addfile(info, io.BytesIO(data))
    return raw.getvalue()


def version_of(binary):
    """(version, revision) as `statlet --version` prints them."""
    out = subprocess.run([binary, "--version"], check=True, capture_output=True, text=True).stdout
    m = re.fullmatch(r"statlet (\S+) \(revision (\S+)\)\s*", out)
    if not m:
        sys.exit(f"build_image: {binary} --version printed {out!r}")
    return m.groups()


def default_names(version, revision):
    """statlet:VERSION and statlet:VERSION-REVISION."""
    names = [f"docker.io/library/statlet:{version}"]
    if revision != "unknown":
        # A tag is [A-Za-z0-9_][A-Za-z0-9_.-]{0,127} (OCI distribution spec).
        names.append(f"docker.io/library/statlet:{version}-" + re.sub(r"[^A-Za-z0-9_.-]", "_", revision))
    return names


def write_oci_archive(files, out, names, version, revision):
    blobs = {}

    def blob(data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"digest": digest, "size": len(data)}

    raw = layer_tar(files)
    layer = blob(gzip.compress(raw, compresslevel=6, mtime=0))
    config = {
        "created": "1970-01-01T00:00:00Z", "architecture": "amd64", "os": "linux",
        "config": {
            "User": "0:0",
            "Env": ["PATH=/usr/bin"],
            "Entrypoint": ["/usr/bin/statlet"],
            "ExposedPorts": {"10340/tcp": {}},
            "WorkingDir": "/",
            "Labels": {"org.opencontainers.image.title": "statlet",
                       "org.opencontainers.image.version": version,
                       "org.opencontainers.image.revision": revision,
                       "org.opencontainers.image.description": "container and cgroup metrics for every node"},
        },
        "rootfs": {"type": "layers", "diff_ids": ["sha256:" + hashlib.sha256(raw).hexdigest()]},
        "history": [{"created": "1970-01-01T00:00:00Z", "created_by": "deploy/image/build_image.py"}],
    }
    config_desc = blob(json.dumps(config, sort_keys=True).encode())
    manifest = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_desc},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", **layer}],
    }
    manifest_desc = blob(json.dumps(manifest, sort_keys=True).encode())
    # One entry per name, all the same manifest: importers name the image by each.
    index = {
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{
            "mediaType": "application/vnd.oci.image.manifest.v1+json", **manifest_desc,
            "platform": {"architecture": "amd64", "os": "linux"},
            "annotations": {"io.containerd.image.name": name,
                            "org.opencontainers.image.ref.name": name.rsplit(":", 1)[-1]},
        } for name in names],
    }
    tmp = out + ".tmp"
    with tarfile.open(tmp, mode="w", format=tarfile.PAX_FORMAT) as t:
        def add(path, data):
            info = tarfile.TarInfo(path)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            t.addfile(info, io.BytesIO(data))
        add("oci-layout", json.dumps({"imageLayoutVersion": "1.0.0"}).encode())
        add("index.json", json.dumps(index, sort_keys=True).encode())
        for digest in sorted(blobs):
            add("blobs/sha256/" + digest.split(":", 1)[1], blobs[digest])
    os.replace(tmp, out)
    return manifest_desc["digest"]


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--binary", required=True)
    p.add_argument("--oci-archive")
    p.add_argument("--rootfs")
    p.add_argument("--name", action="append", help="repeatable; default: statlet:VERSION and statlet:VERSION-REVISION")
    a = p.parse_args()
    if bool(a.oci_archive) == bool(a.rootfs):
        p.error("give one of --oci-archive and --rootfs")
    files = image_files(a.binary)
    if a.rootfs:
        write_rootfs(files, a.rootfs)
    else:
        version, revision = version_of(a.binary)
        names = a.name or default_names(version, revision)
        print(write_oci_archive(files, a.oci_archive, names, version, revision))
        for name in names:
            print(name)


if __name__ == "__main__":
    main()
