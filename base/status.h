// Status / StatusOr: error values that cross module edges instead of exceptions.
#pragma once

#include <string>
#include <utility>
#include <variant>

namespace statlet {

enum class StatusCode {
  kOk = 0,
  kInvalidArgument,
  kNotFound,
  kUnavailable,
  kResourceExhausted,  // a bound of statlet's is full: the caller may try again later
  kUnimplemented,
  kInternal,
  kGone,      // the object (cgroup, process, namespace) disappeared while we looked
  kDataLoss,  // a file had content we could not parse
};

const char* StatusCodeName(StatusCode code);

class [[nodiscard]] Status {
 public:
  Status() = default;
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  static Status Ok() { return {}; }
  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }
  std::string ToString() const;

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

inline Status InvalidArgument(std::string m) { return {StatusCode::kInvalidArgument, std::move(m)}; }
inline Status NotFound(std::string m) { return {StatusCode::kNotFound, std::move(m)}; }
inline Status Unavailable(std::string m) { return {StatusCode::kUnavailable, std::move(m)}; }
inline Status ResourceExhausted(std::string m) { return {StatusCode::kResourceExhausted, std::move(m)}; }
inline Status Internal(std::string m) { return {StatusCode::kInternal, std::move(m)}; }
inline Status Unimplemented(std::string m) { return {StatusCode::kUnimplemented, std::move(m)}; }

// Whether an errno says the object read (a cgroup's file, a process, a namespace) went
// away: a removed cgroup's kept fd answers ENODEV, a fresh open ENOENT, a /proc/<pid>
// file of an exited task ESRCH. A vanished object is a value (kGone), not an error.
bool ErrnoMeansGone(int err);

// Status from an errno value, with `what` naming the operation and object.
Status ErrnoStatus(int err, const std::string& what);

template <typename T>
class [[nodiscard]] StatusOr {
 public:
  StatusOr(T value) : v_(std::move(value)) {}         // NOLINT(implicit)
  StatusOr(Status status) : v_(std::move(status)) {}  // NOLINT(implicit)

  bool ok() const { return std::holds_alternative<T>(v_); }
  const Status& status() const {
    static const Status kOk;
    return ok() ? kOk : std::get<Status>(v_);
  }
  T& value() & { return std::get<T>(v_); }
  const T& value() const& { return std::get<T>(v_); }
  T&& value() && { return std::get<T>(std::move(v_)); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }
  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }

 private:
  std::variant<T, Status> v_;
};

}  // namespace statlet
