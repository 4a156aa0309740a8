// The node fixture's former path: tests/metrics/edge_golden_test.cc includes it and stays
// byte for byte as it is (its renderings are the goldens' reference). The fixtures and the
// builder are in tests/support/snapshot_builder.h.
#pragma once

#include "tests/support/snapshot_builder.h"
