#include "cmd/flag_set.h"

#include <cerrno>
#include <charconv>
#include <cstdlib>

#include "base/duration.h"
#include "base/unix_socket.h"

namespace statlet {
namespace {

// '-' and '.' inside a key are '_' in the config file ("max-age" -> "max_age").
std::string ConfigWord(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '-' || c == '.') c = '_';
  }
  return out;
}

std::string Join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out += sep;
    out += items[i];
  }
  return out;
}

// The shortest text that reads back as `v` ("0.9", "40").
std::string FormatReal(double v) {
  char buf[64];
  auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
  return ec == std::errc() ? std::string(buf, end) : std::to_string(v);
}

// As strtoull, refusing empty text, trailing characters, overflow and a minus sign.
bool ParseUnsigned(const std::string& text, uint64_t* out) {
  char* end = nullptr;
  errno = 0;
  unsigned long long v = std::strtoull(text.c_str(), &end, 10);
  if (text.empty() || *end != '\0' || errno != 0 || text[0] == '-') return false;
  *out = v;
  return true;
}

std::string DescribeRange(const IntRange& r, const char* noun) {
  bool unbounded = r.max == std::numeric_limits<uint64_t>::max();
  if (r.min == 0 && unbounded) return std::string_view(noun) == "an integer" ? "a non-negative integer" : noun;
  if (unbounded) return std::string(noun) + " of at least " + std::to_string(r.min);
  return std::string(noun) + " in " + std::to_string(r.min) + ".." + std::to_string(r.max);
}

std::string DescribeRange(const DurationRange& r) {
  bool bounded_below = r.min.count() > 0, bounded_above = r.max != std::chrono::nanoseconds::max();
  std::string what = r.whole_seconds ? "whole seconds" : "a duration";
  if (bounded_below && bounded_above) return what + " in " + FormatDuration(r.min) + ".." + FormatDuration(r.max);
  if (bounded_below) return what + " of at least " + FormatDuration(r.min);
  if (bounded_above) return what + " of at most " + FormatDuration(r.max);
  return r.whole_seconds ? what : what + " (a number and ns, us, ms, s, m or h)";
}

}  // namespace

Status Flag::Error(std::string_view detail) const {
  std::string m = name + ": " + std::string(detail);
  const std::string& e = example.empty() ? default_text : example;
  if (!e.empty()) m += " (e.g. " + e + ")";
  return InvalidArgument(std::move(m));
}

Status Flag::Expected(std::string_view what, std::string_view got) const {
  return Error("expected " + std::string(what) + ", got \"" + std::string(got) + "\"");
}

Flag& Flag::ConfigKey(std::string key_in_section) {
  config_key = config_key.substr(0, config_key.find('.')) + "." + key_in_section;
  return *this;
}

Flag& Flag::Example(std::string text) {
  example = std::move(text);
  return *this;
}

Status ExpectedValue(std::string_view what, std::string_view got) {
  return InvalidArgument("expected " + std::string(what) + ", got \"" + std::string(got) + "\"");
}

StringRule AbsolutePath() {
  return [](const std::string& v) {
    return !v.empty() && v[0] == '/' ? Status::Ok() : ExpectedValue("a path starting with '/'", v);
  };
}

StringRule NotEmpty() {
  return [](const std::string& v) { return v.empty() ? InvalidArgument("must not be empty") : Status::Ok(); };
}

StringRule UnixEndpoint(std::vector<std::string> also) {
  return [also = std::move(also)](const std::string& v) {
    for (const std::string& word : also) {
      if (v == word) return Status::Ok();
    }
    auto path = ParseUnixEndpoint(v);
    return path.ok() ? Status::Ok() : path.status();
  };
}

StringRule ApiServerUrl(bool empty_ok, bool plain_http_ok) {
  return [empty_ok, plain_http_ok](const std::string& v) {
    if ((empty_ok && v.empty()) || v == "in-cluster" || v.rfind("https://", 0) == 0 ||
        (plain_http_ok && v.rfind("http://", 0) == 0)) {
      return Status::Ok();
    }
    return ExpectedValue("\"in-cluster\" or https://host:port", v);
  };
}

Flag& FlagGroup::Add(std::string_view key, std::string default_text, std::string help) {
  Flag f;
  f.name = key.empty() ? prefix_ : prefix_ + "." + std::string(key);
  f.config_key = ConfigWord(prefix_) + (key.empty() ? "" : "." + ConfigWord(key));
  f.default_text = std::move(default_text);
  f.help = std::move(help);
  return set_->flags_.emplace_back(std::move(f));
}

Flag& FlagGroup::String(std::string_view key, std::string* field, std::string help, StringRule rule) {
  Flag& f = Add(key, *field, std::move(help));
  f.set = [field, rule = std::move(rule)](const Flag& flag, const std::string& v) {
    if (rule) {
      if (Status s = rule(v); !s.ok()) return flag.Error(s.message());
    }
    *field = v;
    return Status::Ok();
  };
  return f;
}

Flag& FlagGroup::Bool(std::string_view key, bool* field, std::string help) {
  Flag& f = Add(key, *field ? "true" : "false", std::move(help));
  f.is_bool = true;
  f.set = [field](const Flag& flag, const std::string& v) {
    if (v == "true" || v == "1") *field = true;
    else if (v == "false" || v == "0") *field = false;
    else return flag.Expected("true or false", v);
    return Status::Ok();
  };
  return f;
}

Flag& FlagGroup::Unsigned(std::string_view key, uint64_t current, IntRange range, const char* noun, std::string help,
                          std::function<void(uint64_t)> assign) {
  Flag& f = Add(key, std::to_string(current), std::move(help));
  f.set = [range, noun, assign = std::move(assign)](const Flag& flag, const std::string& v) {
    uint64_t n = 0;
    if (!ParseUnsigned(v, &n) || n < range.min || n > range.max) return flag.Expected(DescribeRange(range, noun), v);
    assign(n);
    return Status::Ok();
  };
  return f;
}

Flag& FlagGroup::Real(std::string_view key, double* field, RealRange range, std::string help) {
  Flag& f = Add(key, FormatReal(*field), std::move(help));
  f.set = [field, range](const Flag& flag, const std::string& v) {
    char* end = nullptr;
    errno = 0;
    double d = std::strtod(v.c_str(), &end);
    bool in_range = range.min_open ? d > range.min : d >= range.min;
    if (v.empty() || *end != '\0' || errno != 0 || !(in_range && d <= range.max)) {
      return flag.Expected(std::string("a number in ") + (range.min_open ? "(" : "[") + FormatReal(range.min) + ", " +
                               FormatReal(range.max) + "]",
                           v);
    }
    *field = d;
    return Status::Ok();
  };
  return f;
}

Flag& FlagGroup::AnyDuration(std::string_view key, std::chrono::nanoseconds current, DurationRange range,
                             std::string help, std::function<void(std::chrono::nanoseconds)> assign) {
  Flag& f = Add(key, FormatDuration(current), std::move(help));
  f.set = [range, assign = std::move(assign)](const Flag& flag, const std::string& v) {
    std::chrono::nanoseconds d;
    if (!ParseDuration(v, &d).ok() || d < range.min || d > range.max ||
        (range.whole_seconds && d.count() % 1000000000 != 0)) {
      return flag.Expected(DescribeRange(range), v);
    }
    assign(d);
    return Status::Ok();
  };
  return f;
}

Flag& FlagGroup::Word(std::string_view key, std::vector<std::string> words, size_t current, std::string help,
                      std::function<void(size_t)> assign) {
  Flag& f = Add(key, words.empty() ? "" : words[current], std::move(help));
  f.set = [words = std::move(words), assign = std::move(assign)](const Flag& flag, const std::string& v) {
    for (size_t i = 0; i < words.size(); ++i) {
      if (v == words[i]) {
        assign(i);
        return Status::Ok();
      }
    }
    std::string what = words.size() > 2 ? "one of " : "";
    for (size_t i = 0; i < words.size(); ++i) what += (i == 0 ? "" : i + 1 == words.size() ? " or " : ", ") + words[i];
    return flag.Expected(what, v);
  };
  return f;
}

Flag& FlagGroup::List(std::string_view key, std::vector<std::string>* field, ListForm form, std::string help,
                      StringRule item_rule) {
  Flag& f = Add(key, Join(*field, ","), std::move(help));
  f.set = [field, form, rule = std::move(item_rule)](const Flag& flag, const std::string& v) {
    std::vector<std::string> items;
    if (form == ListForm::kRepeated) {
      items.push_back(v);
    } else {
      for (size_t start = 0;;) {
        size_t comma = v.find(',', start);
        items.push_back(v.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
        if (comma == std::string::npos) break;
        start = comma + 1;
      }
    }
    if (form == ListForm::kCommaSeparated) field->clear();
    for (std::string& item : items) {
      if (form == ListForm::kCommaSeparated && item.empty()) continue;
      if (rule) {
        if (Status s = rule(item); !s.ok()) return flag.Error(s.message());
      }
      field->push_back(std::move(item));
    }
    return Status::Ok();
  };
  if (form != ListForm::kCommaSeparated) f.clear = [field] { field->clear(); };
  return f;
}

Flag& FlagGroup::Custom(std::string_view key, std::string default_text, std::string help,
                        std::function<Status(const Flag&, const std::string&)> set) {
  Flag& f = Add(key, std::move(default_text), std::move(help));
  f.set = std::move(set);
  return f;
}

const Flag* FlagSet::Find(std::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const Flag* FlagSet::FindConfigKey(std::string_view key) const {
  for (const Flag& f : flags_) {
    if (f.config_key == key) return &f;
  }
  return nullptr;
}

std::vector<std::string> FlagSet::Sections() const {
  std::vector<std::string> out;
  for (const Flag& f : flags_) {
    std::string section = f.config_key.substr(0, f.config_key.find('.'));
    if (out.empty() || out.back() != section) out.push_back(section);
  }
  return out;
}

}  // namespace statlet
