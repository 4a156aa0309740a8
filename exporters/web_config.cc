#include "exporters/web_config.h"

#include <crypt.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <optional>
#include <sstream>

namespace statlet {
namespace {

Status CheckKeys(const YAML::Node& node, const std::string& where, std::initializer_list<const char*> supported) {
  if (!node.IsMap()) return InvalidArgument(where + ": expected a mapping");
  for (const auto& kv : node) {
    std::string key = kv.first.as<std::string>();
    bool ok = false;
    for (const char* s : supported) ok = ok || key == s;
    if (!ok) return InvalidArgument(where + "." + key + " is not supported by statlet");
  }
  return Status::Ok();
}

// Standard base64 with its padding; none when anything else is found.
std::optional<std::string> Base64Decode(std::string_view in) {
  auto val = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    if (c == '+') return 62;
    if (c == '/') return 63;
    return -1;
  };
  if (in.size() % 4 != 0) return std::nullopt;
  size_t pad = 0;
  while (pad < 2 && pad < in.size() && in[in.size() - 1 - pad] == '=') ++pad;
  std::string out;
  int buf = 0, bits = 0;
  for (size_t i = 0; i < in.size() - pad; ++i) {
    int v = val(in[i]);
    if (v < 0) return std::nullopt;
    buf = (buf << 6) | v;
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((buf >> bits) & 0xff));
    }
  }
  return out;
}

// The cost of a "$2b$10$…" hash; 10 when unreadable.
int BcryptCost(const std::string& hash) {
  if (hash.size() < 7 || hash[0] != '$' || hash[3] != '$') return 10;
  int cost = std::atoi(hash.c_str() + 4);
  return cost >= 4 && cost <= 31 ? cost : 10;
}

// A bcrypt hash of a password nobody knows, of the given cost, made once per cost: an
// unknown user's password is checked against it, so the answer takes as long as for a
// known user.
const std::string& DummyHash(int cost) {
  static std::mutex mu;
  static auto* hashes = new std::map<int, std::string>;
  std::lock_guard<std::mutex> lock(mu);
  std::string& h = (*hashes)[cost];
  if (h.empty()) {
    char salt[64];
    crypt_data data;
    std::memset(&data, 0, sizeof data);
    const char* made = crypt_gensalt_rn("$2b$", static_cast<unsigned long>(cost), nullptr, 0, salt, sizeof salt);
    const char* hashed = made != nullptr ? crypt_r("statlet-no-such-user", salt, &data) : nullptr;
    h = hashed != nullptr && hashed[0] != '*' ? hashed : "*";
  }
  return h;
}

bool ConstantTimeEquals(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace

StatusOr<WebConfig> ParseWebConfig(const std::string& yaml_text) {
  WebConfig cfg;
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (root.IsNull()) return cfg;
    if (Status s = CheckKeys(root, "web config", {"tls_server_config", "http_server_config", "basic_auth_users"});
        !s.ok()) {
      return s;
    }
    if (YAML::Node tls = root["tls_server_config"]; tls && !tls.IsNull()) {
      if (Status s =
              CheckKeys(tls, "tls_server_config", {"cert_file", "key_file", "client_ca_file", "client_auth_type"});
          !s.ok()) {
        return s;
      }
      if (tls["cert_file"]) cfg.cert_file = tls["cert_file"].as<std::string>();
      if (tls["key_file"]) cfg.key_file = tls["key_file"].as<std::string>();
      if (tls["client_ca_file"]) cfg.client_ca_file = tls["client_ca_file"].as<std::string>();
      std::string auth = tls["client_auth_type"] ? tls["client_auth_type"].as<std::string>() : "";
      if (auth.empty()) auth = cfg.client_ca_file.empty() ? "NoClientCert" : "RequireAndVerifyClientCert";
      if (auth == "NoClientCert") {
        if (!cfg.client_ca_file.empty()) {
          return InvalidArgument("tls_server_config: client_ca_file needs client_auth_type RequireAndVerifyClientCert");
        }
      } else if (auth == "RequireAndVerifyClientCert") {
        if (cfg.client_ca_file.empty()) {
          return InvalidArgument("tls_server_config: RequireAndVerifyClientCert needs client_ca_file");
        }
      } else {
        return InvalidArgument("tls_server_config.client_auth_type " + auth +
                               " is not supported (use NoClientCert or RequireAndVerifyClientCert)");
      }
      if (cfg.cert_file.empty() != cfg.key_file.empty()) {
        return InvalidArgument("tls_server_config needs both cert_file and key_file");
      }
      if (cfg.cert_file.empty()) return InvalidArgument("tls_server_config without cert_file and key_file");
    }
    if (YAML::Node http = root["http_server_config"]; http && !http.IsNull()) {
      if (Status s = CheckKeys(http, "http_server_config", {"http2", "headers"}); !s.ok()) return s;
      if (http["http2"] && http["http2"].as<bool>()) {
        // HTTP/2 is an optimisation the toolkit enables by default; HTTP/1.1 serves the same data.
      }
      if (YAML::Node headers = http["headers"]; headers && !headers.IsNull()) {
        if (!headers.IsMap()) return InvalidArgument("http_server_config.headers: expected a mapping");
        for (const auto& kv : headers) cfg.headers[kv.first.as<std::string>()] = kv.second.as<std::string>();
      }
    }
    if (YAML::Node users = root["basic_auth_users"]; users && !users.IsNull()) {
      if (!users.IsMap()) return InvalidArgument("basic_auth_users: expected a mapping of user to bcrypt hash");
      for (const auto& kv : users) {
        std::string user = kv.first.as<std::string>();
        std::string hash = kv.second.as<std::string>();
        if (hash.rfind("$2", 0) != 0) return InvalidArgument("basic_auth_users." + user + ": not a bcrypt hash");
        if (user.find(':') != std::string::npos) return InvalidArgument("basic_auth_users: user names cannot hold ':'");
        cfg.basic_auth_users[user] = hash;
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("web config: ") + e.what());
  }
  return cfg;
}

StatusOr<WebConfig> LoadWebConfig(const std::string& path) {
  std::ifstream in(path);
  if (!in) return ErrnoStatus(errno, "open web config " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  auto cfg = ParseWebConfig(ss.str());
  if (!cfg.ok()) return Status(cfg.status().code(), path + ": " + cfg.status().message());
  return cfg;
}

bool CheckBasicAuth(const WebConfig& config, const std::string& header) {
  if (config.basic_auth_users.empty()) return true;
  constexpr std::string_view kBasic = "Basic ";
  if (header.size() <= kBasic.size() || header.compare(0, kBasic.size(), kBasic) != 0) return false;
  std::optional<std::string> decoded = Base64Decode(std::string_view(header).substr(kBasic.size()));
  if (!decoded) return false;
  // crypt(3) reads C strings: a NUL would cut the password short and let "pw\0junk" in.
  if (decoded->find('\0') != std::string::npos) return false;
  size_t colon = decoded->find(':');
  if (colon == std::string::npos) return false;
  const std::string user = decoded->substr(0, colon);
  const std::string password = decoded->substr(colon + 1);
  auto it = config.basic_auth_users.find(user);
  int cost = 0;
  for (const auto& [u, h] : config.basic_auth_users) cost = std::max(cost, BcryptCost(h));
  const std::string& hash = it != config.basic_auth_users.end() ? it->second : DummyHash(cost);
  crypt_data data;
  std::memset(&data, 0, sizeof data);
  const char* hashed = crypt_r(password.c_str(), hash.c_str(), &data);
  const bool match = hashed != nullptr && hashed[0] != '*' && ConstantTimeEquals(hashed, hash);
  return match && it != config.basic_auth_users.end();
}

}  // namespace statlet
