#include "cmd/flag_parser.h"

#include <cstdio>

namespace statlet {

bool FlagParser::Next() {
  if (failed_) return false;
  if (++i_ >= argc_) return false;
  std::string_view a = argv_[i_];
  size_t eq = a.find('=');
  has_inline_ = a.substr(0, 2) == "--" && eq != std::string_view::npos;
  name_ = std::string(has_inline_ ? a.substr(0, eq) : a);
  inline_value_ = has_inline_ ? std::string(a.substr(eq + 1)) : std::string();
  return true;
}

std::string FlagParser::Value() {
  if (has_inline_) return inline_value_;
  if (i_ + 1 >= argc_) {
    Fail("flag " + name_ + " needs a value");
    return {};
  }
  return argv_[++i_];
}

int FlagParser::Fail(const std::string& message) {
  if (!failed_) std::fprintf(stderr, "statlet: %s\n", message.c_str());
  failed_ = true;
  return 2;
}

}  // namespace statlet
