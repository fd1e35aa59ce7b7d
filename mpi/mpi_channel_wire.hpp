// MPI as the wire of ordered channels (comm/channel_wire.hpp): every
// message of a directed rank pair goes with one tag, so MPI pairs the k-th
// send with the k-th receive exactly as NCCL pairs the calls of a
// communicator. Host buffers; CPU workers hand them over.
#pragma once

#include <memory>

#include <mpi.h>

#include "comm/channel_wire.hpp"

namespace rrfp {

// `comm`: the channels' communicator (ordered_channels_comm()).
std::unique_ptr<ChannelWire> mpi_channel_wire(MPI_Comm comm);

}  // namespace rrfp
