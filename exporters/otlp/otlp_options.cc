#include "exporters/otlp/otlp_options.h"

#include <cctype>
#include <cstdlib>

namespace statlet::otlp {
namespace {

std::string Trim(const std::string& s) {
  size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return s.substr(b, e - b);
}

bool PercentDecode(const std::string& in, std::string* out) {
  out->clear();
  for (size_t i = 0; i < in.size(); ++i) {
    if (in[i] != '%') {
      out->push_back(in[i]);
      continue;
    }
    if (i + 2 >= in.size() || !std::isxdigit(static_cast<unsigned char>(in[i + 1])) ||
        !std::isxdigit(static_cast<unsigned char>(in[i + 2]))) {
      return false;
    }
    out->push_back(static_cast<char>(std::stoi(in.substr(i + 1, 2), nullptr, 16)));
    i += 2;
  }
  return true;
}

}  // namespace

Status ParseKeyValueList(const std::string& text, std::vector<std::pair<std::string, std::string>>* out) {
  std::vector<std::pair<std::string, std::string>> parsed;
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    start = comma == std::string::npos ? text.size() + 1 : comma + 1;
    if (Trim(item).empty()) continue;
    size_t eq = item.find('=');
    if (eq == std::string::npos) return InvalidArgument("expected key=value, got \"" + item + "\"");
    std::string key = Trim(item.substr(0, eq)), value;
    if (key.empty()) return InvalidArgument("empty key in \"" + item + "\"");
    if (!PercentDecode(Trim(item.substr(eq + 1)), &value))
      return InvalidArgument("bad percent-encoding in \"" + item + "\"");
    parsed.emplace_back(std::move(key), std::move(value));
  }
  for (auto& kv : parsed) out->push_back(std::move(kv));
  return Status::Ok();
}

Status ParseProtocol(const std::string& text, Protocol* out) {
  if (text == "grpc") *out = Protocol::kGrpc;
  else if (text == "http/protobuf") *out = Protocol::kHttpProtobuf;
  else return InvalidArgument("otlp protocol: expected grpc or http/protobuf, got \"" + text + "\"");
  return Status::Ok();
}

Status ApplyEnvironment(const std::function<const char*(const char*)>& getenv, OtlpOptions* o) {
  // The signal-specific variable wins over the generic one; an empty value is unset.
  auto get = [&](const char* generic, const char* metrics, bool* from_metrics = nullptr) -> std::string {
    if (const char* v = getenv(metrics); v && *v) {
      if (from_metrics) *from_metrics = true;
      return v;
    }
    if (const char* v = getenv(generic); v && *v) return v;
    return "";
  };
  auto millis = [](const std::string& name, const std::string& v, std::chrono::milliseconds* out) -> Status {
    char* end = nullptr;
    long long n = std::strtoll(v.c_str(), &end, 10);
    if (*end != '\0' || n < 0) return InvalidArgument(name + ": expected milliseconds, got \"" + v + "\"");
    *out = std::chrono::milliseconds(n);
    return Status::Ok();
  };
  if (std::string v = get("OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_METRICS_PROTOCOL"); !v.empty()) {
    if (Status s = ParseProtocol(v, &o->protocol); !s.ok()) return s;
  }
  bool full = false;
  if (std::string v = get("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", &full); !v.empty()) {
    o->endpoint = v;
    o->endpoint_is_full_url = full;
  }
  if (std::string v = get("OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_METRICS_HEADERS"); !v.empty()) {
    if (Status s = ParseKeyValueList(v, &o->headers); !s.ok())
      return InvalidArgument("OTEL_EXPORTER_OTLP_HEADERS: " + s.message());
  }
  if (std::string v = get("OTEL_EXPORTER_OTLP_TIMEOUT", "OTEL_EXPORTER_OTLP_METRICS_TIMEOUT"); !v.empty()) {
    if (Status s = millis("OTEL_EXPORTER_OTLP_TIMEOUT", v, &o->timeout); !s.ok()) return s;
  }
  if (std::string v = get("OTEL_EXPORTER_OTLP_COMPRESSION", "OTEL_EXPORTER_OTLP_METRICS_COMPRESSION"); !v.empty()) {
    if (v != "gzip" && v != "none") return InvalidArgument("OTEL_EXPORTER_OTLP_COMPRESSION: expected gzip or none");
    o->gzip = v == "gzip";
  }
  if (std::string v = get("OTEL_EXPORTER_OTLP_CERTIFICATE", "OTEL_EXPORTER_OTLP_METRICS_CERTIFICATE"); !v.empty()) {
    o->ca_file = v;
  }
  if (std::string v = get("OTEL_EXPORTER_OTLP_INSECURE", "OTEL_EXPORTER_OTLP_METRICS_INSECURE"); !v.empty()) {
    std::string lower;
    for (char c : v) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    o->insecure = lower == "true";
  }
  if (const char* v = getenv("OTEL_METRIC_EXPORT_INTERVAL"); v && *v) {
    if (Status s = millis("OTEL_METRIC_EXPORT_INTERVAL", v, &o->interval); !s.ok()) return s;
  }
  if (const char* v = getenv("OTEL_RESOURCE_ATTRIBUTES"); v && *v) {
    // On any error the whole variable is discarded (the resource SDK's rule).
    std::vector<std::pair<std::string, std::string>> attrs;
    if (Status s = ParseKeyValueList(v, &attrs); !s.ok())
      return InvalidArgument("OTEL_RESOURCE_ATTRIBUTES: " + s.message());
    o->resource_attributes = std::move(attrs);
  }
  if (const char* v = getenv("OTEL_SERVICE_NAME"); v && *v) o->service_name = v;
  return Status::Ok();
}

std::string HttpUrl(const OtlpOptions& o) {
  std::string url = o.endpoint;
  if (url.find("://") == std::string::npos) url = (o.insecure ? "http://" : "https://") + url;
  if (o.endpoint_is_full_url) {
    if (url.find('/', url.find("://") + 3) == std::string::npos) url += "/";
    return url;
  }
  if (url.empty() || url.back() != '/') url += "/";
  return url + "v1/metrics";
}

}  // namespace statlet::otlp
