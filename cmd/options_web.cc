// --web.*: the HTTP server of /metrics, /healthz and /readyz (HttpServerOptions), as the
// Prometheus exporters name them.
#include "base/node_name.h"
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

StringRule NodeName() {
  return [](const std::string& v) { return v.empty() ? Status::Ok() : ValidateNodeName(v); };
}

// --web.auth.*: the API server's reviews of bearer tokens (KubernetesAuthOptions).
void RegisterKubernetesAuthFlags(FlagGroup& web, DaemonOptions* o) {
  using std::chrono::seconds;
  KubernetesAuthOptions& k = o->kube_auth;
  web.Enum("auth", &o->web_auth_kubernetes, {{"none", false}, {"kubernetes", true}},
           "Who may use the main address besides basic auth users of the web config: none (anyone), or kubernetes "
           "(a bearer token checked with the API server's TokenReview, the request authorized with a "
           "SubjectAccessReview as the kubelet authorizes its /metrics: get nodes/metrics for this node; the probe "
           "address stays open). Bearer tokens want TLS (--web.config.file).");
  web.String("auth.apiserver", &k.api.url,
             "The API server that reviews tokens for --web.auth=kubernetes: in-cluster (the service account's host, "
             "token and CA) or https://host:port.",
             ApiServerUrl(/*empty_ok=*/false));
  web.String("auth.token-file", &k.api.token_file,
             "statlet's own bearer token for the reviews (read again when the file changes).", NotEmpty());
  web.String("auth.ca-file", &k.api.ca_file, "CA bundle the API server's certificate is checked against.", NotEmpty());
  web.String("auth.node-name", &k.node_name,
             "The node whose nodes/metrics access is reviewed; empty: $NODE_NAME, else the host name.", NodeName())
      .Example("node-a");
  web.Duration("auth.token-cache-ttl", &k.token_ttl, {.min = seconds(1)},
               "How long a TokenReview's answer (authenticated or not) is remembered (the kubelet's default).");
  web.Duration("auth.allowed-cache-ttl", &k.allowed_ttl, {.min = seconds(1)},
               "How long an allowing SubjectAccessReview is remembered (the kubelet's default).");
  web.Duration("auth.denied-cache-ttl", &k.denied_ttl, {.min = seconds(1)},
               "How long a SubjectAccessReview that did not allow is remembered (the kubelet's default).");
  web.Real("auth.reviews-per-second", &k.reviews_per_second, {.min = 0, .max = 10000, .min_open = true},
           "Reviews of tokens not seen to authenticate before, per second at most (bursts of twice that); requests "
           "past it are answered 429. Tokens that authenticated before have a budget of their own.");
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
  RegisterKubernetesAuthFlags(web, o);
  web.Integer("max-connections", &http.max_connections, {1, 65536},
              "Open connections at most; more are answered 503 and closed. Idle and slow connections cost a socket "
              "each, never a thread.");
  web.Integer("max-connections-per-address", &http.max_connections_per_address, {1, 65536},
              "Open connections from one client address at most; more are answered 503 and closed.");
  web.Integer("max-streams-per-address", &http.max_streams_per_address, {0, 65535},
              "Streamed answers (KEP-5334 image pull progress URLs) open from one client address at most; more are "
              "answered 503. Below --web.max-connections-per-address, so that an address with every stream open "
              "still gets /healthz and /metrics answered; 0: three quarters of it (48 of 64).");
  web.Integer("listen-backlog", &http.listen_backlog, {1, 4096}, "Connections waiting to be accepted at most.");
  web.Duration("read-timeout", &http.read_timeout, {.min = std::chrono::seconds(1)},
               "A whole request (line, headers, body) must arrive within this of its first byte; else 408 and close.");
  web.Duration("write-timeout", &http.write_timeout, {.min = std::chrono::seconds(1)},
               "Timeout for writing a whole response.");
  web.Duration("stream-peer-timeout", &http.stream_peer_timeout,
               // At most a day: the keepalive probes' idle time and interval (a third of it)
               // must stay within the kernel's 32,767 s.
               {.min = std::chrono::seconds(1), .max = std::chrono::hours(24), .whole_seconds = true},
               "A streamed answer (a KEP-5334 progress URL) whose client acknowledges nothing for this long (TCP "
               "keepalive probes while the stream is idle, sent bytes otherwise) is dropped: a client that vanished "
               "without closing frees its stream and connection places.");
  web.Duration("idle-timeout", &http.keep_alive_timeout, {.min = std::chrono::seconds(1)},
               "How long a connection may wait before (the next) request begins; then it is closed.");
  web.Bytes("max-header-bytes", &http.max_header_bytes, {1024, 1 << 20},
            "Largest request line and header block accepted (else 431 and close).");
  web.Bytes("max-request-bytes", &http.max_request_bytes, {},
            "Largest request body accepted (read and dropped; else 413 and close).");
  web.Integer("gzip-level", &http.gzip_level, {1, 9}, "zlib level (1..9) when a scraper accepts gzip.");
}

}  // namespace statlet
