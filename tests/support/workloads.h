// What the children of live tests run: CPU burned to a known amount of the thread's own
// CPU time, or forever, on a chosen CPU.
#pragma once

#include <cstdint>

namespace statlet::testing {

// Runs on this thread until it has used `cpu_ns` of CPU time (CLOCK_THREAD_CPUTIME_ID).
void BurnCpu(int64_t cpu_ns);
// Spins until killed; usable as a Child body.
[[noreturn]] uint64_t SpinForever();
// Pins the calling thread to one CPU.
bool PinToCpu(int cpu);

}  // namespace statlet::testing
