#!/usr/bin/python3
"""Checks one of statlet's proto/containerd_*.proto against containerd's own (e.g.
api/services/content/v1/content.proto): every message and field statlet declares exists
upstream with the same number, name, type and label, and every RPC with the same request,
response and streaming. At least MIN_FIELDS fields (default 20) must have been compared.

usage: compare_content_proto.py STATLET_PROTO UPSTREAM_PROTO [MIN_FIELDS]"""
import os
import subprocess
import sys
import tempfile

from google.protobuf import descriptor_pb2


def load(path):
    with tempfile.NamedTemporaryFile(suffix=".desc") as out:
        subprocess.run(["protoc", "--proto_path=" + os.path.dirname(path), "--proto_path=/usr/include",
                        "--descriptor_set_out=" + out.name, os.path.basename(path)], check=True)
        s = descriptor_pb2.FileDescriptorSet()
        s.ParseFromString(out.read())
    return s.file[0]


def main():
    ours, theirs = load(sys.argv[1]), load(sys.argv[2])
    errors = []
    if ours.package != theirs.package:
        errors.append("package %s != %s" % (ours.package, theirs.package))
    upstream = {m.name: m for m in theirs.message_type}
    fields = 0
    for m in ours.message_type:
        u = upstream.get(m.name)
        if u is None:
            errors.append("message %s is not upstream" % m.name)
            continue
        by_number = {f.number: f for f in u.field}
        for f in m.field:
            uf = by_number.get(f.number)
            if uf is None:
                errors.append("%s.%s = %d is not upstream" % (m.name, f.name, f.number))
                continue
            for attr in ("name", "type", "label", "type_name"):
                if getattr(f, attr) != getattr(uf, attr):
                    errors.append("%s.%s: %s %r upstream %r" % (m.name, f.name, attr, getattr(f, attr), getattr(uf, attr)))
            fields += 1
    services = {s.name: s for s in theirs.service}
    for s in ours.service:
        us = services.get(s.name)
        if us is None:
            errors.append("service %s is not upstream" % s.name)
            continue
        methods = {x.name: x for x in us.method}
        for x in s.method:
            ux = methods.get(x.name)
            if ux is None:
                errors.append("rpc %s is not upstream" % x.name)
                continue
            for attr in ("input_type", "output_type", "client_streaming", "server_streaming"):
                if getattr(x, attr) != getattr(ux, attr):
                    errors.append("rpc %s: %s %r upstream %r" % (x.name, attr, getattr(x, attr), getattr(ux, attr)))
    for e in errors:
        print(e)
    print("%d fields compared" % fields)
    min_fields = int(sys.argv[3]) if len(sys.argv) > 3 else 20
    return 1 if errors or fields < min_fields else 0


if __name__ == "__main__":
    sys.exit(main())
