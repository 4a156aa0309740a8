#!/usr/bin/python3
"""Every statlet flag the documentation and the manifests name is one the binary knows:
  - a flag in one of the daemon's namespaces (--web.*, --collector.*, --cri.*, ...) anywhere
    in the text is a flag of `statlet --help` (or its --no- form, for a boolean), or of a
    subcommand that takes it;
  - after `statlet stats`, `statlet top` or `statlet pull` on a line, every flag up to the end
    of that command is in that subcommand's --help; after `statlet` alone, in the daemon's;
  - the container args of the manifests (and their kustomize patches) and the systemd unit's
    ExecStart are daemon flags.
Other programs' flags (kubectl, crictl, cmake, skopeo...) are not statlet's and are left alone.

usage: check_doc_flags.py STATLET_BINARY REPO_ROOT"""
import glob
import os
import re
import subprocess
import sys

binary, root = sys.argv[1], sys.argv[2]
failures = []

# ------------------------------------------------------------------ what the binary knows
FLAG = r"--?[A-Za-z][A-Za-z0-9_.-]*"


def help_text(args):
    return subprocess.run([binary] + args + ["--help"], capture_output=True, text=True, check=True).stdout


def listed(text):
    """Flags a --help lists: on lines that start (after blanks) with a flag."""
    flags, bools = set(), set()
    for line in text.splitlines():
        if not re.match(r"\s+-", line):
            continue
        head = line.strip()
        for f in re.findall(r"(?:^|[\s,])(" + FLAG + r")", head.split("  ")[0] if "  " in head else head):
            flags.add(f.split("=")[0])
        m = re.match(r"\s+(--[\w.-]+) \(default (true|false)\)", line)
        if m:
            bools.add(m.group(1))
    return flags, bools


daemon, daemon_bools = listed(help_text([]))
commands = {"": daemon}
for sub in ("stats", "top", "pull"):
    commands[sub] = listed(help_text([sub]))[0]
namespaces = {f[2:].split(".")[0] for f in daemon if "." in f} | {"config"}
every = set().union(*commands.values())


def known(flag, flags, bools=frozenset()):
    name = flag.split("=")[0]
    return name in flags or (name.startswith("--no-") and "--" + name[5:] in bools)


# ------------------------------------------------------------------ the text
docs = ["README.md", "bpf/README.md"] + sorted(glob.glob(os.path.join(root, "docs/*.md"))) + sorted(
    glob.glob(os.path.join(root, "deploy/**/*.md"), recursive=True)) + sorted(
    glob.glob(os.path.join(root, "deploy/**/*.yaml"), recursive=True)) + ["deploy/systemd/statlet.service"]
docs = [os.path.relpath(d, root) if d.startswith(root) else d for d in docs]
checked = 0

def logical_lines(path):
    """(number, text) of each line; a `code span` that wraps is joined into its first line."""
    lines = open(path).read().splitlines()
    i = 0
    while i < len(lines):
        n, text = i + 1, lines[i]
        while not text.lstrip().startswith("```") and text.count("`") % 2 == 1 and i + 1 < len(lines):
            i += 1
            text += " " + lines[i].strip()
        yield n, text
        i += 1


for doc in docs:
    for n, line in logical_lines(os.path.join(root, doc)):
        where = f"{doc}:{n}"
        # Any flag in a daemon namespace, wherever it stands.
        for f in re.findall(r"(?<![\w-])(--(?:no-)?[a-z][a-z0-9-]*\.[a-z0-9.-]*[a-z0-9])", line):
            ns = f[2:].removeprefix("no-").split(".")[0]
            if ns in namespaces:
                checked += 1
                if not known(f, every, daemon_bools):
                    failures.append(f"{where}: {f} is no flag of statlet (statlet --help, statlet stats|top|pull --help)")
        # Commands: `statlet [stats|top|pull] ARGS` up to a comment, a pipe, a `;`/`&&` or
        # the end of a code span. (The daemon's starts with a flag: "statlet on every node"
        # is prose.)
        for m in re.finditer(r"(?<![\w/.-])statlet(?: (stats|top|pull)\b| +(?=--?[A-Za-z]))", line):
            sub = m.group(1) or ""
            args = []
            for token in line[m.end():].split("`")[0].split():
                if token in ("|", "||", "&&", ";") or token.startswith("#"):
                    break
                args.append(token)
            for token in args:
                f = re.match(r"\[?(" + FLAG + r")", token)
                if not f:
                    continue
                f = f.group(1)
                checked += 1
                if not known(f, commands[sub], daemon_bools if sub == "" else frozenset()):
                    failures.append(f"{where}: `statlet {sub + ' ' if sub else ''}{f}`: "
                                    f"statlet {sub + ' ' if sub else ''}--help does not list {f.split('=')[0]}")
        # Manifest args and the unit's command line: the daemon's.
        if doc.endswith((".yaml", ".service")):
            for f in re.findall(r"(?:^\s*-\s+|value:\s+|ExecStart=\S+\s.*?)(--[a-z][\w.-]*)", line):
                checked += 1
                if not known(f, daemon, daemon_bools):
                    failures.append(f"{where}: the daemon is given {f}, which statlet --help does not list")

for f in failures:
    print("FAIL:", f)
print(f"{checked} flags named in {len(docs)} files; {len(failures)} unknown to the binary")
sys.exit(1 if failures else 0)
