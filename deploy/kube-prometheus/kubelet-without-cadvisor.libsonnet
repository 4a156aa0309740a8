// For kube-prometheus built with jsonnet: mixed into its object, the kubelet
// ServiceMonitor keeps every endpoint but /metrics/cadvisor, which statlet serves
// (servicemonitor.yaml). README.md shows where it goes.
{
  kubernetesControlPlane+: {
    serviceMonitorKubelet+: {
      spec+: {
        endpoints: std.filter(
          function(e) !(std.objectHas(e, 'path') && e.path == '/metrics/cadvisor'),
          super.endpoints
        ),
      },
    },
  },
}
