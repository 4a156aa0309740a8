// Reading BPF per-CPU hash maps from user space.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <vector>

#include "base/status.h"

namespace statlet::bpf {

// Number of possible CPUs: the number of values a per-CPU map returns per key.
int PossibleCpus();

// The bytes one key's per-CPU values take in a lookup buffer: each value is padded to 8.
inline size_t PerCpuStride(size_t value_size) { return (value_size + 7) / 8 * 8; }

// Calls visit(key, values) for every entry of a per-CPU hash map, where `values` holds
// PossibleCpus() values spaced PerCpuStride(value_size) apart. Uses batched lookups
// (one syscall per chunk) and falls back to key-by-key iteration on kernels without them.
using PerCpuVisitor = std::function<void(const uint8_t* key, const uint8_t* values)>;
Status ForEachPerCpuEntry(int map_fd, size_t key_size, size_t value_size, const PerCpuVisitor& visit);

// Calls visit(key, value) for every entry of a plain (not per-CPU) hash map, batched as above.
Status ForEachEntry(int map_fd, size_t key_size, size_t value_size, const PerCpuVisitor& visit);

// Calls visit(index, values) for indices [0, end) of a per-CPU array, `values` laid out as
// in ForEachPerCpuEntry; batched, with a per-index fallback.
using PerCpuSlotVisitor = std::function<void(uint32_t index, const uint8_t* values)>;
Status ForEachPerCpuSlot(int map_fd, size_t value_size, uint32_t end, const PerCpuSlotVisitor& visit);

// Sum over CPUs of the u64 at index 0 of a per-CPU array (the probes' "lost" counters).
uint64_t SumPerCpuArrayU64(int map_fd);

// Deletes the given keys (each key_size bytes, packed); missing keys are not an error.
void DeleteKeys(int map_fd, size_t key_size, const std::vector<uint8_t>& keys);

}  // namespace statlet::bpf
