// NCCL as the wire of ordered channels between ranks (comm/channel_wire.hpp,
// docs/gpu.md, "Ordered channels over NCCL"): one two-rank communicator per
// directed rank pair (the sender is its rank 0), created on first need and
// warmed up with a one-byte transfer, with a stream of its own on each
// side; the k-th ncclSend of a communicator meets the peer's k-th ncclRecv,
// which the channels order. Device buffers: the channels' send and receive
// tasks run on CUDA workers of this rank's GPU.
#pragma once

#include <memory>

#include "comm/channel_wire.hpp"

namespace rrfp::gpu {

// The wire of this rank's GPU `cuda_device`. Its first connect() checks,
// on every rank at once, that no two ranks share a GPU (NCCL puts a GPU in
// a communicator at most once) and says which do.
std::unique_ptr<ChannelWire> nccl_wire(int cuda_device, WireRendezvous rendezvous);

}  // namespace rrfp::gpu
