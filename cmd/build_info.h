// What this statlet is: the project version and the source revision it was built from
// (cmd/revision.cmake), for --version, the start-up line and statlet_build_info.
#pragma once

namespace statlet {

const char* StatletVersion();   // CMakeLists.txt's project version, e.g. "0.1.0"
const char* StatletRevision();  // `git describe` at build time, -DSTATLET_REVISION, or "unknown"

}  // namespace statlet
