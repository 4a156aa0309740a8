#!/usr/bin/python3
"""A test OTLP metrics receiver decoding with stubs generated from the opentelemetry-proto
v1.5.0 files kept under tests/otlp/proto (independent of statlet's own copy and code).

Each request is appended to --out as one JSON line: arrival time, transport details and the
request as protobuf's JSON mapping (field names as in the .proto). Modes:
  ok          answer success
  status503   answer the first --fail-count requests 503 with Retry-After: --retry-after
              (gRPC: UNAVAILABLE with a google.rpc.RetryInfo of that many seconds)
  hang        read the request, never answer (the connection stays open)
  blackhole   any protocol: accept TCP connections, read nothing, answer nothing; each
              accepted connection is recorded with status 0
"""
import argparse
import gzip
import json
import sys
import threading
import time


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gen", required=True)
    ap.add_argument("--protocol", choices=["grpc", "http"], required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--ready", required=True)
    ap.add_argument("--mode", default="ok", choices=["ok", "status503", "hang", "blackhole"])
    ap.add_argument("--fail-count", type=int, default=2)
    ap.add_argument("--retry-after", default="2")
    args = ap.parse_args()
    sys.path.insert(0, args.gen)
    from google.protobuf import json_format
    from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2 as ms

    lock = threading.Lock()
    seen = {"n": 0}
    out = open(args.out, "a", buffering=1)

    def record(entry, request=None):
        entry["t"] = time.time()
        if request is not None:
            entry["request"] = json_format.MessageToDict(request, preserving_proto_field_name=True)
        with lock:
            out.write(json.dumps(entry) + "\n")

    if args.mode == "blackhole":
        import socket
        listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", args.port))
        listener.listen(16)
        open(args.ready, "w").close()
        held = []
        while True:
            conn, _ = listener.accept()
            held.append(conn)  # kept open, never read
            record({"transport": "tcp", "status": 0})

    if args.protocol == "grpc":
        import grpc
        from concurrent import futures
        from opentelemetry.proto.collector.metrics.v1 import metrics_service_pb2_grpc as msg

        from google.protobuf import any_pb2, duration_pb2

        def varint(n):
            out = bytearray()
            while True:
                b = n & 0x7F
                n >>= 7
                out.append(b | (0x80 if n else 0))
                if not n:
                    return bytes(out)

        def length_delimited(number, payload):
            return varint(number << 3 | 2) + varint(len(payload)) + payload

        def status_with_retry_info(seconds):
            # google.rpc.Status {code = 1, message = 2, details = 3} holding a
            # google.rpc.RetryInfo {retry_delay = 1}, as googleapis defines them.
            retry_info = length_delimited(1, duration_pb2.Duration(seconds=seconds).SerializeToString())
            detail = any_pb2.Any(type_url="type.googleapis.com/google.rpc.RetryInfo", value=retry_info)
            return varint(1 << 3) + varint(14) + length_delimited(2, b"unavailable") + \
                length_delimited(3, detail.SerializeToString())

        class Service(msg.MetricsServiceServicer):
            def Export(self, request, context):
                md = dict(context.invocation_metadata())
                with lock:
                    seen["n"] += 1
                    n = seen["n"]
                if args.mode == "status503" and n <= args.fail_count:
                    record({"transport": "grpc", "status": 14, "metadata": md})
                    context.set_trailing_metadata(
                        (("grpc-status-details-bin", status_with_retry_info(int(args.retry_after))),))
                    context.set_code(grpc.StatusCode.UNAVAILABLE)
                    context.set_details("unavailable")
                    return ms.ExportMetricsServiceResponse()
                record({"transport": "grpc", "status": 200, "metadata": md}, request)
                return ms.ExportMetricsServiceResponse()

        server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
        msg.add_MetricsServiceServicer_to_server(Service(), server)
        server.add_insecure_port("127.0.0.1:%d" % args.port)
        server.start()
        open(args.ready, "w").close()
        server.wait_for_termination()
        return

    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def do_POST(self):
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            encoding = self.headers.get("Content-Encoding", "")
            raw = gzip.decompress(body) if encoding == "gzip" else body
            entry = {"transport": "http", "path": self.path, "content_type": self.headers.get("Content-Type", ""),
                     "content_encoding": encoding, "body_bytes": len(body)}
            if args.mode == "hang":
                record(dict(entry, status=0))
                while True:
                    time.sleep(3600)
            with lock:
                seen["n"] += 1
                n = seen["n"]
            request = ms.ExportMetricsServiceRequest()
            request.ParseFromString(raw)
            if args.mode == "status503" and n <= args.fail_count:
                record(dict(entry, status=503))
                self.send_response(503)
                if args.retry_after:
                    self.send_header("Retry-After", args.retry_after)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            record(dict(entry, status=200), request)
            answer = ms.ExportMetricsServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    server.daemon_threads = True
    open(args.ready, "w").close()
    server.serve_forever()


if __name__ == "__main__":
    main()
