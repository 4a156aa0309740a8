#include "exporters/extra_families.h"

namespace statlet {

void AppendFamilyHeader(std::string* out, ExpositionFormat format, std::string_view name, std::string_view type,
                        std::string_view help, std::string_view unit) {
  if (format == ExpositionFormat::kText004) {
    out->append("# HELP ").append(name).push_back(' ');
    AppendEscapedHelp(out, help, format);
    out->append("\n# TYPE ").append(name).push_back(' ');
    out->append(type).push_back('\n');
    return;
  }
  std::string_view family = name;
  if (type == "counter" && family.size() > 6 && family.substr(family.size() - 6) == "_total") {
    family.remove_suffix(6);
  }
  out->append("# TYPE ").append(family).push_back(' ');
  out->append(type).push_back('\n');
  if (!unit.empty()) {
    out->append("# UNIT ").append(family).push_back(' ');
    out->append(unit).push_back('\n');
  }
  out->append("# HELP ").append(family).push_back(' ');
  AppendEscapedHelp(out, help, format);
  out->push_back('\n');
}

}  // namespace statlet
