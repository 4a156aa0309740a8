#include "bench/bpf/program_stats.h"

#include <unistd.h>

#include <string_view>

namespace statlet::bench {

uint32_t HighestProgramId() {
  uint32_t id = 0, next = 0;
  while (bpf_prog_get_next_id(id, &next) == 0) id = next;
  return id;
}

std::vector<ProgramStats> StatletProgramsAfter(uint32_t after) {
  std::vector<ProgramStats> out;
  for (uint32_t id = after, next = 0; bpf_prog_get_next_id(id, &next) == 0; id = next) {
    int fd = bpf_prog_get_fd_by_id(next);
    if (fd < 0) continue;  // unloaded since it was listed
    ProgramStats p{next, {}};
    uint32_t len = sizeof(p.info);
    if (bpf_obj_get_info_by_fd(fd, &p.info, &len) == 0 && std::string_view(p.info.name).starts_with("statlet_")) {
      out.push_back(p);
    }
    close(fd);
  }
  return out;
}

}  // namespace statlet::bench
