#include "cmd/flag_parser.h"

#include <algorithm>
#include <cstdio>

#include "cmd/flag_suggest.h"

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

bool FlagParser::Is(std::string_view name, std::initializer_list<std::string_view> old_spellings) {
  if (std::find(known_.begin(), known_.end(), name) == known_.end()) known_.emplace_back(name);
  if (name_ == name) return true;
  for (std::string_view old : old_spellings) {
    if (name_ != old) continue;
    if (noticed_.insert(std::string(old)).second) {
      std::fprintf(stderr, "%s: %s is now %s (the name every statlet command uses); the old spelling still works\n",
                   command_.c_str(), name_.c_str(), std::string(name).c_str());
    }
    return true;
  }
  return false;
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
  if (!failed_) std::fprintf(stderr, "%s: %s\n", command_.c_str(), message.c_str());
  failed_ = true;
  return 2;
}

int FlagParser::Unknown() {
  std::vector<std::string> flags;
  for (const std::string& k : known_) {
    if (k.rfind("--", 0) == 0) flags.push_back(k);
  }
  const std::string near = NearestName(name_, flags);
  if (name_.empty() || name_[0] != '-') {
    return Fail("unexpected argument " + name_ + " (" + command_ + " --help lists the flags)");
  }
  return Fail("unknown flag " + name_ + (near.empty() ? std::string() : "; did you mean " + near + "?") + " (" +
              command_ + " --help lists the flags)");
}

}  // namespace statlet
