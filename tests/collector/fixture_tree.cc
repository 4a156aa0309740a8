#include "tests/collector/fixture_tree.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

namespace statlet::testing {

RecordedCgroups LoadRecordedCgroups(const std::string& fixture_path) {
  std::ifstream in(fixture_path);
  if (!in) throw std::runtime_error("cannot open fixture " + fixture_path);
  RecordedCgroups out;
  std::string line, dir, file;
  std::string* content = nullptr;
  while (std::getline(in, line)) {
    if (line.rfind("######## ", 0) == 0) {
      std::string rest = line.substr(9);
      size_t sp = rest.find(' ');
      if (sp != std::string::npos && rest[0] != '/') {
        // "######## memory.stat /sys/fs/cgroup/x": one file's content follows
        file = rest.substr(0, sp);
        dir = rest.substr(sp + 1);
        content = &out[dir][file];
      } else {
        dir = rest;
        content = nullptr;
      }
      continue;
    }
    if (line.rfind("-- ", 0) == 0 && line.back() == ':') {
      file = line.substr(3, line.size() - 4);
      content = &out[dir][file];
      continue;
    }
    if (line.rfind("== ", 0) == 0 || line.rfind("#", 0) == 0) {
      content = nullptr;
      continue;
    }
    if (content) *content += line + "\n";
  }
  return out;
}

TempDir::TempDir() {
  char tmpl[] = "/tmp/statlet-test-XXXXXX";
  char* p = mkdtemp(tmpl);
  if (!p) throw std::runtime_error("mkdtemp failed");
  path_ = p;
}

TempDir::~TempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void WriteFile(const std::string& path, const std::string& content) {
  std::ofstream f(path, std::ios::trunc);
  f << content;
  if (!f) throw std::runtime_error("cannot write " + path);
}

void MakeDirs(const std::string& path) { std::filesystem::create_directories(path); }

}  // namespace statlet::testing
