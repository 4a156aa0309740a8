// The typed flag helpers (cmd/flag_set.h) on a small options struct of their own, then the
// daemon's whole table: every default reads back as itself, every example is accepted,
// names and config keys are unique and --help shows each.
#include "cmd/flag_set.h"

#include <gtest/gtest.h>

#include <set>

#include "base/duration.h"
#include "cmd/daemon_flags.h"

namespace statlet {
namespace {

using std::chrono::milliseconds;
using std::chrono::nanoseconds;
using std::chrono::seconds;

enum class Color { kRed, kGreen, kBlue };

struct Toy {
  std::string path = "/x";
  bool on = true;
  size_t count = 8;
  int small = 3;
  size_t bytes = 4096;
  double ratio = 0.25;
  seconds timeout{10};
  milliseconds poll{250};
  nanoseconds age{0};
  seconds period{5};
  Color color = Color::kGreen;
  std::vector<std::string> prefixes = {"lo", "veth"};
  std::vector<std::string> paths;
  std::vector<std::string> names;
};

void Declare(FlagSet& flags, Toy* t) {
  FlagGroup g = flags.Group("toy-box");
  g.String("path", &t->path, "A path.", AbsolutePath());
  g.Bool("on", &t->on, "On or off.");
  g.Integer("count", &t->count, {1, 64}, "A count.");
  g.Integer("small", &t->small, {}, "An int.");
  g.Bytes("bytes", &t->bytes, {.min = 1024}, "A size.");
  g.Real("ratio", &t->ratio, {.min = 0, .max = 1, .min_open = true}, "A ratio.");
  g.Duration("timeout", &t->timeout, {.min = seconds(1)}, "A timeout.");
  g.Duration("poll", &t->poll, {.min = milliseconds(50), .max = seconds(10)}, "A poll interval.");
  g.Duration("age", &t->age, {}, "An age.");
  g.Duration("period", &t->period, {.min = seconds(1), .max = seconds(60), .whole_seconds = true}, "A period.");
  g.Enum("color", &t->color, {{"red", Color::kRed}, {"green", Color::kGreen}, {"blue", Color::kBlue}}, "A color.");
  g.List("prefixes", &t->prefixes, ListForm::kCommaSeparated, "Prefixes.");
  g.List("path-list", &t->paths, ListForm::kRepeated, "Paths.", AbsolutePath()).ConfigKey("paths").Example("/a");
  g.List("names", &t->names, ListForm::kRepeatedCommaSeparated, "Names.", NotEmpty()).Example("a,b");
}

Status Set(const FlagSet& flags, const std::string& name, const std::string& value) {
  const Flag* f = flags.Find(name);
  EXPECT_NE(f, nullptr) << name;
  return f == nullptr ? InvalidArgument("no flag " + name) : f->Set(value);
}

TEST(FlagSet, NamesAndConfigKeysFollowTheGroup) {
  Toy t;
  FlagSet flags;
  Declare(flags, &t);
  ASSERT_NE(flags.Find("toy-box.path-list"), nullptr);
  EXPECT_EQ(flags.Find("toy-box.path-list")->config_key, "toy_box.paths");
  EXPECT_EQ(flags.Find("toy-box.count")->config_key, "toy_box.count");
  EXPECT_EQ(flags.FindConfigKey("toy_box.timeout"), flags.Find("toy-box.timeout"));
  EXPECT_EQ(flags.Find("count"), nullptr);
  EXPECT_EQ(flags.Sections(), std::vector<std::string>{"toy_box"});
  EXPECT_TRUE(flags.Find("toy-box.on")->is_bool);
  EXPECT_FALSE(flags.Find("toy-box.count")->is_bool);
}

TEST(FlagSet, DefaultsAreTheFieldsValues) {
  Toy t;
  FlagSet flags;
  Declare(flags, &t);
  std::vector<std::pair<std::string, std::string>> want = {
      {"path", "/x"},     {"on", "true"},          {"count", "8"},    {"small", "3"}, {"bytes", "4096"},
      {"ratio", "0.25"},  {"timeout", "10s"},      {"poll", "250ms"}, {"age", "0s"},  {"period", "5s"},
      {"color", "green"}, {"prefixes", "lo,veth"}, {"path-list", ""}, {"names", ""}};
  for (const auto& [key, text] : want) EXPECT_EQ(flags.Find("toy-box." + key)->default_text, text) << key;
}

TEST(FlagSet, ValuesLandInTheirFieldsInTheFieldsUnit) {
  Toy t;
  FlagSet flags;
  Declare(flags, &t);
  ASSERT_TRUE(Set(flags, "toy-box.path", "/y").ok());
  ASSERT_TRUE(Set(flags, "toy-box.on", "0").ok());
  ASSERT_TRUE(Set(flags, "toy-box.count", "64").ok());
  ASSERT_TRUE(Set(flags, "toy-box.small", "2147483647").ok());
  ASSERT_TRUE(Set(flags, "toy-box.bytes", "1024").ok());
  ASSERT_TRUE(Set(flags, "toy-box.ratio", "1").ok());
  ASSERT_TRUE(Set(flags, "toy-box.timeout", "1.9s").ok());
  ASSERT_TRUE(Set(flags, "toy-box.poll", "10s").ok());
  ASSERT_TRUE(Set(flags, "toy-box.age", "1500us").ok());
  ASSERT_TRUE(Set(flags, "toy-box.period", "1m").ok());
  ASSERT_TRUE(Set(flags, "toy-box.color", "blue").ok());
  EXPECT_EQ(t.path, "/y");
  EXPECT_FALSE(t.on);
  EXPECT_EQ(t.count, 64u);
  EXPECT_EQ(t.small, 2147483647);
  EXPECT_EQ(t.bytes, 1024u);
  EXPECT_EQ(t.ratio, 1.0);
  EXPECT_EQ(t.timeout, seconds(1)) << "truncated to the field's unit";
  EXPECT_EQ(t.poll, seconds(10));
  EXPECT_EQ(t.age, std::chrono::microseconds(1500));
  EXPECT_EQ(t.period, seconds(60));
  EXPECT_EQ(t.color, Color::kBlue);
}

// Every refusal names the flag, what it expected, what it got and a valid example.
TEST(FlagSet, BadValuesNameTheFlagAndAValidExample) {
  Toy t;
  FlagSet flags;
  Declare(flags, &t);
  struct Case {
    const char* flag;
    const char* value;
    const char* message;
  };
  for (const Case& c : std::vector<Case>{
           {"count", "0", "toy-box.count: expected an integer in 1..64, got \"0\" (e.g. 8)"},
           {"count", "65", "toy-box.count: expected an integer in 1..64, got \"65\" (e.g. 8)"},
           {"count", "-1", "toy-box.count: expected an integer in 1..64, got \"-1\" (e.g. 8)"},
           {"count", "8x", "toy-box.count: expected an integer in 1..64, got \"8x\" (e.g. 8)"},
           {"count", "", "toy-box.count: expected an integer in 1..64, got \"\" (e.g. 8)"},
           {"small", "2147483648", "toy-box.small: expected an integer in 0..2147483647, got \"2147483648\" (e.g. 3)"},
           {"bytes", "1023", "toy-box.bytes: expected a byte count of at least 1024, got \"1023\" (e.g. 4096)"},
           {"bytes", "4k", "toy-box.bytes: expected a byte count of at least 1024, got \"4k\" (e.g. 4096)"},
           {"ratio", "0", "toy-box.ratio: expected a number in (0, 1], got \"0\" (e.g. 0.25)"},
           {"ratio", "1.01", "toy-box.ratio: expected a number in (0, 1], got \"1.01\" (e.g. 0.25)"},
           {"ratio", "nan", "toy-box.ratio: expected a number in (0, 1], got \"nan\" (e.g. 0.25)"},
           {"timeout", "999ms", "toy-box.timeout: expected a duration of at least 1s, got \"999ms\" (e.g. 10s)"},
           {"timeout", "10", "toy-box.timeout: expected a duration of at least 1s, got \"10\" (e.g. 10s)"},
           {"poll", "11s", "toy-box.poll: expected a duration in 50ms..10s, got \"11s\" (e.g. 250ms)"},
           {"age", "5parsecs",
            "toy-box.age: expected a duration (a number and ns, us, ms, s, m or h), got \"5parsecs\" (e.g. 0s)"},
           {"age", "-1s",
            "toy-box.age: expected a duration (a number and ns, us, ms, s, m or h), got \"-1s\" (e.g. 0s)"},
           {"period", "1500ms", "toy-box.period: expected whole seconds in 1s..60s, got \"1500ms\" (e.g. 5s)"},
           {"period", "2m", "toy-box.period: expected whole seconds in 1s..60s, got \"2m\" (e.g. 5s)"},
           {"color", "Red", "toy-box.color: expected one of red, green or blue, got \"Red\" (e.g. green)"},
           {"on", "yes", "toy-box.on: expected true or false, got \"yes\" (e.g. true)"},
           {"path", "x", "toy-box.path: expected a path starting with '/', got \"x\" (e.g. /x)"},
           {"path-list", "a", "toy-box.path-list: expected a path starting with '/', got \"a\" (e.g. /a)"},
           {"names", "a,,b", "toy-box.names: must not be empty (e.g. a,b)"},
       }) {
    Status s = Set(flags, std::string("toy-box.") + c.flag, c.value);
    EXPECT_EQ(s.code(), StatusCode::kInvalidArgument) << c.flag << "=" << c.value;
    EXPECT_EQ(s.message(), c.message);
  }
}

TEST(FlagSet, ListsReplaceOrAppendByForm) {
  Toy t;
  FlagSet flags;
  Declare(flags, &t);
  ASSERT_TRUE(Set(flags, "toy-box.prefixes", "a,,b,").ok());
  EXPECT_EQ(t.prefixes, (std::vector<std::string>{"a", "b"}));
  ASSERT_TRUE(Set(flags, "toy-box.prefixes", "").ok());
  EXPECT_TRUE(t.prefixes.empty()) << "\"\" empties a comma-separated list";
  EXPECT_FALSE(flags.Find("toy-box.prefixes")->clear) << "a comma-separated list is replaced by each value";

  ASSERT_TRUE(Set(flags, "toy-box.path-list", "/a,b").ok());
  ASSERT_TRUE(Set(flags, "toy-box.path-list", "/c").ok());
  EXPECT_EQ(t.paths, (std::vector<std::string>{"/a,b", "/c"})) << "one item per value, commas kept";
  ASSERT_TRUE(Set(flags, "toy-box.names", "x,y").ok());
  ASSERT_TRUE(Set(flags, "toy-box.names", "z").ok());
  EXPECT_EQ(t.names, (std::vector<std::string>{"x", "y", "z"}));
  ASSERT_TRUE(flags.Find("toy-box.names")->clear);
  flags.Find("toy-box.names")->clear();
  EXPECT_TRUE(t.names.empty());
}

TEST(FlagSet, FormatDurationReadsBack) {
  for (nanoseconds d : {nanoseconds(0), nanoseconds(seconds(60)), nanoseconds(milliseconds(250)),
                        nanoseconds(milliseconds(1500)), nanoseconds(std::chrono::microseconds(3)), nanoseconds(7)}) {
    nanoseconds back;
    ASSERT_TRUE(ParseDuration(FormatDuration(d), &back).ok()) << FormatDuration(d);
    EXPECT_EQ(back, d) << FormatDuration(d);
  }
  EXPECT_EQ(FormatDuration(seconds(60)), "60s");
  EXPECT_EQ(FormatDuration(milliseconds(1500)), "1500ms");
}

// The daemon's table: what --help shows as a default is what the option holds untouched,
// and reads back to it; every example an error quotes is accepted.
TEST(DaemonFlags, EveryDefaultReadsBackAndEveryExampleIsAccepted) {
  DaemonOptions defaults;
  FlagSet flags;
  RegisterDaemonFlags(flags, &defaults);
  ASSERT_GT(flags.flags().size(), 60u);
  for (const Flag& f : flags.flags()) {
    DaemonOptions o;
    FlagSet bound;
    RegisterDaemonFlags(bound, &o);
    const Flag* g = bound.Find(f.name);
    ASSERT_NE(g, nullptr) << f.name;
    if (!(g->clear && f.default_text.empty())) {  // an empty repeatable list has no text to give
      if (g->clear) g->clear();
      ASSERT_TRUE(g->Set(f.default_text).ok()) << f.name << "=" << f.default_text;
      FlagSet again;
      RegisterDaemonFlags(again, &o);
      EXPECT_EQ(again.Find(f.name)->default_text, f.default_text) << f.name;
    }
    const std::string& example = f.example.empty() ? f.default_text : f.example;
    if (!example.empty()) {
      DaemonOptions e;
      FlagSet scratch;
      RegisterDaemonFlags(scratch, &e);
      EXPECT_TRUE(scratch.Find(f.name)->Set(example).ok()) << f.name << "=" << example;
    }
  }
}

TEST(DaemonFlags, NamesAndConfigKeysAreUniqueAndDocumented) {
  DaemonOptions o;
  FlagSet flags;
  RegisterDaemonFlags(flags, &o);
  std::set<std::string> names, keys;
  std::string usage = DaemonUsage();
  for (const Flag& f : flags.flags()) {
    EXPECT_TRUE(names.insert(f.name).second) << f.name;
    EXPECT_TRUE(keys.insert(f.config_key).second) << f.config_key;
    EXPECT_FALSE(f.help.empty()) << f.name;
    EXPECT_NE(usage.find("  --" + f.name + (f.is_bool ? " (default " : "=\"") + f.default_text), std::string::npos)
        << f.name;
    EXPECT_NE(usage.find("config file key: " + f.config_key + "\n"), std::string::npos) << f.config_key;
  }
  EXPECT_EQ(flags.Sections(), (std::vector<std::string>{"web", "log", "collector", "memory_qos", "metrics", "cri",
                                                        "runtime", "pull", "otlp", "bpf"}));
}

}  // namespace
}  // namespace statlet
