// libFuzzer target for what image pulls parse from clients and from the runtime: image
// references (any CRI client sends them) and manifests (read from containerd's content
// store). The first byte picks the parser. Parsers must never crash, hang or read out of
// bounds, and what they accept must be self-consistent.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "pulls/content_source.h"
#include "pulls/image_name.h"

using namespace statlet::pulls;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string in(reinterpret_cast<const char*>(data) + 1, size - 1);
  if (data[0] % 2 == 0) {
    auto name = ParseImageName(in);
    if (name.ok()) {
      // A normalized reference parses to itself.
      auto again = ParseImageName(name->Normalized());
      if (!again.ok() || again->Normalized() != name->Normalized()) std::abort();
      if (name->domain.empty() || name->path.empty() || (name->tag.empty() && name->digest.empty())) std::abort();
    }
  } else {
    auto m = ParseManifest("sha256:" + std::string(64, '0'), in);
    if (m.ok() && m->config_digest.empty()) std::abort();
  }
  return 0;
}
