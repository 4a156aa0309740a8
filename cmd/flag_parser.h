// A small command-line walker for "--name value", "--name=value" and boolean flags.
#pragma once

#include <string>
#include <string_view>

namespace statlet {

class FlagParser {
 public:
  FlagParser(int argc, char** argv) : argc_(argc), argv_(argv) {}
  // Advances to the next flag; false at the end or after an error.
  bool Next();
  bool Is(std::string_view name) const { return name_ == name; }
  const std::string& name() const { return name_; }
  // The flag's value ("--x=v" or the next argument); records an error when missing.
  std::string Value();
  int Fail(const std::string& message);
  bool failed() const { return failed_; }

 private:
  int argc_;
  char** argv_;
  int i_ = 0;
  std::string name_;
  std::string inline_value_;
  bool has_inline_ = false;
  bool failed_ = false;
};

}  // namespace statlet
