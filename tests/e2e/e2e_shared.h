// What the e2e binary's test files share: the stage that StageEnvironment (e2e_test.cc)
// starts once for the whole binary, and its workload pods.
#pragma once

#include <map>
#include <string>

#include "tests/e2e/cri_driver.h"
#include "tests/e2e/e2e_stage.h"

namespace statlet::e2e {

struct Workload {
  Pod pod;
  std::map<std::string, std::string> containers;  // container name → id
};

// Null when the stage did not start (g_setup_error says why).
extern E2eStage* g_stage;
extern std::string g_setup_error;
extern std::map<std::string, Workload> g_pods;  // by pod name

}  // namespace statlet::e2e

#define REQUIRE_STAGE() \
  ASSERT_NE(::statlet::e2e::g_stage, nullptr) << "e2e stage did not start: " << ::statlet::e2e::g_setup_error
