#include "bpf/percpu_map.h"

#include <bpf/bpf.h>
#include <bpf/libbpf.h>
#include <cerrno>
#include <algorithm>
#include <cstring>

namespace statlet::bpf {
namespace {

constexpr uint32_t kBatchEntries = 256;
// The kernel-internal ENOTSUPP that older kernels leak from unsupported map operations.
constexpr int kKernelENOTSUPP = 524;

// Returns false when the kernel has no batch operations for this map (caller falls back).
bool ForEachBatched(int fd, size_t key_size, size_t stride, int cpus, const PerCpuVisitor& visit, Status* status) {
  std::vector<uint8_t> keys(key_size * kBatchEntries);
  std::vector<uint8_t> values(stride * cpus * kBatchEntries);
  // Hash maps use a bucket index as the opaque batch token; give it room for any key.
  std::vector<uint8_t> in_token(std::max<size_t>(key_size, 8)), out_token(in_token.size());
  bool first = true;
  for (;;) {
    uint32_t count = kBatchEntries;
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    int err = bpf_map_lookup_batch(fd, first ? nullptr : in_token.data(), out_token.data(), keys.data(), values.data(),
                                   &count, &opts);
    int e = err < 0 ? errno : 0;
    if (err < 0 && e != ENOENT) {
      if (first && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP || e == kKernelENOTSUPP)) return false;
      *status = ErrnoStatus(e, "bpf map batch lookup");
      return true;
    }
    for (uint32_t i = 0; i < count; i++) {
      visit(keys.data() + i * key_size, values.data() + i * stride * cpus);
    }
    if (e == ENOENT) return true;  // that was the last chunk
    in_token.swap(out_token);
    first = false;
  }
}

Status ForEachByKey(int fd, size_t key_size, size_t stride, int cpus, const PerCpuVisitor& visit) {
  std::vector<uint8_t> key(key_size), next(key_size), values(stride * cpus);
  const void* prev = nullptr;
  while (bpf_map_get_next_key(fd, prev, next.data()) == 0) {
    if (bpf_map_lookup_elem(fd, next.data(), values.data()) == 0) visit(next.data(), values.data());
    key.swap(next);
    prev = key.data();
  }
  if (errno != ENOENT) return ErrnoStatus(errno, "bpf map iteration");
  return Status::Ok();
}

}  // namespace

int PossibleCpus() {
  static const int n = [] {
    int c = libbpf_num_possible_cpus();
    return c > 0 ? c : 1;
  }();
  return n;
}

Status ForEachPerCpuEntry(int map_fd, size_t key_size, size_t value_size, const PerCpuVisitor& visit) {
  const size_t stride = PerCpuStride(value_size);
  const int cpus = PossibleCpus();
  Status status;
  if (ForEachBatched(map_fd, key_size, stride, cpus, visit, &status)) return status;
  return ForEachByKey(map_fd, key_size, stride, cpus, visit);
}

Status ForEachEntry(int map_fd, size_t key_size, size_t value_size, const PerCpuVisitor& visit) {
  Status status;  // plain maps hand out values packed, unpadded
  if (ForEachBatched(map_fd, key_size, value_size, 1, visit, &status)) return status;
  return ForEachByKey(map_fd, key_size, value_size, 1, visit);
}

Status ForEachPerCpuSlot(int map_fd, size_t value_size, uint32_t end, const PerCpuSlotVisitor& visit) {
  const size_t entry_bytes = PerCpuStride(value_size) * PossibleCpus();
  std::vector<uint32_t> keys(kBatchEntries);
  std::vector<uint8_t> values(entry_bytes * kBatchEntries);
  uint32_t token_in = 0, token_out = 0;  // an array's batch token is the last index read
  uint32_t done = 0;
  while (done < end) {
    uint32_t count = std::min(kBatchEntries, end - done);
    LIBBPF_OPTS(bpf_map_batch_opts, opts);
    int err = bpf_map_lookup_batch(map_fd, done == 0 ? nullptr : &token_in, &token_out, keys.data(), values.data(),
                                   &count, &opts);
    int e = err < 0 ? errno : 0;
    if (err < 0 && e != ENOENT) {
      if (done == 0 && (e == EINVAL || e == ENOTSUP || e == EOPNOTSUPP || e == kKernelENOTSUPP)) break;
      return ErrnoStatus(e, "bpf array batch lookup");
    }
    for (uint32_t i = 0; i < count; i++) visit(keys[i], values.data() + i * entry_bytes);
    done += count;
    if (e == ENOENT || count == 0) return Status::Ok();
    token_in = token_out;
  }
  if (done >= end) return Status::Ok();
  for (uint32_t i = 0; i < end; i++) {  // no batch operations on this kernel
    if (bpf_map_lookup_elem(map_fd, &i, values.data()) == 0) visit(i, values.data());
  }
  return Status::Ok();
}

uint64_t SumPerCpuArrayU64(int map_fd) {
  std::vector<uint64_t> values(PossibleCpus());
  uint32_t zero = 0;
  if (bpf_map_lookup_elem(map_fd, &zero, values.data()) != 0) return 0;
  uint64_t sum = 0;
  for (uint64_t v : values) sum += v;
  return sum;
}

void DeleteKeys(int map_fd, size_t key_size, const std::vector<uint8_t>& keys) {
  for (size_t off = 0; off + key_size <= keys.size(); off += key_size) {
    bpf_map_delete_elem(map_fd, keys.data() + off);
  }
}

}  // namespace statlet::bpf
