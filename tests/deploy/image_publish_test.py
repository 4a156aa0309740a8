#!/usr/bin/python3
"""deploy/image/publish.sh pushes what build_image.py writes to a registry given on its
command line: Debian's docker-registry on loopback here. The image arrives under both tags
(VERSION, VERSION-REVISION of `statlet --version`), as the same manifest digest the archive
holds, with its entrypoint and version labels; the `images:` entry it prints points
deploy/kubernetes' DaemonSet at exactly that (rendered with `kubectl kustomize` where kubectl
is installed). A wrong command line says what is expected.

usage: image_publish_test.py STATLET_BINARY REPO_ROOT"""
import json
import os
import re
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

binary, root = sys.argv[1], sys.argv[2]
publish = os.path.join(root, "deploy/image/publish.sh")
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url, accept=None):
    req = urllib.request.Request(url, headers={"Accept": accept} if accept else {})
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.read(), dict(r.headers)


version, revision = re.fullmatch(r"statlet (\S+) \(revision (\S+)\)\s*",
                                 subprocess.run([binary, "--version"], capture_output=True, text=True,
                                                check=True).stdout).groups()
tmp = tempfile.mkdtemp(prefix="statlet-publish-")
registry = None
try:
    archive = os.path.join(tmp, "statlet-image.tar")
    built = subprocess.run(["/usr/bin/python3", os.path.join(root, "deploy/image/build_image.py"), "--binary", binary,
                            "--oci-archive", archive], capture_output=True, text=True, check=True).stdout.split()
    digest = built[0]
    want_tags = [version] + ([f"{version}-{revision}"] if revision != "unknown" else [])
    check(built[1:] == [f"docker.io/library/statlet:{t}" for t in want_tags], f"build_image.py named {built[1:]}")

    port = free_port()
    with open(os.path.join(tmp, "registry.yml"), "w") as f:
        f.write(f"version: 0.1\nstorage:\n  filesystem:\n    rootdirectory: {tmp}/registry\n"
                f"http:\n  addr: 127.0.0.1:{port}\n  secret: statlet-test\n")
    registry = subprocess.Popen(["docker-registry", "serve", os.path.join(tmp, "registry.yml")],
                                stdout=open(os.path.join(tmp, "registry.log"), "w"), stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 20
    while True:
        try:
            get(base + "/v2/")
            break
        except OSError:
            if time.monotonic() > deadline or registry.poll() is not None:
                sys.exit("docker-registry did not answer /v2/:\n" + open(os.path.join(tmp, "registry.log")).read())
            time.sleep(0.05)  # polling the registry's start against the deadline above

    repository = f"127.0.0.1:{port}/statlet"
    pushed = subprocess.run([publish, "push", archive, repository, "--dest-tls-verify=false"], capture_output=True,
                            text=True)
    check(pushed.returncode == 0, f"publish.sh push failed: {pushed.stderr}")
    print(pushed.stdout)

    tags = json.loads(get(base + "/v2/statlet/tags/list")[0])["tags"]
    check(sorted(tags) == sorted(want_tags), f"the registry holds tags {tags}, not {want_tags}")
    oci = "application/vnd.oci.image.manifest.v1+json"
    for tag in want_tags:
        body, headers = get(f"{base}/v2/statlet/manifests/{tag}", accept=oci)
        check(headers.get("Docker-Content-Digest") == digest,
              f"statlet:{tag} is {headers.get('Docker-Content-Digest')} in the registry, {digest} in the archive")
    manifest = json.loads(get(f"{base}/v2/statlet/manifests/{want_tags[0]}", accept=oci)[0])
    config = json.loads(get(f"{base}/v2/statlet/blobs/{manifest['config']['digest']}")[0])["config"]
    check(config["Entrypoint"] == ["/usr/bin/statlet"], f"entrypoint {config['Entrypoint']}")
    check(config["Labels"].get("org.opencontainers.image.version") == version
          and config["Labels"].get("org.opencontainers.image.revision") == revision,
          f"the image's labels {config['Labels']} do not say {version} / {revision}")

    # The printed entry, used as kustomize uses it.
    m = re.search(r"^images:\n(?:  .*\n)+", pushed.stdout, re.M)
    check(m is not None, "publish.sh printed no images: entry")
    if m and shutil.which("kubectl"):
        overlay = os.path.join(tmp, "overlay")
        os.mkdir(overlay)
        with open(os.path.join(overlay, "kustomization.yaml"), "w") as f:
            f.write("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n"
                    f"  - {os.path.relpath(os.path.join(root, 'deploy/kubernetes'), overlay)}\n" + m.group(0))
        out = subprocess.run(["kubectl", "kustomize", overlay], capture_output=True, text=True)
        check(out.returncode == 0, f"kubectl kustomize: {out.stderr}")
        images = re.findall(r"^\s+image: (\S+)$", out.stdout, re.M)
        # The build's own tag, pinned by digest (the digest decides what a node pulls).
        want = f"{repository}:{want_tags[-1]}@{digest}"
        check(images == [want], f"the DaemonSet runs {images}, not {want}")

    # A command line that cannot work says what it wants.
    bad = subprocess.run([publish, "push", archive, "statlet"], capture_output=True, text=True)
    check(bad.returncode == 2 and "give REGISTRY/REPOSITORY" in bad.stderr, f"push without a registry: {bad.stderr}")
    missing = subprocess.run([publish, "load", os.path.join(tmp, "none.tar")], capture_output=True, text=True)
    check(missing.returncode == 1 and "no such archive" in missing.stderr and "statlet_image" in missing.stderr,
          f"load of a missing archive: {missing.stderr}")
finally:
    if registry is not None:
        registry.terminate()
        registry.wait(timeout=10)
    shutil.rmtree(tmp, ignore_errors=True)

for f in failures:
    print("FAIL:", f)
print(f"pushed {version} ({revision}) to docker-registry; {len(failures)} failures")
sys.exit(1 if failures else 0)
