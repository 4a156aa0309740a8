#!/usr/bin/python3
"""What one node costs: the statlet daemon over a real Kubernetes-shaped cgroup tree, scraped
and pushing OTLP at fixed paces; the figures docs/scale.md multiplies out to a fleet.

The tree is <root>/kubepods/burstable/pod<uid>/<64-hex id> in every cgroup hierarchy statlet
reads (as the kubelet's cgroupfs driver lays it out; tests/reliability/container_tree.cc),
with PODS pods and CONTAINERS container cgroups (each pod's pause container counted), each
holding one sleeping process. The daemon runs in a cgroup of its own: its CPU is that
cgroup's cpuacct.usage, or cpu.stat usage_usec on cgroup v2 alone (every thread, exited ones
too); /proc/<pid>/stat's utime+stime (10 ms ticks) is printed beside it. An OTLP/HTTP
receiver in this script answers every export with 200 and counts its bytes.

Runs, each a fresh daemon (--collector.subtree=<root>, no CRI socket, no runtime):
  scrape  IDLE s untouched (the daemon's own background cost), then SCRAPES scrapes of
          /metrics at one every PACE s, then as many with Accept-Encoding: gzip;
  otlp    --otlp.interval=OTLP_FAST, no scrapes, for OTLP_RUN s: bytes and CPU per push,
          once with --otlp.compression=none and once with gzip;
  node    the real pace for NODE_RUN s: a gzip scrape every 15 s and OTLP (gzip) every 60 s;
          its CPU over the run, scaled to an hour, checks the sum of the parts.
Needs root. usage:
  sudo bench/scale.py [--binary build/release/cmd/statlet] [--pods 110] [--containers 250]
                      [--runs scrape,otlp,node] [--flag=--metrics.enable=cpu ...]
                      [--families]  (series per family in one scrape)
                      [--quick]     (short runs: checks the script, not the figures)
"""
import argparse
import gzip
import http.client
import http.server
import os
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time

CG = "/sys/fs/cgroup"
FLAGS = []  # --flag: added to every daemon
HIERARCHIES = ["unified", "cpu", "cpuacct", "memory", "pids", "blkio"]


def mounted():
    """The hierarchies under CG ("" when CG is a cgroup2 mount itself)."""
    if os.path.exists(os.path.join(CG, "cgroup.controllers")):
        return [""]
    return [h for h in HIERARCHIES if os.path.exists(os.path.join(CG, h, "cgroup.procs"))]


class Tree:
    """PODS pods, CONTAINERS containers spread over them (each pod has at least its pause)."""

    def __init__(self, root, pods, containers):
        self.root, self.dirs, self.procs = root, [], []
        hier = mounted()
        per_pod = [1 + (containers - pods) // pods + (1 if i < (containers - pods) % pods else 0) for i in range(pods)]
        parent = root + "/kubepods/burstable"
        self.mkdir(root, hier)
        self.mkdir(root + "/kubepods", hier)
        self.mkdir(parent, hier)
        n = 0
        for p in range(pods):
            pod = f"{parent}/pod{os.getpid():08x}-0000-4000-8000-{p:012x}"
            self.mkdir(pod, hier)
            for _ in range(per_pod[p]):
                cid = (f"{os.getpid():08x}{n:08x}" * 4)[:64]
                self.mkdir(f"{pod}/{cid}", hier)
                proc = subprocess.Popen(["sleep", "infinity"], stdin=subprocess.DEVNULL, close_fds=True)
                self.procs.append(proc)
                for h in hier:
                    with open(f"{CG}/{h}{pod}/{cid}/cgroup.procs".replace("//", "/"), "w") as f:
                        f.write(str(proc.pid))
                n += 1
        self.containers = n

    def mkdir(self, path, hier):
        for h in hier:
            d = f"{CG}/{h}{path}".replace("//", "/")
            os.mkdir(d)
            self.dirs.append(d)

    def remove(self):
        for p in self.procs:
            p.kill()
            p.wait()
        for d in reversed(self.dirs):
            for _ in range(100):  # a killed process leaves its cgroup a moment later
                try:
                    os.rmdir(d)
                    break
                except OSError:
                    time.sleep(0.05)


class Receiver(http.server.BaseHTTPRequestHandler):
    """OTLP/HTTP: every POST answered 200 with an empty ExportMetricsServiceResponse."""

    pushes = []  # (wire bytes, content-encoding, decoded bytes, arrival)

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        enc = self.headers.get("Content-Encoding", "")
        raw = gzip.decompress(body) if enc == "gzip" else body
        Receiver.pushes.append((len(body), enc, len(raw), time.monotonic()))
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Daemon:
    def __init__(self, binary, root, extra, name):
        self.port = free_port()
        hier = mounted()
        self.v1 = "cpuacct" in hier
        base = "cpuacct" if self.v1 else hier[0]
        self.cg = f"{CG}/{base}/statlet-scale-{os.getpid()}-{name}".replace("//", "/")
        os.mkdir(self.cg)
        self.log = open(f"/tmp/statlet-scale-{os.getpid()}-{name}.log", "w")
        self.proc = subprocess.Popen(
            [binary, f"--web.listen-address=127.0.0.1:{self.port}", f"--collector.subtree={root}", "--cri.listen=",
             "--runtime.endpoint=none"] + FLAGS + extra, stdout=self.log, stderr=subprocess.STDOUT)
        with open(self.cg + "/cgroup.procs", "w") as f:
            f.write(str(self.proc.pid))
        deadline = time.monotonic() + 30
        while True:
            try:
                if self.get("/readyz")[0] == 200:
                    break
            except OSError:
                pass
            if time.monotonic() > deadline or self.proc.poll() is not None:
                sys.exit(f"statlet did not become ready (log: {self.log.name})")
            time.sleep(0.1)

    def get(self, path, gz=False):
        c = http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        c.request("GET", path, headers={"Accept-Encoding": "gzip"} if gz else {})
        r = c.getresponse()
        body = r.read()
        c.close()
        return r.status, body, r.getheader("Content-Encoding", "")

    def cpu_s(self):
        if self.v1:
            with open(self.cg + "/cpuacct.usage") as f:
                return int(f.read()) / 1e9
        with open(self.cg + "/cpu.stat") as f:
            return int(f.readline().split()[1]) / 1e6  # usage_usec, the first line

    def ticks_s(self):
        with open(f"/proc/{self.proc.pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def memory_mib(self):
        out = {}
        with open(f"/proc/{self.proc.pid}/status") as f:
            for line in f:
                k, v = line.split(":", 1)
                if k in ("VmRSS", "VmHWM", "RssAnon"):
                    out[k] = int(v.split()[0]) / 1024
        return out

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        self.proc.wait(30)
        self.log.close()
        os.rmdir(self.cg)


def paced(n, pace, fn):
    """fn() n times, one started every `pace` s."""
    start = time.monotonic()
    for i in range(n):
        fn()
        wait = start + (i + 1) * pace - time.monotonic()
        if wait > 0:
            time.sleep(wait)


def series(text):
    return sum(1 for line in text.splitlines() if line and not line.startswith(b"#"))


def scrape_run(a, root):
    d = Daemon(a.binary, root, [], "scrape")
    for _ in range(3):
        d.get("/metrics")  # warm-up: opens the kept fds, fills caches
    c0, t0, w0 = d.cpu_s(), d.ticks_s(), time.monotonic()
    time.sleep(a.idle)
    idle = (d.cpu_s() - c0) / (time.monotonic() - w0)
    out = {"idle_cpu_s_per_s": idle, "idle_ticks_s": d.ticks_s() - t0}
    for gz in (False, True):
        sizes, counts = [], []

        def one():
            status, body, enc = d.get("/metrics", gz)
            if status != 200 or (gz and enc != "gzip"):
                sys.exit(f"scrape failed: {status} {enc!r}")
            sizes.append(len(body))
            counts.append(series(gzip.decompress(body) if gz else body))
            if not gz:
                out["last_body"] = body

        c0, t0, w0 = d.cpu_s(), d.ticks_s(), time.monotonic()
        paced(a.scrapes, a.pace, one)
        wall = time.monotonic() - w0
        cpu = d.cpu_s() - c0
        key = "gzip" if gz else "plain"
        out[key] = {
            "bytes": statistics.median(sizes), "series": statistics.median(counts),
            "cpu_ms_per_scrape": 1e3 * (cpu - idle * wall) / a.scrapes,
            "cpu_ms_per_scrape_incl_idle": 1e3 * cpu / a.scrapes,
            "ticks_ms_per_scrape": 1e3 * (d.ticks_s() - t0) / a.scrapes,
        }
    out["memory_mib"] = d.memory_mib()
    d.stop()
    return out


def otlp_run(a, root, recv_port, compression, idle):
    Receiver.pushes = []
    d = Daemon(a.binary, root, [f"--otlp.endpoint=http://127.0.0.1:{recv_port}", "--otlp.protocol=http/protobuf",
                                f"--otlp.compression={compression}", f"--otlp.interval={a.otlp_fast}s"],
               "otlp-" + compression)
    deadline = time.monotonic() + 60
    while len(Receiver.pushes) < 1 and time.monotonic() < deadline:  # the first export warms up
        time.sleep(0.05)
    n0, c0, t0, w0 = len(Receiver.pushes), d.cpu_s(), d.ticks_s(), time.monotonic()
    time.sleep(a.otlp_run)
    wall = time.monotonic() - w0
    cpu, ticks, pushes = d.cpu_s() - c0, d.ticks_s() - t0, Receiver.pushes[n0:]
    mem = d.memory_mib()
    d.stop()
    if not pushes:
        sys.exit("no OTLP export arrived")
    # One export may be split into several requests (--otlp.max-request-bytes): requests less
    # than a second apart are one export.
    exports = 1 + sum(1 for x, y in zip(pushes, pushes[1:]) if y[3] - x[3] > 1.0)
    return {
        "requests": len(pushes), "exports": exports,
        "wire_bytes_per_export": sum(p[0] for p in pushes) / exports,
        "decoded_bytes_per_export": sum(p[2] for p in pushes) / exports,
        "encodings": sorted({p[1] for p in pushes}),
        "cpu_ms_per_export": 1e3 * (cpu - idle * wall) / exports,
        "ticks_ms_per_export": 1e3 * ticks / exports,
        "memory_mib": mem,
    }


def node_run(a, root, recv_port):
    Receiver.pushes = []
    d = Daemon(a.binary, root, [f"--otlp.endpoint=http://127.0.0.1:{recv_port}", "--otlp.protocol=http/protobuf",
                                "--otlp.compression=gzip", "--otlp.interval=60s"], "node")
    c0, t0, w0 = d.cpu_s(), d.ticks_s(), time.monotonic()
    scrapes = int(a.node_run // 15)
    paced(scrapes, 15, lambda: d.get("/metrics", True))
    wall = time.monotonic() - w0
    out = {"wall_s": wall, "scrapes": scrapes, "otlp_requests": len(Receiver.pushes),
           "cpu_s": d.cpu_s() - c0, "ticks_s": d.ticks_s() - t0, "memory_mib": d.memory_mib()}
    out["cpu_s_per_hour"] = out["cpu_s"] * 3600 / wall
    d.stop()
    return out


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--binary", default="build/release/cmd/statlet")
    p.add_argument("--pods", type=int, default=110)
    p.add_argument("--containers", type=int, default=250)
    p.add_argument("--idle", type=float, default=30)
    p.add_argument("--scrapes", type=int, default=30)
    p.add_argument("--pace", type=float, default=1.0)
    p.add_argument("--otlp-fast", type=float, default=5.0)
    p.add_argument("--otlp-run", type=float, default=60)
    p.add_argument("--node-run", type=float, default=300)
    p.add_argument("--flag", action="append", default=[], help="a daemon flag added to every run (repeatable)")
    p.add_argument("--runs", default="scrape,otlp,node", help="which runs, comma-separated")
    p.add_argument("--families", action="store_true", help="also print the series of each family in one scrape")
    p.add_argument("--quick", action="store_true")
    a = p.parse_args()
    if a.quick:
        a.idle, a.scrapes, a.otlp_run, a.node_run = 3, 5, 12, 30
    a.binary = os.path.abspath(a.binary)
    FLAGS.extend(a.flag)
    runs = a.runs.split(",")

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Receiver)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    root = f"/statlet-scale-{os.getpid()}"
    tree = Tree(root, a.pods, a.containers)
    try:
        print(f"tree: {a.pods} pods, {tree.containers} containers, one process each, under {root} "
              f"in {', '.join(h or 'cgroup2' for h in mounted())}; statlet {a.binary}", flush=True)
        if FLAGS:
            print("daemon flags: " + " ".join(FLAGS))
        s = scrape_run(a, root)
        print(f"scrape idle: {1e3 * s['idle_cpu_s_per_s']:.2f} ms CPU per s over {a.idle:.0f} s "
              f"(ticks {1e3 * s['idle_ticks_s']:.0f} ms)")
        for k in ("plain", "gzip"):
            r = s[k]
            print(f"scrape {k}: series={r['series']:.0f} bytes={r['bytes']:.0f} "
                  f"cpu_ms_per_scrape={r['cpu_ms_per_scrape']:.2f} (with idle {r['cpu_ms_per_scrape_incl_idle']:.2f}, "
                  f"ticks {r['ticks_ms_per_scrape']:.1f}) over {a.scrapes} scrapes one per {a.pace:g} s")
        if a.families:
            per = {}
            for line in s["last_body"].splitlines():
                if line and not line.startswith(b"#"):
                    name = line.split(b"{", 1)[0].split(b" ", 1)[0].decode()
                    per[name] = per.get(name, 0) + 1
            for name, count in sorted(per.items(), key=lambda x: -x[1]):
                print(f"family {name} {count}")
        print("scrape memory MiB: " + " ".join(f"{k}={v:.1f}" for k, v in s["memory_mib"].items()), flush=True)
        for comp in ("none", "gzip") if "otlp" in runs else ():
            o = otlp_run(a, root, server.server_address[1], comp, s["idle_cpu_s_per_s"])
            print(f"otlp {comp}: exports={o['exports']} requests={o['requests']} "
                  f"wire_bytes_per_export={o['wire_bytes_per_export']:.0f} "
                  f"decoded_bytes_per_export={o['decoded_bytes_per_export']:.0f} encodings={o['encodings']} "
                  f"cpu_ms_per_export={o['cpu_ms_per_export']:.2f} (ticks {o['ticks_ms_per_export']:.1f}; interval {a.otlp_fast:g} s, {a.otlp_run:g} s) "
                  "memory MiB: " + " ".join(f"{k}={v:.1f}" for k, v in o["memory_mib"].items()), flush=True)
        n = node_run(a, root, server.server_address[1]) if "node" in runs else None
        if n:
            print(f"node pace: {n['scrapes']} gzip scrapes one per 15 s, OTLP gzip every 60 s "
                  f"({n['otlp_requests']} requests) over {n['wall_s']:.0f} s: cpu_s={n['cpu_s']:.3f} "
                  f"(ticks {n['ticks_s']:.2f}) cpu_s_per_hour={n['cpu_s_per_hour']:.1f} memory MiB: "
                  + " ".join(f"{k}={v:.1f}" for k, v in n["memory_mib"].items()), flush=True)
    finally:
        tree.remove()
        server.shutdown()


if __name__ == "__main__":
    main()
