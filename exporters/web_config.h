// The exporter-toolkit web configuration file (--web.config.file), as Prometheus exporters
// use it: TLS server settings and basic-auth users with bcrypt hashes. statlet implements
// what its HTTP library can honour and rejects the rest with a clear error instead of
// silently serving with weaker settings than configured.
#pragma once

#include <map>
#include <string>

#include "base/status.h"

namespace statlet {

struct WebConfig {
  // tls_server_config
  std::string cert_file;
  std::string key_file;
  std::string client_ca_file;  // set: clients must present a certificate signed by this CA
  // http_server_config.headers: added to every response
  std::map<std::string, std::string> headers;
  // basic_auth_users: user -> bcrypt hash
  std::map<std::string, std::string> basic_auth_users;

  bool tls() const { return !cert_file.empty(); }
};

StatusOr<WebConfig> ParseWebConfig(const std::string& yaml_text);
StatusOr<WebConfig> LoadWebConfig(const std::string& path);

// Checks an "Authorization: Basic …" header against the configured users (bcrypt; costs
// what the hash's cost says). True when no users are configured. An unknown user costs
// the same as a wrong password (checked against a dummy hash of the highest configured
// cost), a user or password holding NUL or a malformed header is refused, and the hashes
// are compared in constant time.
bool CheckBasicAuth(const WebConfig& config, const std::string& authorization_header);

}  // namespace statlet
