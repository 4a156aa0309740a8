// libFuzzer target for every text format statlet parses: the first byte picks the parser,
// the rest is the file content. Parsers must never crash, hang or read out of bounds, and
// what they accept must be self-consistent.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "collector/cgroup_files.h"
#include "collector/cgroup_hierarchies.h"
#include "collector/cgroup_path_classifier.h"
#include "collector/parse/cgroup_parsers.h"

using namespace statlet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  uint64_t v = 0;
  switch (data[0] % 15) {
    case 0: {
      if (parse::ParseU64(in, &v)) {
        uint64_t w = 0;
        if (!parse::ParseLimit(in, &w) || w != v) std::abort();  // a number is also a limit
      }
      break;
    }
    case 1: {
      Opt<uint64_t> q, p;
      parse::ParseCpuMax(in, &q, &p);
      parse::ParseV1Quota(in, &v);
      parse::ParseV1Limit(in, &v);
      break;
    }
    case 2: {
      Psi psi;
      if (parse::ParsePsi(in, &psi) && psi.some && psi.some->avg10 != psi.some->avg10 &&
          in.find("nan") == std::string_view::npos)
        std::abort();
      break;
    }
    case 3: {
      std::vector<IoDeviceStats> d;
      parse::ParseIoStat(in, &d);
      break;
    }
    case 4: {
      std::vector<IoDeviceStats> d;
      parse::ParseBlkio(in, data[0] & 0x10, &d);
      // merged per device: no duplicates
      for (size_t i = 0; i < d.size(); ++i)
        for (size_t j = i + 1; j < d.size(); ++j)
          if (d[i].major == d[j].major && d[i].minor == d[j].minor) std::abort();
      break;
    }
    case 5: {
      std::vector<NetInterfaceStats> ifs;
      parse::ParseNetDev(in, &ifs);
      for (const auto& i : ifs)
        if (i.name.empty()) std::abort();
      break;
    }
    case 6: {
      std::vector<uint64_t> l;
      parse::ParseU64List(in, &l);
      break;
    }
    case 7: {
      bool c;
      uint32_t first;
      std::vector<uint32_t> ids;
      uint64_t n = parse::CountIds(in, 1, &c, &first, &ids);
      if (n > in.size() || ids.size() != n || (n > 0 && ids.front() != first)) std::abort();
      break;
    }
    case 8: {
      // Every reader of the read plans, over the same content.
      CgroupHierarchies h;
      h.mount[kUnified] = "/u";
      h.mount[kV1Cpu] = "/c";
      h.mount[kV1Cpuacct] = "/a";
      h.mount[kV1Memory] = "/m";
      h.mount[kV1Pids] = "/p";
      h.mount[kV1Blkio] = "/b";
      h.mount[kV1Hugetlb] = "/h";
      const std::vector<std::string> sizes = {"2MB", "1GB"};
      CgroupStats s;
      for (const auto* r : BuildReadPlan(h, sizes)) ApplyReader(*r, in, &s);
      h.v2_cpu = h.v2_memory = h.v2_io = h.v2_pids = h.v2_hugetlb = true;
      for (const auto* r : BuildReadPlan(h, sizes)) ApplyReader(*r, in, &s);
      if (s.memory.hugetlb.size() > sizes.size()) std::abort();  // one entry per page size
      FinishCgroupStats(&s);
      if (s.memory.working_set_bytes && s.memory.usage_bytes && *s.memory.working_set_bytes > *s.memory.usage_bytes)
        std::abort();
      break;
    }
    case 9: {
      auto pc = ClassifyCgroupPath(in);
      if (pc.kind == CgroupKind::kContainer && pc.container_id.empty()) std::abort();
      if (!pc.pod_path.empty() && in.substr(0, pc.pod_path.size()) != pc.pod_path) std::abort();
      break;
    }
    case 10: {
      (void)ParseMountinfo(in, "/sys/fs/cgroup");
      break;
    }
    case 11: {
      struct S {
        Opt<uint64_t> a, b;
      };
      const parse::FlatKeyField<S> t[] = {{"a", &S::a}, {"b", &S::b, 1000}};
      S s;
      parse::ParseFlatKeyedInto(in, t, &s);
      break;
    }
    case 12: {
      std::string size;
      if (parse::ParseHugepagesDirName(in, &size) &&
          (size.size() < 3 || (size.substr(size.size() - 2) != "KB" && size.substr(size.size() - 2) != "MB" &&
                               size.substr(size.size() - 2) != "GB")))
        std::abort();
      break;
    }
    case 13: {
      parse::ParseMaxOpenFilesSoft(in, &v);
      break;
    }
    case 14: {
      std::string source;
      if (parse::ParseMountSource(in, 8, 1, &source) && (source.empty() || in.find(source) == std::string_view::npos))
        std::abort();
      break;
    }
  }
  return 0;
}
