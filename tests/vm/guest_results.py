"""Reads the directory the guest packed: its manifest, the workloads' reports, its own
readings of the cgroup files ("before"/"after" statlet's collection), and statlet's
outputs. Only parsing lives here; what must hold is in check_results.py."""

import json
import os
import re


def _read(path, default=None):
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return default


def _key_values(text):
    """'key=value' lines (reports, expect)."""
    out = {}
    for line in (text or "").splitlines():
        if "=" in line:
            k, v = line.split("=", 1)
            out[k.strip()] = v.strip()
    return out


class CgroupFiles:
    """One cgroup's files as the guest read them."""

    def __init__(self):
        self.lines = {}  # file name -> list of lines

    def text(self, name):
        return "\n".join(self.lines.get(name, []))

    def has(self, name):
        return name in self.lines

    def value(self, name):
        """A one-number file (memory.current); 'max' is None."""
        v = self.lines.get(name, [""])[0].strip()
        return None if v in ("", "max") else int(v)

    def flat(self, name):
        """'key value' lines (cpu.stat, memory.stat, memory.events, pids.events)."""
        out = {}
        for line in self.lines.get(name, []):
            parts = line.split()
            if len(parts) == 2 and parts[1].lstrip("-").isdigit():
                out[parts[0]] = int(parts[1])
        return out

    def psi_total(self, name, kind):
        """total= of the 'some' or 'full' line of a PSI file, in microseconds."""
        for line in self.lines.get(name, []):
            if line.startswith(kind + " "):
                m = re.search(r"total=(\d+)", line)
                return int(m.group(1)) if m else None
        return None

    def io_stat(self, device):
        """io.stat fields of one 'major:minor' device, as ints."""
        for line in self.lines.get("io.stat", []):
            parts = line.split()
            if parts and parts[0] == device:
                return {k: int(v) for k, v in (p.split("=") for p in parts[1:])}
        return {}

    def count_lines(self, name):
        return len([l for l in self.lines.get(name, []) if l.strip()])


def _parse_dump(text, inode_text):
    """'grep -H' output: /sys/fs/cgroup/<path>/<file>:<line>."""
    cgroups = {}
    for line in (inode_text or "").splitlines():
        ino, path = line.split(" ", 1)
        cgroups.setdefault(path, CgroupFiles()).inode = int(ino)
    for line in (text or "").splitlines():
        full, content = line.split(":", 1)
        rel = full[len("/sys/fs/cgroup"):]
        path, name = rel.rsplit("/", 1)
        cgroups.setdefault(path, CgroupFiles()).lines.setdefault(name, []).append(content)
    return cgroups


def _parse_net_dev(text):
    """'<pod uid>:<line of /proc/net/dev>' -> {uid: {iface: {rx_bytes, tx_bytes, ...}}}."""
    out = {}
    for line in (text or "").splitlines():
        uid, rest = line.split(":", 1)
        if ":" not in rest:
            continue  # the two header lines
        iface, nums = rest.split(":", 1)
        v = [int(x) for x in nums.split()]
        out.setdefault(uid, {})[iface.strip()] = {"rx_bytes": v[0], "rx_packets": v[1], "tx_bytes": v[8]}
    return out


class Container:
    def __init__(self, line):
        self.name, self.driver, self.qos, self.pod_uid, self.id, self.path = line.split()
        self.pod_path = self.path.rsplit("/", 1)[0]


class GuestResults:
    def __init__(self, root):
        self.root = root
        self.containers = {}
        for line in (_read(os.path.join(root, "containers"), "")).splitlines():
            c = Container(line)
            self.containers[c.name] = c
        self.expect = _key_values(_read(os.path.join(root, "expect"), ""))
        self.reports = {}
        reports_dir = os.path.join(root, "reports")
        for name in os.listdir(reports_dir) if os.path.isdir(reports_dir) else []:
            self.reports[name] = _key_values(_read(os.path.join(reports_dir, name)))
        self.phases = {}
        for phase in ("before", "after"):
            self.phases[phase] = _parse_dump(_read(os.path.join(root, "cg", phase)),
                                             _read(os.path.join(root, "cg", phase + ".inodes")))
        self.net = {p: _parse_net_dev(_read(os.path.join(root, "net", p + ".dev"))) for p in ("before", "after")}
        self.netns = {}
        for line in (_read(os.path.join(root, "net", "netns"), "")).splitlines():
            uid, ino = line.split()
            self.netns[uid] = int(ino)
        self.times = {k: float(v) for k, v in _key_values(_read(os.path.join(root, "times"), "")).items()}
        self.errors = [l for l in (_read(os.path.join(root, "errors"), "")).splitlines() if l]
        self.mounts = _read(os.path.join(root, "mounts"), "")
        self.root_subtree_control = (_read(os.path.join(root, "root_subtree_control"), "")).split()
        self.kernel = (_read(os.path.join(root, "kernel"), "")).strip()
        later = (_read(os.path.join(root, "cg", "high_events_later"), "")).strip()
        self.high_events_later = int(later) if later.isdigit() else None

    def cg(self, phase, path):
        return self.phases[phase].get(path, CgroupFiles())

    def both(self, path):
        return self.cg("before", path), self.cg("after", path)

    def statlet_out(self, name):
        """(exit code or None when not run, stdout, stderr) of a statlet run in the guest."""
        rc = _read(os.path.join(self.root, "statlet", name + ".rc"))
        return (None if rc is None else rc.strip(),
                _read(os.path.join(self.root, "statlet", name + ".out"), ""),
                _read(os.path.join(self.root, "statlet", name + ".err"), ""))

    def statlet_file(self, name):
        return _read(os.path.join(self.root, "statlet", name))


def parse_json(text):
    try:
        return json.loads(text), None
    except ValueError as e:
        return None, str(e)
