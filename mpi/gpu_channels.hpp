// The ordered channels of a rank whose devices are CUDA workers: NCCL as
// the wire (gpu/nccl_wire.hpp), MPI for the announcements and to hand the
// communicators' ids over. The CUDA build's rrfp registers the wire
// (drivers/main.cpp), so this library links neither CUDA nor NCCL.
#pragma once

#include <memory>

#include "comm/channel_wire.hpp"
#include "runtime/rank_transport.hpp"

namespace rrfp {

using GpuWireFactory = std::unique_ptr<ChannelWire> (*)(int cuda_device, WireRendezvous rendezvous);
void set_gpu_channel_wire(GpuWireFactory factory);

// Kept for the process (a failed run's thread may still point into it),
// on the GPU of its first run. SpecError when no wire was registered,
// UnrecoverableError when a later run is on another GPU.
MessageChannels* nccl_ordered_channels(int cuda_device);

}  // namespace rrfp
