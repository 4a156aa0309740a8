// One ProxyStage per test process, started by the first test that needs it and stopped
// when the process ends (tests/proxy/proxy_test_main.cc): starting containerd and its
// image is the slow part.
#pragma once

#include <string>

#include "tests/proxy/proxy_stage.h"

namespace statlet::proxy_test {

// The stage, or null with `error` set when it did not start.
ProxyStage* SharedStage(std::string* error);

}  // namespace statlet::proxy_test
