#!/usr/bin/python3
"""statlet knows what it was built from: `statlet --version` of a build from a git checkout
names a commit of that checkout (not "unknown"), and cmd/revision.cmake writes what
-DSTATLET_REVISION says (a release tarball), "unknown" for a tree that is no checkout, and
leaves its header untouched when nothing changed (so a build recompiles nothing).

usage: check_version.py STATLET_BINARY SOURCE_DIR"""
import os
import re
import subprocess
import sys
import tempfile

binary, source = sys.argv[1], sys.argv[2]
failures = []


def check(cond, what):
    if not cond:
        failures.append(what)


project = re.search(r"project\(statlet VERSION ([0-9.]+)", open(os.path.join(source, "CMakeLists.txt")).read()).group(1)
out = subprocess.run([binary, "--version"], capture_output=True, text=True, check=True).stdout.strip()
m = re.fullmatch(r"statlet (\S+) \(revision (\S+)\)", out)
check(m is not None, f"--version printed {out!r}")
if m:
    check(m.group(1) == project, f"--version says version {m.group(1)}, CMakeLists.txt {project}")
    revision = m.group(2)
    if os.path.exists(os.path.join(source, ".git")):
        check(revision != "unknown", "a build from a git checkout reports revision unknown")
        commit = re.sub(r"-dirty$", "", revision).rsplit("-g", 1)[-1]
        known = subprocess.run(["git", "-C", source, "cat-file", "-e", commit + "^{commit}"], capture_output=True)
        check(known.returncode == 0, f"revision {revision}: {commit} is no commit of {source}")
    print("--version:", out)

script = os.path.join(source, "cmd", "revision.cmake")
with tempfile.TemporaryDirectory() as tmp:
    header = os.path.join(tmp, "statlet_revision.h")

    def run(src, revision=None):
        args = ["cmake", f"-DSOURCE_DIR={src}", f"-DOUT={header}"]
        if revision is not None:
            args.append(f"-DREVISION={revision}")
        subprocess.run(args + ["-P", script], check=True)
        return re.search(r'STATLET_REVISION_STRING "([^"]*)"', open(header).read()).group(1)

    check(run(tmp, "v0.1.0-tarball") == "v0.1.0-tarball", "-DSTATLET_REVISION is not what the header says")
    before = os.stat(header).st_mtime_ns
    os.utime(header, ns=(before - 10**9, before - 10**9))
    run(tmp, "v0.1.0-tarball")
    check(os.stat(header).st_mtime_ns == before - 10**9, "an unchanged revision rewrote the header")
    check(run(tmp) == "unknown", "a tree without .git and without -DSTATLET_REVISION is not 'unknown'")
    check(run(tmp, "a b\"c") == "a_b_c", "a revision with quotes or spaces is not sanitised")

for f in failures:
    print("FAIL:", f)
sys.exit(1 if failures else 0)
