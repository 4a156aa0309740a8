#!/usr/bin/python3
"""Every statlet flag the documentation and the manifests name is one the binary knows:
  - a flag in one of the daemon's namespaces (--web.*, --collector.*, --cri.*, ...) anywhere
    in the text is a flag of `statlet --help` (or its --no- form, for a boolean), or of a
    subcommand that takes it;
  - after `statlet stats`, `statlet top` or `statlet pull` on a line, every flag up to the end
    of that command is in that subcommand's --help; after `statlet` alone, in the daemon's;
  - the container args of the manifests (and their kustomize patches) and the systemd unit's
    ExecStart are daemon flags;
  - a flag's alternatives written `FLAG a|b|c` (as docs/cri.md writes `-o table|json|yaml`)
    are each in that flag's --help text;
  - one vocabulary: a dotted flag a subcommand lists is the daemon's flag of that name
    (stats and top take --collector.* as the daemon spells them); the one exception is
    --cri.endpoint, the socket a client reads, where the daemon has --cri.listen.
Other programs' flags (kubectl, crictl, cmake, skopeo...) are not statlet's and are left alone.

usage: check_doc_flags.py STATLET_BINARY REPO_ROOT"""
import concurrent.futures
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
    """Flags a --help lists (on lines that start, after blanks, with a flag), the booleans
    among the daemon's, and each flag's text (its line and the deeper-indented lines after)."""
    flags, bools, texts = set(), set(), {}
    current = []
    for line in text.splitlines():
        if not re.match(r"\s+-", line):
            if current and line.startswith("      "):
                for f in current:
                    texts[f] += " " + line.strip()
            else:
                current = []
            continue
        head = line.strip()
        current = []
        for f in re.findall(r"(?:^|[\s,])(" + FLAG + r")", head.split("  ")[0] if "  " in head else head):
            name = f.split("=")[0]
            flags.add(name)
            current.append(name)
            texts[name] = texts.get(name, "") + " " + head
        m = re.match(r"\s+(--[\w.-]+) \(default (true|false)\)", line)
        if m:
            bools.add(m.group(1))
    return flags, bools, texts


daemon, daemon_bools, daemon_texts = listed(help_text([]))
commands = {"": daemon}
texts = {"": daemon_texts}
for sub in ("stats", "top", "pull"):
    commands[sub], _, texts[sub] = listed(help_text([sub]))
    for f in sorted(commands[sub]):
        if "." in f and f != "--cri.endpoint" and f not in daemon:
            failures.append(f"statlet {sub} --help lists {f}, which the daemon does not: one name for one thing")
namespaces = {f[2:].split(".")[0] for f in daemon if "." in f} | {"config"}


def accepted(sub, flag):
    """Whether `statlet SUB FLAG` gets past the flag (two unknown flags after it stop the
    command at parsing, whether FLAG takes a value or not); stats' CRI view flags count
    with --cri.endpoint before them."""
    for prefix in ([], ["--cri.endpoint", "unix:///nonexistent/cri.sock"]):
        out = subprocess.run([binary, sub] + prefix + [flag, "--zz-one", "--zz-two"], capture_output=True, text=True,
                             timeout=20, stdin=subprocess.DEVNULL)
        if f"unknown flag {flag}" not in out.stderr and f'unknown argument "{flag}"' not in out.stderr:
            return True
    return False


# Every flag a subcommand's --help lists is one it takes (the help and the parser are two
# texts in those commands: this keeps them one vocabulary).
# Each check starts the binary once or twice: side by side.
pairs = [(sub, f) for sub in ("stats", "top", "pull") for f in sorted(commands[sub]) if f not in ("-h", "--help")]
with concurrent.futures.ThreadPoolExecutor(max_workers=2 * (os.cpu_count() or 1)) as pool:
    for (sub, f), ok in zip(pairs, pool.map(lambda p: accepted(*p), pairs)):
        if not ok:
            failures.append(f"statlet {sub} --help lists {f}, which statlet {sub} refuses as unknown")
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
        for m in re.finditer(r"(?<![\w-])(--(?:no-)?[a-z][a-z0-9-]*\.[a-z0-9.-]*[a-z0-9])", line):
            f = m.group(1)
            if line[:m.start()].endswith("unknown flag "):
                continue  # an error message quoted with the mistyped flag it answers
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
            for k, token in enumerate(args):
                f = re.match(r"\[?(" + FLAG + r")", token)
                if not f:
                    continue
                f = f.group(1)
                checked += 1
                if not known(f, commands[sub], daemon_bools if sub == "" else frozenset()):
                    failures.append(f"{where}: `statlet {sub + ' ' if sub else ''}{f}`: "
                                    f"statlet {sub + ' ' if sub else ''}--help does not list {f.split('=')[0]}")
                    continue
                # `FLAG a|b|c`: every alternative is one the flag's help names.
                value = f.split("=", 1)[1] if "=" in f else (args[k + 1] if k + 1 < len(args) else "")
                value = value.strip("[]")
                if "|" in value and re.fullmatch(r"[\w.|-]+", value):
                    text = texts[sub].get(f.split("=")[0], "")
                    for alt in value.split("|"):
                        if not re.search(rf"(?<![\w-]){re.escape(alt)}(?![\w-])", text):
                            failures.append(f"{where}: `{f.split('=')[0]} {value}`: the flag's --help does not name "
                                            f"{alt}")
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
