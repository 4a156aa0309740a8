// What the kubelet asks the API server about a request to its metrics paths, written
// from the upstream facts (kubernetes pkg/kubelet/server/auth.go; the TokenReview and
// SubjectAccessReview types of kubernetes/api authentication/v1 and authorization/v1;
// the webhook clients of kubernetes/apiserver plugin/pkg/{authenticator/token,
// authorizer}/webhook):
//  - the bearer token of the Authorization header, read as the API server's bearer token
//    authenticator reads it;
//  - the authorization attributes: the verb from the HTTP method, resource "nodes",
//    subresource from the path ("metrics" for /metrics and /metrics/...), the node's name;
//  - the review bodies sent (POST .../tokenreviews, .../subjectaccessreviews) and the
//    verdicts read from the answers.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace statlet {

inline constexpr char kTokenReviewPath[] = "/apis/authentication.k8s.io/v1/tokenreviews";
inline constexpr char kSubjectAccessReviewPath[] = "/apis/authorization.k8s.io/v1/subjectaccessreviews";

// status.user of a TokenReview.
struct KubeUser {
  std::string username;
  std::string uid;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<std::string>> extra;
};

// The token of "Bearer <token>" (scheme in any case, surrounding white space trimmed);
// empty when the header holds none.
std::string_view BearerToken(std::string_view authorization);

// The kubelet's attributes of a request to it: POST create, GET get, PUT update, PATCH
// patch, DELETE delete, any other method (HEAD too) the empty verb; subresource stats,
// metrics, log, checkpoint by path, else proxy.
struct NodeAttributes {
  std::string verb;
  std::string subresource;
};
NodeAttributes KubeletAttributes(std::string_view method, std::string_view path);

std::string TokenReviewBody(std::string_view token);
struct TokenReviewAnswer {
  bool authenticated = false;
  KubeUser user;
  std::string error;  // status.error: why not
};
// The answer's status (any HTTP 2xx); an error for anything else or unreadable JSON.
StatusOr<TokenReviewAnswer> ParseTokenReview(int http_status, std::string_view body);

// A SubjectAccessReview's spec as JSON (keys sorted, empty fields left out): sent, and
// what its answer is remembered by.
std::string AccessReviewSpec(const KubeUser& user, const NodeAttributes& attributes, const std::string& node);
std::string AccessReviewBody(const std::string& spec_json);
struct AccessReviewAnswer {
  bool allowed = false;
  std::string reason;
};
// allowed, or not (denied or no opinion); both allowed and denied is an error.
StatusOr<AccessReviewAnswer> ParseAccessReview(int http_status, std::string_view body);

}  // namespace statlet
