#include "base/node_name.h"

#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "base/log.h"

namespace statlet {

Status ValidateNodeName(const std::string& name) {
  if (name.empty() || name.size() > 253) return InvalidArgument("node name must have 1..253 characters");
  for (size_t i = 0; i < name.size(); ++i) {
    char c = name[i];
    bool alnum = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    if (alnum) continue;
    if ((c == '-' || c == '.') && i != 0 && i + 1 != name.size()) continue;
    return InvalidArgument("node name \"" + name + "\" is not a DNS subdomain (lower case letters, digits, '-', '.')");
  }
  return Status::Ok();
}

StatusOr<std::string> ResolveNodeName(const std::string& configured, bool strict) {
  std::string name = configured;
  if (name.empty()) {
    const char* env = std::getenv("NODE_NAME");
    if (env != nullptr) name = env;
  }
  if (name.empty()) {
    char host[256] = {};
    if (gethostname(host, sizeof host - 1) != 0) return ErrnoStatus(errno, "gethostname");
    name = host;
    for (char& c : name) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    // A host name is only a default: a bare host whose name Kubernetes would refuse (a
    // guest's "(none)") still works where no API server is involved.
    if (!strict) {
      if (Status s = ValidateNodeName(name); !s.ok()) log::Warn("the host name is no node name: " + s.message());
      return name;
    }
  }
  if (Status s = ValidateNodeName(name); !s.ok()) return s;
  return name;
}

}  // namespace statlet
