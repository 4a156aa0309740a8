#include "cmd/daemon_options.h"

#include <yaml-cpp/yaml.h>

#include <cerrno>
#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>

#include "cmd/daemon_flags.h"
#include "cmd/flag_suggest.h"

namespace statlet {
namespace {

Status ReadFile(const std::string& path, std::string* out) {
  std::ifstream in(path);
  if (!in) return ErrnoStatus(errno, "open " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return Status::Ok();
}

// " (did you mean X?)" for the name nearest `name` among `names`, else "".
std::string Suggestion(const std::string& name, const std::vector<std::string>& names, const std::string& prefix) {
  const std::string near = NearestName(name, names);
  return near.empty() ? "" : "; did you mean " + prefix + near + "?";
}

std::vector<std::string> FlagNames(const FlagSet& flags) {
  std::vector<std::string> names = {"config.file", "help", "version"};
  for (const Flag& f : flags.flags()) names.push_back(f.name);
  return names;
}

// Applies a config document onto the options `flags` are bound to.
Status ApplyConfig(const std::string& yaml_text, const FlagSet& flags) {
  try {
    YAML::Node root = YAML::Load(yaml_text);
    if (root.IsNull()) return Status::Ok();
    if (!root.IsMap()) {
      std::string sections;
      for (const std::string& s : flags.Sections()) sections += (sections.empty() ? "" : ", ") + s;
      return InvalidArgument("config: expected a mapping of sections (" + sections + ")");
    }
    for (const auto& section : root) {
      std::string sname = section.first.as<std::string>();
      if (!section.second.IsMap()) return InvalidArgument("config: section " + sname + " must be a mapping");
      for (const auto& kv : section.second) {
        std::string key = sname + "." + kv.first.as<std::string>();
        const Flag* flag = flags.FindConfigKey(key);
        if (flag == nullptr) {
          std::vector<std::string> keys;
          for (const Flag& f : flags.flags()) keys.push_back(f.config_key);
          return InvalidArgument("config: unknown key " + key + Suggestion(key, keys, ""));
        }
        if (kv.second.IsSequence()) {
          for (const auto& item : kv.second) {
            if (Status s = flag->Set(item.as<std::string>()); !s.ok()) return InvalidArgument("config: " + s.message());
          }
        } else if (Status s = flag->Set(kv.second.as<std::string>()); !s.ok()) {
          return InvalidArgument("config: " + s.message());
        }
      }
    }
  } catch (const YAML::Exception& e) {
    return InvalidArgument(std::string("config: ") + e.what());
  }
  return Status::Ok();
}

}  // namespace

void RegisterDaemonFlags(FlagSet& flags, DaemonOptions* o) {
  RegisterWebFlags(flags, o);
  RegisterLogFlags(flags, o);
  RegisterCollectorFlags(flags, o);
  RegisterMemoryQosFlags(flags, o);
  RegisterMetricsFlags(flags, o);
  RegisterCriFlags(flags, o);
  RegisterRuntimeFlags(flags, o);
  RegisterPullFlags(flags, o);
  RegisterOtlpFlags(flags, o);
  RegisterBpfFlags(flags, o);
}

Status ApplyConfigYaml(const std::string& yaml_text, DaemonOptions* out) {
  FlagSet flags;
  RegisterDaemonFlags(flags, out);
  return ApplyConfig(yaml_text, flags);
}

Status ParseDaemonOptions(const std::vector<std::string>& args, DaemonOptions* out) {
  FlagSet flags;
  RegisterDaemonFlags(flags, out);
  // Split "--name=value", "--name value", "--bool", "--no-bool" first, so the config file
  // can be applied before the flags that override it.
  std::vector<std::pair<const Flag*, std::string>> given;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    if (a == "-h" || a == "--help") {
      out->help = true;
      continue;
    }
    if (a == "--version") {
      out->version = true;
      continue;
    }
    if (a.rfind("--", 0) != 0) return InvalidArgument("unexpected argument \"" + a + "\" (see --help)");
    std::string name = a.substr(2), value;
    bool has_value = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      has_value = true;
    }
    if (name == "config.file") {
      if (!has_value) {
        if (i + 1 >= args.size()) return InvalidArgument("--config.file needs a value");
        value = args[++i];
      }
      out->config_file = value;
      continue;
    }
    const Flag* flag = flags.Find(name);
    if (flag == nullptr && name.rfind("no-", 0) == 0) {
      flag = flags.Find(name.substr(3));
      if (flag == nullptr || !flag->is_bool || has_value) {
        return InvalidArgument("unknown flag --" + name + Suggestion(name.substr(3), FlagNames(flags), "--no-") +
                               " (see --help)");
      }
      given.emplace_back(flag, "false");
      continue;
    }
    if (flag == nullptr) {
      return InvalidArgument("unknown flag --" + name + Suggestion(name, FlagNames(flags), "--") + " (see --help)");
    }
    if (!has_value) {
      if (flag->is_bool) {
        value = "true";
      } else {
        if (i + 1 >= args.size()) return InvalidArgument("--" + name + " needs a value");
        value = args[++i];
      }
    }
    given.emplace_back(flag, value);
  }
  if (out->help || out->version) return Status::Ok();
  // The standard OTEL_* variables sit under the file and the flags.
  if (Status s = otlp::ApplyEnvironment([](const char* name) { return std::getenv(name); }, &out->otlp); !s.ok()) {
    return s;
  }
  if (!out->config_file.empty()) {
    std::string text;
    if (Status s = ReadFile(out->config_file, &text); !s.ok()) return s;
    if (Status s = ApplyConfig(text, flags); !s.ok()) return InvalidArgument(out->config_file + ": " + s.message());
  }
  std::set<const Flag*> cleared;  // a repeatable list given as flags replaces the file's
  for (const auto& [flag, value] : given) {
    if (flag->clear && cleared.insert(flag).second) flag->clear();
    if (Status s = flag->Set(value); !s.ok()) {
      // As given on the command line: "--name: what is wrong (e.g. a valid value)".
      const std::string& m = s.message();
      return InvalidArgument("--" + (m.rfind(flag->name + ":", 0) == 0 ? m : flag->name + ": " + m));
    }
  }
  if (Status s = CheckCriFlags(out->cri); !s.ok()) return s;
  if (Status s = CheckStreamFlags(*out); !s.ok()) return s;
  if (Status s = ApplyMetricSelection(out); !s.ok()) return s;
  if (!out->web_config_file.empty()) {
    auto web = LoadWebConfig(out->web_config_file);
    if (!web.ok()) return web.status();
    out->http.web = std::move(*web);
  }
  return Status::Ok();
}

std::string DaemonUsage() {
  std::string s =
      "usage: statlet [flags]\n"
      "       statlet stats [flags]\n"
      "       statlet top [flags]\n"
      "       statlet pull [flags] IMAGE\n\n"
      "Measures every container and cgroup on this host. Serves Prometheus /metrics (text format\n"
      "0.0.4 or OpenMetrics 1.0, negotiated by Accept, gzip when the scraper accepts it), /healthz\n"
      "(process up), /readyz (first collection done), and CRI runtime.v1 stats on a unix socket.\n"
      "Collection runs when asked (a scrape, a CRI call); concurrent callers share one collection.\n"
      "`statlet stats --help` describes the one-shot view, `statlet top --help` the live view,\n"
      "`statlet pull --help` image pulls with progress through the CRI socket's image service\n"
      "(docs/image-pulls.md).\n\n"
      "Flags (--name=value or --name value; booleans also as --name / --no-name):\n"
      "  -h, --help\n      Show this help.\n"
      "  --version\n      Print the version.\n"
      "  --config.file=\"\"\n      YAML file with the options below, grouped by section, e.g.\n"
      "      web: {listen_address: \":10340\"}  collector: {max_age: 2s, subtrees: [/kubepods]}\n"
      "      Flags given on the command line win over the file.\n";
  DaemonOptions defaults;
  FlagSet flags;
  RegisterDaemonFlags(flags, &defaults);
  for (const Flag& o : flags.flags()) {
    s += "  --";
    s += o.name;
    if (!o.is_bool) {
      s += "=\"";
      s += o.default_text;
      s += "\"";
    } else {
      s += " (default ";
      s += o.default_text;
      s += ")";
    }
    s += "\n      ";
    s += o.help;
    s += "\n      config file key: ";
    s += o.config_key;
    s += "\n";
  }
  s += "\nSignals: SIGTERM or SIGINT stop the daemon gracefully (in-flight scrapes finish).\n";
  return s;
}

}  // namespace statlet
