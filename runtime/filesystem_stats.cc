#include "runtime/filesystem_stats.h"

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/sysmacros.h>

#include <fstream>
#include <sstream>

#include "collector/parse/cgroup_parsers.h"

namespace statlet {

bool StatFilesystem(const std::string& path, FilesystemStats* out, const std::string& mountinfo_path) {
  struct statvfs vfs;
  struct stat st;
  if (path.empty() || ::statvfs(path.c_str(), &vfs) != 0 || ::stat(path.c_str(), &st) != 0) return false;
  out->capacity_bytes = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  out->inodes_total = static_cast<uint64_t>(vfs.f_files);
  out->inodes_free = static_cast<uint64_t>(vfs.f_ffree);
  uint32_t ma = major(st.st_dev), mi = minor(st.st_dev);
  std::ifstream f(mountinfo_path);
  std::stringstream text;
  text << f.rdbuf();
  if (!parse::ParseMountSource(text.str(), ma, mi, &out->device)) {
    out->device = std::to_string(ma) + ":" + std::to_string(mi);
  }
  return true;
}

}  // namespace statlet
