// Snapshot → runtime.v1 stats messages. Pure conversion: no I/O, no locking. A value the
// snapshot lacks stays unset in the message (never a zero), as upstream's UInt64Value
// wrappers intend.
#pragma once

#include <cstdint>

#include "cri/stats_selection.h"
#include "proto/api.pb.h"
#include "snapshot/snapshot.h"

namespace statlet::cri {

namespace v1 = ::runtime::v1;

void FillCpuUsage(const CpuStats& cpu, int64_t timestamp_ns, v1::CpuUsage* out);
void FillMemoryUsage(const MemoryStats& mem, int64_t timestamp_ns, v1::MemoryUsage* out);
// False (and `out` untouched) when the snapshot knows nothing about swap.
bool FillSwapUsage(const MemoryStats& mem, int64_t timestamp_ns, v1::SwapUsage* out);
void FillIoUsage(const IoStats& io, int64_t timestamp_ns, v1::IoUsage* out);
void FillProcessUsage(const ProcessStats& p, int64_t timestamp_ns, v1::ProcessUsage* out);
// default_interface = eth0 when present, else the first other interface; `interfaces` =
// the others without the loopback. False (`out` untouched) when there is no interface but
// the loopback: a network without a default interface crashes the kubelet.
bool FillNetworkUsage(const NetNamespaceStats& ns, int64_t timestamp_ns, v1::NetworkUsage* out);
void FillPsi(const Psi& psi, v1::PsiStats* out);

void FillContainerStats(const CriView& view, const ContainerEntry& c, v1::ContainerStats* out);
// With the stats of every container of the pod in linux.containers.
void FillPodSandboxStats(const CriView& view, const PodEntry& p, v1::PodSandboxStats* out);

}  // namespace statlet::cri
