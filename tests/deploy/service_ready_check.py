#!/usr/bin/python3
"""statlet in proxy mode tells its service manager READY=1 only once its CRI socket accepts
connections, and STOPPING=1 when told to stop (systemd's Type=notify protocol, sd_notify(3):
datagrams to $NOTIFY_SOCKET; no systemd needed to check it).

usage: service_ready_check.py STATLET_BINARY
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time


def main():
    binary = sys.argv[1]
    with tempfile.TemporaryDirectory() as d:
        notify_path = os.path.join(d, "notify.sock")
        cri = os.path.join(d, "cri.sock")
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(notify_path)
        notify.settimeout(20)
        env = dict(os.environ, NOTIFY_SOCKET=notify_path)
        t0 = time.monotonic()
        # The runtime's socket need not exist for the proxy's own socket to serve.
        p = subprocess.Popen([binary, "--cri.proxy", "--runtime.endpoint=unix://" + os.path.join(d, "runtime.sock"),
                              "--cri.listen=" + cri, "--web.listen-address=127.0.0.1:0", "--bpf=off",
                              "--collector.subtree=/statlet-ready-check-none", "--log.level=warn"],
                             env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            msg = notify.recv(4096).decode()
            took = (time.monotonic() - t0) * 1000
            if "READY=1" not in msg:
                sys.exit("first notification was %r, not READY=1" % msg)
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.connect(cri)  # must not fail: the socket is up before READY=1
            c.close()
            print("figure: READY=1 after %.0f ms, with the CRI socket accepting connections" % took)
            p.send_signal(signal.SIGTERM)
            msg = notify.recv(4096).decode()
            if "STOPPING=1" not in msg:
                sys.exit("notification on SIGTERM was %r, not STOPPING=1" % msg)
            if p.wait(timeout=10) != 0:
                sys.exit("statlet exited with %d: %s" % (p.returncode, p.stderr.read().decode()))
        finally:
            if p.poll() is None:
                p.kill()
                p.wait()
    print("READY=1 after the socket, STOPPING=1 on SIGTERM")


if __name__ == "__main__":
    main()
