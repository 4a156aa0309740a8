#include "pulls/image_name.h"

namespace statlet::pulls {
namespace {

constexpr size_t kMaxNameLength = 255;  // distribution's NameTotalLengthMax
constexpr size_t kMaxTagLength = 128;

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }
bool IsHex(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'); }

// One path component: [a-z0-9]+ joined by ".", "_", "__" or runs of "-".
bool ValidComponent(std::string_view c) {
  if (c.empty() || !IsLowerAlnum(c.front()) || !IsLowerAlnum(c.back())) return false;
  for (size_t i = 0; i < c.size(); ++i) {
    char ch = c[i];
    if (IsLowerAlnum(ch) || ch == '-') continue;
    if (ch == '.' && IsLowerAlnum(c[i + 1])) continue;
    if (ch == '_' && (IsLowerAlnum(c[i + 1]) || (c[i + 1] == '_' && i + 2 < c.size() && IsLowerAlnum(c[i + 2])))) {
      if (c[i + 1] == '_') ++i;
      continue;
    }
    return false;
  }
  return true;
}

bool ValidDomain(std::string_view d) {
  if (d.empty()) return false;
  std::string_view host = d;
  if (size_t colon = d.rfind(':'); colon != std::string_view::npos && d.front() != '[') {
    std::string_view port = d.substr(colon + 1);
    if (port.empty() || port.size() > 5) return false;
    for (char c : port) {
      if (c < '0' || c > '9') return false;
    }
    host = d.substr(0, colon);
  }
  if (host.empty()) return false;
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
              c == '[' || c == ']' || c == ':';
    if (!ok) return false;
  }
  return true;
}

bool ValidTag(std::string_view t) {
  if (t.empty() || t.size() > kMaxTagLength) return false;
  auto word = [](char c) { return IsLowerAlnum(c) || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (!word(t.front())) return false;
  for (char c : t) {
    if (!word(c) && c != '.' && c != '-') return false;
  }
  return true;
}

bool ValidDigest(std::string_view d) {
  size_t colon = d.find(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::string_view algo = d.substr(0, colon), hex = d.substr(colon + 1);
  if (algo == "sha256" && hex.size() != 64) return false;
  if (algo == "sha512" && hex.size() != 128) return false;
  if (algo != "sha256" && algo != "sha512") return false;
  for (char c : hex) {
    if (!IsHex(c)) return false;
  }
  return true;
}

}  // namespace

std::string ImageName::Normalized() const {
  std::string out = domain + "/" + path;
  if (!tag.empty()) out += ":" + tag;
  if (!digest.empty()) out += "@" + digest;
  return out;
}

std::string ImageName::Hostname() const {
  if (!domain.empty() && domain.front() == '[') {
    size_t close = domain.find(']');
    return close == std::string::npos ? domain : domain.substr(0, close + 1);
  }
  size_t colon = domain.rfind(':');
  return colon == std::string::npos ? domain : domain.substr(0, colon);
}

StatusOr<ImageName> ParseImageName(std::string_view reference) {
  auto bad = [&](const char* why) {
    return InvalidArgument("image reference \"" + std::string(reference.substr(0, 300)) + "\": " + why);
  };
  if (reference.empty()) return bad("empty");
  ImageName out;
  std::string_view rest = reference;
  if (size_t at = rest.find('@'); at != std::string_view::npos) {
    out.digest = std::string(rest.substr(at + 1));
    if (!ValidDigest(out.digest)) return bad("bad digest");
    rest = rest.substr(0, at);
  }
  // A tag is after the last ':' that follows the last '/' (a ':' before it is a port).
  size_t last_slash = rest.rfind('/');
  size_t colon = rest.rfind(':');
  if (colon != std::string_view::npos && (last_slash == std::string_view::npos || colon > last_slash)) {
    out.tag = std::string(rest.substr(colon + 1));
    if (!ValidTag(out.tag)) return bad("bad tag");
    rest = rest.substr(0, colon);
  }
  if (rest.size() > kMaxNameLength) return bad("name longer than 255 characters");  // early out
  std::string_view first = rest.substr(0, rest.find('/'));
  bool has_domain =
      rest.find('/') != std::string_view::npos &&
      (first.find('.') != std::string_view::npos || first.find(':') != std::string_view::npos || first == "localhost" ||
       first.find_first_of("ABCDEFGHIJKLMNOPQRSTUVWXYZ") != std::string_view::npos);
  std::string_view path = rest;
  if (has_domain) {
    if (!ValidDomain(first)) return bad("bad registry host");
    out.domain = std::string(first);
    path = rest.substr(first.size() + 1);
  } else {
    out.domain = "docker.io";
  }
  if (out.domain == "index.docker.io") out.domain = "docker.io";
  size_t start = 0;
  while (start <= path.size()) {
    size_t slash = path.find('/', start);
    const size_t len = slash == std::string_view::npos ? std::string_view::npos : slash - start;
    std::string_view component = path.substr(start, len);
    if (!ValidComponent(component)) return bad("bad repository name (lower case letters, digits, '.', '_', '-')");
    if (slash == std::string_view::npos) break;
    start = slash + 1;
  }
  out.path = std::string(path);
  if (out.domain == "docker.io" && out.path.find('/') == std::string::npos) out.path = "library/" + out.path;
  // The limit applies to the name as the runtime spells it (domain and library/ included).
  if (out.domain.size() + 1 + out.path.size() > kMaxNameLength) return bad("name longer than 255 characters");
  if (!out.digest.empty()) out.tag.clear();  // pinned: the runtime pulls by digest
  if (out.tag.empty() && out.digest.empty()) out.tag = "latest";
  return out;
}

}  // namespace statlet::pulls
