// -o yaml of every view: the JSON a view writes, as YAML block style (yaml-cpp reads JSON).
#pragma once

#include <string>

namespace statlet {

std::string JsonAsYaml(const std::string& json);

}  // namespace statlet
