// Guest-side workloads for the VM stage. Each runs inside one test cgroup, does a
// known amount of work, records what it did in a small "key=value" report file, and
// then stays alive (pause) so the cgroup remains populated while statlet reads it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace statlet::vmtest {

// "--name value" flags of one subcommand.
class Flags {
 public:
  bool Parse(int argc, char** argv);  // false on a stray argument or a flag without value
  std::string Get(const std::string& name, const std::string& fallback = "") const;
  uint64_t GetBytes(const std::string& name, uint64_t fallback) const;  // 4096, 64K, 1M, 1G

 private:
  std::map<std::string, std::string> values_;
};

// Writes report to path.tmp and renames it, so a poller never sees half a report.
bool WriteReport(const std::string& path, const std::string& report);

// Prints "statlet_vm_workload: <what>: <errno's text>" and returns 1, the workloads' failure.
int Fail(const char* what);

// Blocks until a signal ends the process; the guest powers off when it is done.
[[noreturn]] void PauseForever();

// Each returns 0 on success, 1 on a failed system call (reason on stderr).
int RunBurn(const Flags& f);         // spin --threads N for --seconds S of wall time
int RunAlloc(const Flags& f);        // touch --bytes B of anonymous memory, then hold
int RunOomLoop(const Flags& f);      // let a child be OOM-killed --kills K times
int RunForker(const Flags& f);       // --threads T, then fork until pids.max refuses
int RunDirectIo(const Flags& f);     // O_DIRECT writes/reads of known sizes on --dev
int RunDirty(const Flags& f);        // write --bytes B to --path through the page cache, no sync
int RunRecv(const Flags& f);         // accept one TCP stream on --port, count its bytes
int RunSend(const Flags& f);         // send --bytes N to --host:--port
int RunAllocLoop(const Flags& f);    // touch fresh anonymous pages until SIGUSR1 (memory.high livelock)
int RunAllocSteps(const Flags& f);   // grow by --step each time --go/<k> appears
int RunCacheReader(const Flags& f);  // re-read --path through the page cache until SIGUSR1

}  // namespace statlet::vmtest
