#!/usr/bin/python3
"""A stand-in for the Kubernetes API server's TokenReview (authentication.k8s.io/v1) and
SubjectAccessReview (authorization.k8s.io/v1), for tests: no API server runs on these
machines. It takes each request as the API server would (POST, JSON, the caller's own
bearer token, the object's apiVersion, kind and spec fields as kubernetes/api
authentication/v1 and authorization/v1 define them) and answers 201 with the object and
its status, as a create of these kinds does.

  apiserver_review_stub.py CONFIG CERT KEY LOG PORTFILE [PORT]
      HTTPS on 127.0.0.1:PORT (0 or none: a free port), the port written to PORTFILE.
      CONFIG (JSON):
        caller_token: the token the reviewer (statlet) must send
        tokens: {token: {username, uid, groups, extra}}: tokens that authenticate
        rules: [{users: [...], groups: [...], verbs: [...], resource, subresource, names: [...]}]:
               what is allowed (RBAC-like; no names: any name)
        delay_ms: time each answer takes (an API server is not instant)
      LOG: one JSON line per request:
        {"t": monotonic seconds, "kind": "TokenReview" | "SubjectAccessReview" | null,
         "ok": the request was valid, "errors": [...], "spec": the spec sent,
         "answer": the status answered}
"""
import http.server
import json
import os
import socketserver
import ssl
import sys
import threading
import time

TOKEN_REVIEW = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEW = "/apis/authorization.k8s.io/v1/subjectaccessreviews"

# Field names of the specs (kubernetes/api authentication/v1 and authorization/v1 types.go).
TOKEN_REVIEW_SPEC = {"token", "audiences"}
ACCESS_REVIEW_SPEC = {"resourceAttributes", "nonResourceAttributes", "user", "groups", "extra", "uid"}
RESOURCE_ATTRIBUTES = {"namespace", "verb", "group", "version", "resource", "subresource", "name",
                       "fieldSelector", "labelSelector"}


def check_object(obj, api_version, kind, spec_fields, errors):
    if not isinstance(obj, dict):
        errors.append("not an object")
        return {}
    for key in obj:
        if key not in ("apiVersion", "kind", "metadata", "spec"):
            errors.append("unknown field %r" % key)
    if obj.get("apiVersion") != api_version:
        errors.append("apiVersion %r" % obj.get("apiVersion"))
    if obj.get("kind") != kind:
        errors.append("kind %r" % obj.get("kind"))
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        errors.append("no spec")
        return {}
    for key in spec:
        if key not in spec_fields:
            errors.append("unknown spec field %r" % key)
    return spec


def token_review(config, obj, errors):
    spec = check_object(obj, "authentication.k8s.io/v1", "TokenReview", TOKEN_REVIEW_SPEC, errors)
    token = spec.get("token")
    if not isinstance(token, str) or not token:
        errors.append("spec.token must be a non-empty string")
        return spec, {"authenticated": False}
    user = config["tokens"].get(token)
    if user is None:
        # What the API server answers for a token none of its authenticators takes.
        return spec, {"authenticated": False, "error": "invalid bearer token"}
    return spec, {"authenticated": True, "user": user}


def allowed_by(rule, spec, attrs):
    users = rule.get("users", [])
    groups = rule.get("groups", [])
    if spec.get("user") not in users and not set(spec.get("groups", [])) & set(groups):
        return False
    if attrs.get("verb", "") not in rule.get("verbs", []):
        return False
    if attrs.get("resource") != rule.get("resource") or attrs.get("subresource", "") != rule.get("subresource", ""):
        return False
    if attrs.get("group", "") != "":
        return False
    names = rule.get("names", [])
    return not names or attrs.get("name") in names


def access_review(config, obj, errors):
    spec = check_object(obj, "authorization.k8s.io/v1", "SubjectAccessReview", ACCESS_REVIEW_SPEC, errors)
    attrs = spec.get("resourceAttributes")
    if not isinstance(attrs, dict):
        errors.append("no spec.resourceAttributes")
        attrs = {}
    for key, value in attrs.items():
        if key not in RESOURCE_ATTRIBUTES:
            errors.append("unknown resourceAttributes field %r" % key)
        elif key not in ("fieldSelector", "labelSelector") and (not isinstance(value, str) or value == ""):
            errors.append("resourceAttributes.%s must be a non-empty string (empty ones are left out)" % key)
    if not spec.get("user") and not spec.get("groups"):
        errors.append("spec.user or spec.groups is required")
    for key in ("groups",):
        if key in spec and (not isinstance(spec[key], list) or not spec[key]):
            errors.append("spec.%s must be a non-empty list when present" % key)
    if "extra" in spec and not isinstance(spec["extra"], dict):
        errors.append("spec.extra must be an object")
    allowed = any(allowed_by(rule, spec, attrs) for rule in config["rules"])
    status = {"allowed": allowed}
    if allowed:
        status["reason"] = "allowed by the test's rules"
    return spec, status


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the API server

    def log_message(self, fmt, *args):
        pass

    def answer(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def refuse(self, code, reason, message):
        self.answer(code, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                           "reason": reason, "code": code})

    def do_GET(self):
        self.refuse(405, "MethodNotAllowed", "the stand-in serves only review creation")

    def do_POST(self):
        server = self.server
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        record = {"t": time.monotonic(), "kind": None, "ok": False, "errors": [], "spec": None, "answer": None}
        errors = record["errors"]
        if self.headers.get("Authorization") != "Bearer " + server.config["caller_token"]:
            errors.append("the caller's token is missing or wrong")
            server.log(record)
            self.refuse(401, "Unauthorized", "Unauthorized")
            return
        if not (self.headers.get("Content-Type") or "").startswith("application/json"):
            errors.append("Content-Type %r" % self.headers.get("Content-Type"))
        try:
            obj = json.loads(raw)
        except ValueError as e:
            errors.append("body is no JSON: %s" % e)
            server.log(record)
            self.refuse(400, "BadRequest", "body is no JSON")
            return
        path = self.path.split("?")[0]
        if path == TOKEN_REVIEW:
            record["kind"] = "TokenReview"
            spec, status = token_review(server.config, obj, errors)
        elif path == ACCESS_REVIEW:
            record["kind"] = "SubjectAccessReview"
            spec, status = access_review(server.config, obj, errors)
        else:
            errors.append("path %r" % self.path)
            server.log(record)
            self.refuse(404, "NotFound", "the server could not find the requested resource")
            return
        record["spec"] = spec
        record["answer"] = status
        record["ok"] = not errors
        delay = server.config.get("delay_ms", 0) / 1000.0
        if delay:
            time.sleep(delay)  # the API server's own time to answer
        server.log(record)
        if errors:
            self.refuse(400, "BadRequest", "; ".join(errors))
            return
        out = dict(obj)
        out["metadata"] = {"creationTimestamp": None}
        out["status"] = status
        self.answer(201, out)


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, addr, config, log_path):
        super().__init__(addr, Handler)
        self.config = config
        self.log_lock = threading.Lock()
        self.log_file = open(log_path, "a", buffering=1)

    def log(self, record):
        with self.log_lock:
            self.log_file.write(json.dumps(record) + "\n")


def main():
    config_path, cert, key, log_path, port_file = sys.argv[1:6]
    port = int(sys.argv[6]) if len(sys.argv) > 6 else 0
    with open(config_path) as f:
        config = json.load(f)
    server = Server(("127.0.0.1", port), config, log_path)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(cert, key)
    server.socket = context.wrap_socket(server.socket, server_side=True)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


if __name__ == "__main__":
    main()
