#include "cmd/structured_output.h"

#include <yaml-cpp/yaml.h>

namespace statlet {
namespace {

void SetBlock(YAML::Node n) {
  n.SetStyle(YAML::EmitterStyle::Block);
  if (n.IsMap()) {
    for (auto it = n.begin(); it != n.end(); ++it) SetBlock(it->second);
  } else if (n.IsSequence()) {
    for (auto it = n.begin(); it != n.end(); ++it) SetBlock(*it);
  }
}

}  // namespace

std::string JsonAsYaml(const std::string& json) {
  YAML::Node node = YAML::Load(json);
  SetBlock(node);
  YAML::Emitter e;
  e << node;
  return e.c_str();
}

}  // namespace statlet
