// The daemon's options as one table of flags. Each subsystem declares its own flags in one
// small file (cmd/options_<subsystem>.cc) through the typed helpers of FlagGroup, which
// parse the text, check its range, name the flag and a valid example in every error, and
// show the bound field's value before parsing as the default in --help. cmd/daemon_options.cc
// walks the command line and the config file against the table; nothing else in the tree
// knows flag syntax.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/status.h"

namespace statlet {

// One option: "--<name>" on the command line, "<config_key>" (section.key) in the config file.
struct Flag {
  std::string name;
  std::string config_key;
  std::string default_text;  // the bound field's value when the flag was declared
  std::string help;
  std::string example;  // a valid value quoted by errors; empty: the default, if not empty
  bool is_bool = false;
  // Sets the option from a flag's value or a config-file scalar.
  std::function<Status(const Flag&, const std::string&)> set;
  // Repeatable lists only: empties the list, so that flags replace the config file's list.
  std::function<void()> clear;

  Status Set(const std::string& text) const { return set(*this, text); }
  // "<name>: <detail> (e.g. <example>)": every error of a flag reads this way.
  Status Error(std::string_view detail) const;
  // Error("expected <what>, got \"<got>\"").
  Status Expected(std::string_view what, std::string_view got) const;

  // Declaration-time adjustments, chained after a helper.
  Flag& ConfigKey(std::string key_in_section);
  Flag& Example(std::string text);
};

// What a string option must look like: Ok, or InvalidArgument with the detail an error shows
// after the flag's name ("expected a path starting with '/', got \"x\"").
using StringRule = std::function<Status(const std::string&)>;
Status ExpectedValue(std::string_view what, std::string_view got);  // InvalidArgument("expected …, got \"…\"")
StringRule AbsolutePath();                                          // starts with '/'
StringRule NotEmpty();
// A unix socket endpoint (base/unix_socket.h); `also` are further accepted words ("", "none").
StringRule UnixEndpoint(std::vector<std::string> also = {});
// The Kubernetes API server an option names: "in-cluster" (the pod's service account) or an
// https:// URL. `empty_ok`: "" leaves the feature off; `plain_http_ok`: an http:// URL too (the
// test beds' stand-in API servers), where a bearer token crosses in clear text.
StringRule ApiServerUrl(bool empty_ok, bool plain_http_ok = false);

// Bounds of the typed helpers (inclusive unless said otherwise).
struct IntRange {
  uint64_t min = 0;
  uint64_t max = std::numeric_limits<uint64_t>::max();
};
struct RealRange {
  double min = 0;
  double max = 0;
  bool min_open = false;  // (min, max]
};
struct DurationRange {
  std::chrono::nanoseconds min{0};
  std::chrono::nanoseconds max = std::chrono::nanoseconds::max();
  bool whole_seconds = false;
};

enum class ListForm {
  kCommaSeparated,          // "a,b,c" replaces the list; empty items are dropped
  kRepeated,                // each value appends one item; flags replace the file's list
  kRepeatedCommaSeparated,  // each value appends its comma-separated items; flags replace the file's list
};

class FlagSet;

// The flags of one subsystem: names "<prefix>.<key>", config keys "<section>.<key>" where the
// section is the prefix and the key the flag's key, with '-' and '.' written '_'.
class FlagGroup {
 public:
  FlagGroup(FlagSet* set, std::string prefix) : set_(set), prefix_(std::move(prefix)) {}

  Flag& String(std::string_view key, std::string* field, std::string help, StringRule rule = {});
  Flag& Bool(std::string_view key, bool* field, std::string help);
  // Whole non-negative numbers ("an integer"), and the same for sizes ("a byte count").
  template <typename T>
  Flag& Integer(std::string_view key, T* field, IntRange range, std::string help) {
    return Unsigned(key, static_cast<uint64_t>(*field), Clamp<T>(range), "an integer", std::move(help),
                    [field](uint64_t v) { *field = static_cast<T>(v); });
  }
  template <typename T>
  Flag& Bytes(std::string_view key, T* field, IntRange range, std::string help) {
    return Unsigned(key, static_cast<uint64_t>(*field), Clamp<T>(range), "a byte count", std::move(help),
                    [field](uint64_t v) { *field = static_cast<T>(v); });
  }
  Flag& Real(std::string_view key, double* field, RealRange range, std::string help);
  // Durations as base/duration.h reads them ("250ms", "10s"), stored in the field's unit
  // (truncated); the range is checked before truncation.
  template <typename Rep, typename Period>
  Flag& Duration(std::string_view key, std::chrono::duration<Rep, Period>* field, DurationRange range,
                 std::string help) {
    return AnyDuration(key, std::chrono::duration_cast<std::chrono::nanoseconds>(*field), range, std::move(help),
                       [field](std::chrono::nanoseconds d) {
                         *field = std::chrono::duration_cast<std::chrono::duration<Rep, Period>>(d);
                       });
  }
  // One of a few words, each naming a value (listed in errors in this order).
  template <typename E>
  Flag& Enum(std::string_view key, E* field, std::vector<std::pair<std::string, E>> words, std::string help) {
    std::vector<std::string> names;
    size_t current = 0;
    for (size_t i = 0; i < words.size(); ++i) {
      names.push_back(words[i].first);
      if (words[i].second == *field) current = i;
    }
    return Word(key, std::move(names), current, std::move(help),
                [field, words = std::move(words)](size_t i) { *field = words[i].second; });
  }
  Flag& List(std::string_view key, std::vector<std::string>* field, ListForm form, std::string help,
             StringRule item_rule = {});
  // Anything else: the default as --help shows it and a setter of its own.
  Flag& Custom(std::string_view key, std::string default_text, std::string help,
               std::function<Status(const Flag&, const std::string&)> set);

 private:
  template <typename T>
  static IntRange Clamp(IntRange r) {
    r.max = std::min<uint64_t>(r.max, std::numeric_limits<T>::max());
    return r;
  }
  Flag& Unsigned(std::string_view key, uint64_t current, IntRange range, const char* noun, std::string help,
                 std::function<void(uint64_t)> assign);
  Flag& AnyDuration(std::string_view key, std::chrono::nanoseconds current, DurationRange range, std::string help,
                    std::function<void(std::chrono::nanoseconds)> assign);
  Flag& Word(std::string_view key, std::vector<std::string> words, size_t current, std::string help,
             std::function<void(size_t)> assign);
  Flag& Add(std::string_view key, std::string default_text, std::string help);

  FlagSet* set_;
  std::string prefix_;
};

class FlagSet {
 public:
  FlagSet() = default;
  FlagSet(const FlagSet&) = delete;
  FlagSet& operator=(const FlagSet&) = delete;

  // The flags of subsystem `prefix` ("web", "memory-qos"), declared in order.
  FlagGroup Group(std::string prefix) { return FlagGroup(this, std::move(prefix)); }

  // Every flag, in declaration order (the order of --help).
  const std::deque<Flag>& flags() const { return flags_; }
  const Flag* Find(std::string_view name) const;
  const Flag* FindConfigKey(std::string_view key) const;
  // The config file's sections, in declaration order.
  std::vector<std::string> Sections() const;

 private:
  friend class FlagGroup;
  std::deque<Flag> flags_;  // a deque: helpers hand out references that later flags keep valid
};

}  // namespace statlet
