// A small command-line walker for "--name value", "--name=value" and boolean flags, for the
// subcommands (stats, top, pull). Each name a command asks about with Is() is remembered, so
// that an unknown flag can be answered with the nearest known one, and an old spelling given
// to Is() is accepted with a notice naming the new one.
#pragma once

#include <initializer_list>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace statlet {

class FlagParser {
 public:
  // `command` prefixes every message ("statlet stats").
  FlagParser(int argc, char** argv, std::string command = "statlet")
      : argc_(argc), argv_(argv), command_(std::move(command)) {}
  // Advances to the next flag; false at the end or after an error.
  bool Next();
  // True when the current flag is `name`, or one of `old_spellings` (then a notice on stderr,
  // once per spelling, says it is now `name`).
  bool Is(std::string_view name, std::initializer_list<std::string_view> old_spellings = {});
  const std::string& name() const { return name_; }
  // The flag's value ("--x=v" or the next argument); records an error when missing.
  std::string Value();
  // Prints "<command>: <message>" once and marks the parse failed; returns 2 (usage).
  int Fail(const std::string& message);
  // Fail for the current flag, which no Is() matched: names the nearest flag the command asked
  // about, if one is close.
  int Unknown();
  bool failed() const { return failed_; }

 private:
  int argc_;
  char** argv_;
  std::string command_;
  int i_ = 0;
  std::string name_;
  std::string inline_value_;
  bool has_inline_ = false;
  bool failed_ = false;
  std::vector<std::string> known_;  // every name asked about, for suggestions
  std::set<std::string> noticed_;   // old spellings already explained
};

}  // namespace statlet
