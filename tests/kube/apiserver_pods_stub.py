#!/usr/bin/python3
"""A stand-in for the Kubernetes API server's pods and nodes, for tests: no API server runs
on these machines. It answers as the API server does (core/v1 JSON):

  GET /api/v1/nodes/NAME                          a Node with status.nodeInfo.kubeletVersion
  GET /api/v1/pods?fieldSelector=spec.nodeName%3DNODE&limit=N[&continue=T]
                                                  a PodList page (metadata.resourceVersion,
                                                  metadata.continue while more remain)
  GET /api/v1/pods?fieldSelector=…&watch=true&resourceVersion=RV[&timeoutSeconds=S]
                                                  200, chunked: one JSON event per line
                                                  ({"type": ADDED|MODIFIED|DELETED|ERROR,
                                                  "object": …}) for every change after RV,
                                                  then the changes as they come; an ERROR
                                                  event with a 410 Status when RV is older
                                                  than the history kept

and takes its orders from the test:

  POST /control/pod          body: a Pod; added (or modified when its uid exists)
  POST /control/delete?uid=U the pod is deleted
  POST /control/break        every open watch is cut (the connection closes mid-stream)
  POST /control/compact      the history is dropped: older resourceVersions get 410
  POST /control/kubelet?version=V

State (pods, resourceVersion, history) lives in STATE_DIR/state.json, so a restarted stand-in
carries on where the last one stopped, as an API server over the same etcd would. Every API
request is logged to STATE_DIR/requests.log as one JSON line {"path", "query", "auth"}.

usage: apiserver_pods_stub.py serve STATE_DIR PORTFILE [PORT]
"""
import http.server
import json
import os
import socket
import sys
import threading
import urllib.parse

lock = threading.Condition()
state = {"rv": 1, "pods": {}, "history": [], "compacted": 0, "kubelet_version": "v1.36.2"}
breaks = 0  # bumped by /control/break: watches opened before it end


def load(d):
    path = os.path.join(d, "state.json")
    if os.path.exists(path):
        with open(path) as f:
            state.update(json.load(f))


def save(d):
    tmp = os.path.join(d, "state.json.tmp")
    with open(tmp, "w") as f:
        json.dump(state, f)
    os.rename(tmp, os.path.join(d, "state.json"))


def node_of(pod):
    return (pod.get("spec") or {}).get("nodeName", "")


def change(kind, pod):
    """Records one change (under the lock)."""
    state["rv"] += 1
    pod = json.loads(json.dumps(pod))
    pod.setdefault("metadata", {})["resourceVersion"] = str(state["rv"])
    uid = pod["metadata"]["uid"]
    if kind == "DELETED":
        state["pods"].pop(uid, None)
    else:
        state["pods"][uid] = pod
    state["history"].append({"rv": state["rv"], "type": kind, "object": pod})
    lock.notify_all()


def serve(d, port_file, port=0):
    load(d)
    log = open(os.path.join(d, "requests.log"), "a", buffering=1)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def send_json(self, code, body):
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def status(self, code, reason, message):
            self.send_json(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
                                  "reason": reason, "message": message})

        def do_GET(self):
            url = urllib.parse.urlsplit(self.path)
            q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query, keep_blank_values=True).items()}
            log.write(json.dumps({"path": url.path, "query": q, "auth": self.headers.get("Authorization")}) + "\n")
            if url.path.startswith("/api/v1/nodes/"):
                name = url.path[len("/api/v1/nodes/"):]
                with lock:
                    version = state["kubelet_version"]
                return self.send_json(200, {"kind": "Node", "apiVersion": "v1", "metadata": {"name": name},
                                            "status": {"nodeInfo": {"kubeletVersion": version,
                                                                    "containerRuntimeVersion": "containerd://1.7"}}})
            if url.path != "/api/v1/pods":
                return self.status(404, "NotFound", url.path)
            selector = q.get("fieldSelector", "")
            node = selector[len("spec.nodeName="):] if selector.startswith("spec.nodeName=") else None
            if q.get("watch") in ("true", "1"):
                return self.watch(node, q)
            with lock:
                pods = sorted((p for p in state["pods"].values() if node is None or node_of(p) == node),
                              key=lambda p: p["metadata"]["uid"])
                rv = str(state["rv"])
            limit = int(q.get("limit") or 0) or len(pods) or 1
            start = int(q["continue"]) if q.get("continue") else 0
            page = pods[start:start + limit]
            meta = {"resourceVersion": rv}
            if start + limit < len(pods):
                meta["continue"] = str(start + limit)
            self.send_json(200, {"kind": "PodList", "apiVersion": "v1", "metadata": meta, "items": page})

        def chunk(self, obj):
            data = (json.dumps(obj) + "\n").encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(data), data))
            self.wfile.flush()

        def watch(self, node, q):
            try:
                since = int(q.get("resourceVersion") or 0)
            except ValueError:
                return self.status(400, "BadRequest", "resourceVersion")
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            with lock:
                opened_at = breaks
                if since and since < state["compacted"]:
                    self.chunk({"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                                            "code": 410, "reason": "Expired",
                                                            "message": "too old resource version"}})
                    self.wfile.write(b"0\r\n\r\n")
                    return
                sent = since or state["rv"]
                while True:
                    if breaks != opened_at:
                        # Cut mid-stream: no final chunk, the connection just closes.
                        self.close_connection = True
                        self.connection.shutdown(socket.SHUT_RDWR)
                        return
                    for ev in state["history"]:
                        if ev["rv"] > sent:
                            sent = ev["rv"]
                            if node is None or node_of(ev["object"]) == node:
                                self.chunk({"type": ev["type"], "object": ev["object"]})
                    lock.wait(timeout=0.5)

        def do_POST(self):
            global breaks
            url = urllib.parse.urlsplit(self.path)
            q = {k: v[-1] for k, v in urllib.parse.parse_qs(url.query).items()}
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            with lock:
                if url.path == "/control/pod":
                    pod = json.loads(body)
                    change("MODIFIED" if pod["metadata"]["uid"] in state["pods"] else "ADDED", pod)
                elif url.path == "/control/delete":
                    pod = state["pods"].get(q["uid"])
                    if pod is None:
                        return self.status(404, "NotFound", q["uid"])
                    change("DELETED", pod)
                elif url.path == "/control/break":
                    breaks += 1
                    lock.notify_all()
                elif url.path == "/control/compact":
                    # As etcd's compaction: versions before the current one are gone.
                    state["rv"] += 1
                    state["compacted"] = state["rv"]
                    state["history"] = []
                elif url.path == "/control/kubelet":
                    state["kubelet_version"] = q["version"]
                else:
                    return self.status(404, "NotFound", url.path)
                save(d)
                rv = state["rv"]
            self.send_json(200, {"resourceVersion": str(rv)})

    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    if len(sys.argv) in (4, 5) and sys.argv[1] == "serve":
        serve(sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) == 5 else 0)
    else:
        sys.exit(__doc__)
