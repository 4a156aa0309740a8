#include "exporters/kube_reviews.h"

#include <nlohmann/json.hpp>

#include <cctype>

namespace statlet {
namespace {

using nlohmann::json;

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

// isSubpath of pkg/kubelet/server/auth.go: `path` itself (without a trailing '/') or below it.
bool IsSubpath(std::string_view subpath, std::string_view path) {
  if (!path.empty() && path.back() == '/') path.remove_suffix(1);
  return subpath == path ||
         (subpath.size() > path.size() && subpath.substr(0, path.size()) == path && subpath[path.size()] == '/');
}

std::string Excerpt(std::string_view body) {
  std::string s(body.substr(0, 200));
  for (char& c : s) {
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  }
  return s;
}

StatusOr<json> ParseAnswer(const char* kind, int http_status, std::string_view body) {
  if (http_status < 200 || http_status > 299) {
    return Unavailable(std::string(kind) + ": HTTP " + std::to_string(http_status) + ": " + Excerpt(body));
  }
  json j = json::parse(body.begin(), body.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Unavailable(std::string(kind) + ": the answer is no JSON object");
  const json& status = j["status"];
  if (!status.is_object()) return Unavailable(std::string(kind) + ": the answer has no status");
  return status;
}

bool GetBool(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}

std::string GetString(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::string_view BearerToken(std::string_view authorization) {
  while (!authorization.empty() && IsSpace(authorization.front())) authorization.remove_prefix(1);
  while (!authorization.empty() && IsSpace(authorization.back())) authorization.remove_suffix(1);
  // strings.SplitN(auth, " ", 3): the scheme, the token, and whatever follows another space.
  const size_t space = authorization.find(' ');
  if (space == std::string_view::npos || space != 6) return {};
  for (size_t i = 0; i < 6; ++i) {
    if (std::tolower(static_cast<unsigned char>(authorization[i])) != "bearer"[i]) return {};
  }
  std::string_view token = authorization.substr(space + 1);
  return token.substr(0, token.find(' '));
}

NodeAttributes KubeletAttributes(std::string_view method, std::string_view path) {
  NodeAttributes a;
  if (method == "POST") a.verb = "create";
  else if (method == "GET") a.verb = "get";
  else if (method == "PUT") a.verb = "update";
  else if (method == "PATCH") a.verb = "patch";
  else if (method == "DELETE") a.verb = "delete";
  if (IsSubpath(path, "/stats/")) a.subresource = "stats";
  else if (IsSubpath(path, "/metrics")) a.subresource = "metrics";
  else if (IsSubpath(path, "/logs/")) a.subresource = "log";
  else if (IsSubpath(path, "/checkpoint/")) a.subresource = "checkpoint";
  else a.subresource = "proxy";
  return a;
}

std::string TokenReviewBody(std::string_view token) {
  json j = {
      {"apiVersion", "authentication.k8s.io/v1"}, {"kind", "TokenReview"}, {"spec", {{"token", std::string(token)}}}};
  return j.dump();
}

StatusOr<TokenReviewAnswer> ParseTokenReview(int http_status, std::string_view body) {
  auto status = ParseAnswer("TokenReview", http_status, body);
  if (!status.ok()) return status.status();
  TokenReviewAnswer a;
  a.authenticated = GetBool(*status, "authenticated");
  a.error = GetString(*status, "error");
  if (!a.authenticated) return a;
  auto user = status->find("user");
  if (user == status->end() || !user->is_object()) return Unavailable("TokenReview: authenticated without a user");
  a.user.username = GetString(*user, "username");
  a.user.uid = GetString(*user, "uid");
  if (auto g = user->find("groups"); g != user->end() && g->is_array()) {
    for (const json& e : *g) {
      if (e.is_string()) a.user.groups.push_back(e.get<std::string>());
    }
  }
  if (auto x = user->find("extra"); x != user->end() && x->is_object()) {
    for (const auto& [k, v] : x->items()) {
      std::vector<std::string>& values = a.user.extra[k];
      if (!v.is_array()) continue;
      for (const json& e : v) {
        if (e.is_string()) values.push_back(e.get<std::string>());
      }
    }
  }
  if (a.user.username.empty()) return Unavailable("TokenReview: authenticated without a user name");
  return a;
}

std::string AccessReviewSpec(const KubeUser& user, const NodeAttributes& attributes, const std::string& node) {
  // ResourceAttributes: namespace and group are empty for nodes, and left out (omitempty)
  // as every other empty field.
  json resource = {{"version", "v1"}, {"resource", "nodes"}, {"subresource", attributes.subresource}, {"name", node}};
  if (!attributes.verb.empty()) resource["verb"] = attributes.verb;
  json spec = {{"resourceAttributes", resource}, {"user", user.username}};
  if (!user.uid.empty()) spec["uid"] = user.uid;
  if (!user.groups.empty()) spec["groups"] = user.groups;
  if (!user.extra.empty()) spec["extra"] = user.extra;
  return spec.dump();
}

std::string AccessReviewBody(const std::string& spec_json) {
  return R"({"apiVersion":"authorization.k8s.io/v1","kind":"SubjectAccessReview","spec":)" + spec_json + "}";
}

StatusOr<AccessReviewAnswer> ParseAccessReview(int http_status, std::string_view body) {
  auto status = ParseAnswer("SubjectAccessReview", http_status, body);
  if (!status.ok()) return status.status();
  AccessReviewAnswer a;
  a.allowed = GetBool(*status, "allowed");
  a.reason = GetString(*status, "reason");
  if (a.allowed && GetBool(*status, "denied")) {
    return Unavailable("SubjectAccessReview: the answer both allows and denies");
  }
  return a;
}

}  // namespace statlet
