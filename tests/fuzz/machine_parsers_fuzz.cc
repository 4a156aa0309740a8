// libFuzzer target for the machine's text formats (collector/parse/machine_parsers.h): the
// first byte picks the parser, the rest is the file content. Parsers must never crash, hang
// or read out of bounds, and what they accept must be self-consistent.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "collector/parse/machine_parsers.h"

using namespace statlet;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view in(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 6) {
    case 0: {
      const parse::CpuinfoCounts c = parse::ParseCpuinfo(in);
      // A distinct core is in a distinct or the same package: never fewer cores than packages.
      if (c.physical_cores && c.sockets && *c.physical_cores < 1) std::abort();
      break;
    }
    case 1: {
      const auto total = parse::ParseMeminfoBytes(in, "MemTotal");
      if (total && *total % 1024 != 0) std::abort();
      break;
    }
    case 2: {
      const auto cpus = parse::ParseCpuList(in);
      if (cpus && cpus->size() > 65536) std::abort();
      break;
    }
    case 3: {
      parse::CountCpuMask(in);
      parse::ParseCacheSizeBytes(in);
      break;
    }
    case 4: {
      const auto d = parse::ParseDistances(in);
      if (d && d->empty()) std::abort();
      break;
    }
    case 5: {
      parse::ParseHugepagesDirKb(in);
      parse::NumberedName(in, "cpu");
      break;
    }
  }
  return 0;
}
