#include "pulls/progress_line.h"

#include <nlohmann/json.hpp>

namespace statlet::pulls {

void AppendProgressLine(const ProgressEntry& e, std::string* out) {
  nlohmann::ordered_json j;
  if (!e.image.empty()) j["image"] = e.image;
  if (!e.layer.empty()) j["layer"] = e.layer;
  j["progress"] = e.progress;
  j["total"] = e.total;
  if (!e.error.empty()) j["error"] = e.error;
  *out += j.dump(-1, ' ', false, nlohmann::ordered_json::error_handler_t::replace);
  out->push_back('\n');
}

}  // namespace statlet::pulls
