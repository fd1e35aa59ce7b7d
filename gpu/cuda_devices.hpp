// CUDA devices as the GPU code needs them (library RRFP::rrfp_gpu, built
// with -DRRFP_CUDA=ON; docs/gpu.md).
#pragma once

#include <string>

namespace rrfp::gpu {

// CUDA devices this process can use; 0 when there is no driver or device.
int cuda_device_count();
// Why there are none, for messages ("" when there is one).
std::string no_device_reason();
// Throws SpecError naming the problem when fewer than `n` devices exist.
void require_cuda_devices(int n);

}  // namespace rrfp::gpu
