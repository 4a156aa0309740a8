#include "cmd/build_info.h"

#include "cmd/statlet_revision.h"

namespace statlet {

const char* StatletVersion() { return STATLET_VERSION_STRING; }
const char* StatletRevision() { return STATLET_REVISION_STRING; }

}  // namespace statlet
