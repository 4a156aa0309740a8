// --web.*: the HTTP server of /metrics, /healthz and /readyz (HttpServerOptions), as the
// Prometheus exporters name them.
#include "cmd/daemon_flags.h"
#include "exporters/listen_socket.h"

namespace statlet {
namespace {

// host:port, :port or [v6]:port; `empty_ok`: "" too.
StringRule ListenAddress(bool empty_ok) {
  return [empty_ok](const std::string& v) {
    if (empty_ok && v.empty()) return Status::Ok();
    std::string host;
    int port;
    return ParseListenAddress(v, &host, &port);
  };
}

}  // namespace

void RegisterWebFlags(FlagSet& flags, DaemonOptions* o) {
  HttpServerOptions& http = o->http;
  FlagGroup web = flags.Group("web");
  web.String("listen-address", &http.listen_address,
             "Address to listen on for /metrics, /healthz and /readyz (host:port, :port).", ListenAddress(false));
  web.String("telemetry-path", &http.telemetry_path, "Path under which to expose metrics.", AbsolutePath());
  web.String("config.file", &o->web_config_file,
             "Exporter-toolkit web config (TLS cert/key/client CA, basic_auth_users, headers).");
  web.String("health-listen-address", &http.health_listen_address,
             "Also serve /healthz and /readyz on this address, in plain HTTP without auth, for probes (bind it to "
             "loopback, e.g. 127.0.0.1:10341); empty: no such address.",
             ListenAddress(true))
      .Example("127.0.0.1:10341");
  web.Integer("max-connections", &http.max_connections, {1, 65536},
              "Open connections at most; more are answered 503 and closed. Idle and slow connections cost a socket "
              "each, never a thread.");
  web.Integer("max-connections-per-address", &http.max_connections_per_address, {1, 65536},
              "Open connections from one client address at most; more are answered 503 and closed.");
  web.Integer("listen-backlog", &http.listen_backlog, {1, 4096}, "Connections waiting to be accepted at most.");
  web.Duration("read-timeout", &http.read_timeout, {.min = std::chrono::seconds(1)},
               "A whole request (line, headers, body) must arrive within this of its first byte; else 408 and close.");
  web.Duration("write-timeout", &http.write_timeout, {.min = std::chrono::seconds(1)},
               "Timeout for writing a whole response.");
  web.Duration("idle-timeout", &http.keep_alive_timeout, {.min = std::chrono::seconds(1)},
               "How long a connection may wait before (the next) request begins; then it is closed.");
  web.Bytes("max-header-bytes", &http.max_header_bytes, {1024, 1 << 20},
            "Largest request line and header block accepted (else 431 and close).");
  web.Bytes("max-request-bytes", &http.max_request_bytes, {},
            "Largest request body accepted (read and dropped; else 413 and close).");
  web.Integer("gzip-level", &http.gzip_level, {1, 9}, "zlib level (1..9) when a scraper accepts gzip.");
}

}  // namespace statlet
