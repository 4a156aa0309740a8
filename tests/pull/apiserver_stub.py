#!/usr/bin/python3
"""A stand-in for the Kubernetes API server's server-side apply of NodeImagePulls objects,
for tests: no API server runs on these machines. Every request is checked the way the API
server would take it, and its body is validated against the CRD's own openAPIV3Schema
(deploy/kubernetes/nodeimagepulls-crd.yaml) with Debian's python3-jsonschema, made strict:
a field the schema does not declare is an error (the API server would prune it silently).

  apiserver_stub.py serve CRD CERT KEY TOKEN LOG PORTFILE
      HTTPS on 127.0.0.1 (a free port, written to PORTFILE); one JSON line per request to LOG:
      {"t": monotonic seconds, "ok": bool, "errors": [...], "body": the object or null}
  apiserver_stub.py validate CRD FILE...
      validates each FILE (a NodeImagePulls object as JSON); exit status 1 on any error.
"""
import copy
import http.server
import json
import re
import ssl
import sys
import time
import urllib.parse

import jsonschema
import yaml


def load_crd(path):
    with open(path) as f:
        crd = yaml.safe_load(f)
    spec = crd["spec"]
    version = spec["versions"][0]
    schema = strict(copy.deepcopy(version["schema"]["openAPIV3Schema"]))
    return {
        "api_version": spec["group"] + "/" + version["name"],
        "kind": spec["names"]["kind"],
        "plural": spec["names"]["plural"],
        "validator": jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()),
    }


def strict(schema):
    """Objects with declared properties accept no others (metadata excepted)."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema and "additionalProperties" not in schema:
            schema["additionalProperties"] = False
        for key, value in schema.items():
            if key == "properties":
                for name, sub in value.items():
                    strict(sub)
            elif isinstance(value, (dict, list)):
                strict(value)
    elif isinstance(schema, list):
        for item in schema:
            strict(item)
    return schema


TIME_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")


def check_object(crd, obj, name=None):
    errors = [e.message for e in crd["validator"].iter_errors(obj)]
    if not isinstance(obj, dict):
        return errors or ["not an object"]
    if obj.get("apiVersion") != crd["api_version"]:
        errors.append("apiVersion %r" % obj.get("apiVersion"))
    if obj.get("kind") != crd["kind"]:
        errors.append("kind %r" % obj.get("kind"))
    meta_name = (obj.get("metadata") or {}).get("name")
    if name is not None and meta_name != name:
        errors.append("metadata.name %r is not the URL's %r" % (meta_name, name))
    status = obj.get("status") or {}
    if status.get("nodeName") != meta_name:
        errors.append("status.nodeName %r differs from metadata.name" % status.get("nodeName"))
    # RFC 3339 times as Kubernetes writes them (jsonschema checks date-time only when an
    # optional module is installed).
    times = [status.get("updateTime")]
    for image in status.get("images") or []:
        times += [image.get("startTime"), image.get("completionTime")]
    for t in times:
        if t is not None and not TIME_RE.match(str(t)):
            errors.append("time %r is not RFC 3339" % t)
    return errors


def serve(crd_path, cert, key, token, log_path, port_file):
    crd = load_crd(crd_path)
    path_re = re.compile(r"^/apis/%s/%s/([a-z0-9.-]+)$" % (re.escape(crd["api_version"]), crd["plural"]))
    log = open(log_path, "a", buffering=1)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def answer(self, code, body, errors, obj):
            log.write(json.dumps({"t": time.monotonic(), "ok": not errors, "errors": errors, "body": obj}) + "\n")
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_PATCH(self):
            url = urllib.parse.urlsplit(self.path)
            query = urllib.parse.parse_qs(url.query)
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length) if 0 < length <= 1 << 20 else b""
            errors = []
            if self.headers.get("Authorization") != "Bearer " + token:
                return self.answer(401, {"kind": "Status", "code": 401}, ["bad Authorization"], None)
            m = path_re.match(url.path)
            if not m:
                return self.answer(404, {"kind": "Status", "code": 404}, ["path " + url.path], None)
            if query.get("fieldManager") != ["statlet"]:
                errors.append("fieldManager %r" % query.get("fieldManager"))
            if query.get("force") != ["true"]:
                errors.append("force %r" % query.get("force"))
            if self.headers.get("Content-Type") != "application/apply-patch+yaml":
                errors.append("Content-Type %r" % self.headers.get("Content-Type"))
            try:
                obj = yaml.safe_load(raw)
            except yaml.YAMLError as e:
                obj = None
                errors.append("body is not YAML: %s" % e)
            if obj is not None:
                errors += check_object(crd, obj, m.group(1))
            if errors:
                return self.answer(422, {"kind": "Status", "code": 422, "message": "; ".join(errors)}, errors, obj)
            return self.answer(200, obj, [], obj)

        def do_GET(self):
            self.answer(405, {"kind": "Status", "code": 405}, ["GET " + self.path], None)

        do_POST = do_PUT = do_DELETE = do_GET

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    server.socket = ctx.wrap_socket(server.socket, server_side=True)
    with open(port_file + ".tmp", "w") as f:
        f.write(str(server.server_address[1]))
    import os
    os.rename(port_file + ".tmp", port_file)
    server.serve_forever()


def validate(crd_path, files):
    crd = load_crd(crd_path)
    bad = 0
    for path in files:
        with open(path) as f:
            try:
                obj = json.load(f)
            except ValueError as e:
                print("%s: not JSON: %s" % (path, e))
                bad += 1
                continue
        errors = check_object(crd, obj)
        for e in errors:
            print("%s: %s" % (path, e))
        bad += bool(errors)
    return 1 if bad else 0


if __name__ == "__main__":
    if len(sys.argv) == 8 and sys.argv[1] == "serve":
        serve(*sys.argv[2:])
    elif len(sys.argv) >= 4 and sys.argv[1] == "validate":
        sys.exit(validate(sys.argv[2], sys.argv[3:]))
    else:
        sys.exit(__doc__)
