#include "gpu/synthetic_kernel.hpp"

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace rrfp::gpu {

namespace {

// codelets/splitmix.hpp on the GPU. The payload's word k is the k-th value
// of the SplitMix64 stream seeded with the key, whose state after k steps
// is key + k * golden ratio, so each thread computes its words directly.
__device__ std::uint64_t mix(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

__device__ unsigned char payload_byte(std::uint64_t key, std::size_t i) {
  const std::uint64_t w = mix(key + (i / 8) * 0x9e3779b97f4a7c15ULL);
  return static_cast<unsigned char>(w >> (8 * (i % 8)));  // little-endian, as fill_payload's memcpy
}

__device__ std::uint64_t global_ns() {
  std::uint64_t t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__global__ void synthetic_pass(const unsigned char* in, unsigned char* out, std::size_t bytes, std::uint64_t in_key,
                               std::uint64_t out_key, std::uint64_t ns, unsigned long long* bad) {
  __shared__ std::uint64_t t0;
  if (threadIdx.x == 0) t0 = global_ns();
  __syncthreads();
  for (std::size_t i = threadIdx.x; i < bytes; i += blockDim.x) {
    if (in && in[i] != payload_byte(in_key, i)) atomicMin(bad, static_cast<unsigned long long>(i));
    if (out) out[i] = payload_byte(out_key, i);
  }
  if (threadIdx.x == 0)
    while (global_ns() - t0 < ns) {
    }
}

}  // namespace

void launch_synthetic_pass(void* stream, const void* in, void* out, std::size_t bytes, std::uint64_t in_key,
                           std::uint64_t out_key, std::uint64_t ns, long long* bad) {
  // -1 is the largest unsigned value: atomicMin keeps the first bad byte.
  synthetic_pass<<<1, 256, 0, static_cast<cudaStream_t>(stream)>>>(
      static_cast<const unsigned char*>(in), static_cast<unsigned char*>(out), bytes, in_key, out_key, ns,
      reinterpret_cast<unsigned long long*>(bad));
  if (const cudaError_t e = cudaGetLastError(); e != cudaSuccess)
    throw std::runtime_error(std::string("launching a synthetic pass: ") + cudaGetErrorString(e));
}

}  // namespace rrfp::gpu
