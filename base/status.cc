#include "base/status.h"

#include <cstring>

namespace statlet {

const char* StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kGone: return "GONE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  return std::string(StatusCodeName(code_)) + ": " + message_;
}

bool ErrnoMeansGone(int err) { return err == ENOENT || err == ENODEV || err == ESRCH; }

Status ErrnoStatus(int err, const std::string& what) {
  if (ErrnoMeansGone(err)) return {StatusCode::kGone, what + ": " + std::strerror(err)};
  StatusCode code = StatusCode::kInternal;
  switch (err) {
    case EINVAL: code = StatusCode::kInvalidArgument; break;
    case EACCES:
    case EPERM:
    case EAGAIN:
    case ECONNREFUSED: code = StatusCode::kUnavailable; break;
    default: break;
  }
  return {code, what + ": " + std::strerror(err)};
}

}  // namespace statlet
