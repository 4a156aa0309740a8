// --pull.*: image pulls through the CRI socket's image service (pulls::ImagePullOptions).
#include "cmd/daemon_flags.h"

namespace statlet {
Status CheckStreamFlags(const DaemonOptions& o) {
  const HttpServerOptions& http = o.http;
  if (http.max_streams_per_address != 0 && http.max_streams_per_address >= http.max_connections_per_address) {
    return InvalidArgument("--web.max-streams-per-address (" + std::to_string(http.max_streams_per_address) +
                           ") must be below --web.max-connections-per-address (" +
                           std::to_string(http.max_connections_per_address) +
                           "): an address with every stream open must still get /healthz answered");
  }
  if (o.pulls.enabled && StreamsPerAddress(http) == 0) {
    return InvalidArgument("--web.max-connections-per-address (" + std::to_string(http.max_connections_per_address) +
                           ") leaves no stream place per address (three quarters of it, rounded down): set "
                           "--web.max-streams-per-address or raise the connections");
  }
  if (o.pulls.enabled && o.pulls.max_progress_streams >= http.max_connections) {
    return InvalidArgument("--pull.max-progress-streams (" + std::to_string(o.pulls.max_progress_streams) +
                           ") must be below --web.max-connections (" + std::to_string(http.max_connections) +
                           "): progress streams must not take every connection place");
  }
  return Status::Ok();
}

void RegisterPullFlags(FlagSet& flags, DaemonOptions* o) {
  using std::chrono::milliseconds;
  using std::chrono::seconds;
  pulls::ImagePullOptions& p = o->pulls;
  FlagGroup pull = flags.Group("pull");
  pull.Bool("enabled", &p.enabled,
            "Serve image pulls on the CRI socket: PullImage, PullImageWithProgress (KEP-3542) and PullImageProgress "
            "through one runtime pull per image, the other image calls passed to the runtime. Off: every image call "
            "answers UNIMPLEMENTED.");
  pull.String("containerd-endpoint", &p.containerd_endpoint,
              "containerd's socket, whose content service shows pull progress; empty: the runtime endpoint.",
              UnixEndpoint({""}))
      .Example("unix:///run/containerd/containerd.sock");
  pull.String("containerd-namespace", &p.containerd_namespace, "containerd namespace of the CRI plugin's images.",
              NotEmpty());
  pull.Duration("no-progress-timeout", &p.no_progress_timeout, {.whole_seconds = true},
                "Cancel a pull when no byte arrived for this long (whole seconds): for PullImage, PullImageProgress, "
                "PullImageWithProgress calls that do not set their own, and pulls no client follows any more. 0: "
                "never.");
  pull.Duration("poll-interval", &p.poll_interval, {.min = milliseconds(50), .max = seconds(10)},
                "How often the content store is asked for the progress of all pulls in flight (one poll for all).");
  pull.List("observe-namespaces", &p.observe_namespaces, ListForm::kCommaSeparated,
            "containerd namespaces whose pulls statlet does not carry (the kubelet's straight on containerd in "
            "k8s.io, ctr's in default) are followed from containerd's leases, ingests and images, shown in the same "
            "view; statlet cannot cancel them. Empty: none.");
  pull.Duration("observe-interval", &p.observe_interval, {.min = milliseconds(100), .max = seconds(60)},
                "How often those namespaces are asked whether a pull started (one ListStatuses each) while none is "
                "followed; while one is, every --pull.poll-interval.");
  pull.Bool("keep-abandoned", &p.keep_abandoned,
            "When the last client of a pull leaves, let the pull finish (the bytes are not wasted) instead of "
            "cancelling it.");
  pull.Integer("max-pulls", &p.max_pulls, {1, 1024},
               "Different images pulled at once; more answer RESOURCE_EXHAUSTED.");
  pull.Integer("max-clients", &p.max_subscribers, {1, 65536},
               "Pull calls followed at once (all images); more answer RESOURCE_EXHAUSTED.");
  pull.Duration("progress-url-ttl", &p.progress_url_ttl, {.max = seconds(3600), .whole_seconds = true},
                "How long a KEP-5334 ImagePullProgress URL may wait to be opened; unused, it expires (0: at once, "
                "every URL is refused).");
  pull.Integer("max-progress-streams", &p.max_progress_streams, {1, 4096},
               "KEP-5334 progress streams open at once (all client addresses; one address holds at most "
               "--web.max-streams-per-address of them); opening more answers 503. Below --web.max-connections.");
  pull.Duration("status-period", &p.status_period, {.min = seconds(1), .max = seconds(60), .whole_seconds = true},
                "How often this node's NodeImagePulls object (pulls in flight and recently finished) is rebuilt, "
                "served on /imagepulls and, with --pull.apiserver, applied: 1s..1m.");
  pull.String("node-name", &p.node_name,
              "Name of this node's NodeImagePulls object; empty: $NODE_NAME, else the host name.");
  pull.String("apiserver", &p.apiserver,
              "Server-side-apply the NodeImagePulls object to the Kubernetes API server (rate limited to one write "
              "per status period, only on change or every minute): \"in-cluster\" (the service account's host, "
              "token and CA) or https://host:port; empty: off.",
              ApiServerUrl(/*empty_ok=*/true))
      .Example("in-cluster");
  pull.String("apiserver-token-file", &p.apiserver_token_file,
              "Bearer token for --pull.apiserver (read again when the file changes); empty: the service account's.");
  pull.String("apiserver-ca-file", &p.apiserver_ca_file,
              "CA bundle the API server's certificate is checked against; empty: the service account's.");
}

}  // namespace statlet
