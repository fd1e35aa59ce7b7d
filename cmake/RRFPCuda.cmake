# GPU code (gpu/, tests/gpu/): decides RRFP_CUDA_ENABLED after LibTorch was
# found. AUTO: on when the CUDA toolkit, NCCL, a CUDA-enabled StarPU and a
# CUDA LibTorch are all there; ON: each missing piece is an error; OFF: none.
# The README's default build finds Debian's LibTorch (CPU), so AUTO is off
# there; -DRRFP_CUDA=ON takes PyPI's CUDA torch from RRFP_TORCH_CUDA_VENV
# (scripts/install-deps.sh --cuda). docs/gpu.md.
set(RRFP_CUDA_ENABLED OFF)
if(RRFP_CUDA STREQUAL "OFF")
  return()
endif()
set(_missing)
find_package(CUDAToolkit QUIET)
if(NOT CUDAToolkit_FOUND)
  list(APPEND _missing "the CUDA toolkit (nvcc, cudart)")
endif()
if(NOT TARGET torch_cuda)
  list(APPEND _missing "a CUDA LibTorch (found ${TORCH_INSTALL_PREFIX}, which has no torch_cuda; scripts/install-deps.sh --cuda and -DRRFP_CUDA=ON)")
endif()
# The NCCL that LibTorch's wheel brings first: one libnccl.so.2 per process.
find_path(RRFP_NCCL_INCLUDE_DIR nccl.h
  HINTS "${TORCH_INSTALL_PREFIX}/../nvidia/nccl/include" ${CUDAToolkit_INCLUDE_DIRS} NO_DEFAULT_PATH)
find_path(RRFP_NCCL_INCLUDE_DIR nccl.h)
find_library(RRFP_NCCL_LIBRARY NAMES nccl libnccl.so.2 NAMES_PER_DIR
  HINTS "${TORCH_INSTALL_PREFIX}/../nvidia/nccl/lib" "${CUDAToolkit_LIBRARY_ROOT}/lib" ${CUDAToolkit_LIBRARY_DIR} NO_DEFAULT_PATH)
find_library(RRFP_NCCL_LIBRARY NAMES nccl libnccl.so.2)
if(NOT RRFP_NCCL_INCLUDE_DIR OR NOT RRFP_NCCL_LIBRARY)
  list(APPEND _missing "NCCL (nccl.h and libnccl)")
endif()
find_file(_starpu_config starpu_config.h HINTS ${STARPU_INCLUDE_DIRS} NO_DEFAULT_PATH)
set(_starpu_cuda "")
if(_starpu_config)
  file(STRINGS "${_starpu_config}" _starpu_cuda REGEX "^#define STARPU_USE_CUDA 1")
endif()
if(NOT _starpu_cuda)
  list(APPEND _missing "a StarPU built with CUDA (scripts/build-starpu.sh builds it where nvcc is)")
endif()
if(_missing)
  list(JOIN _missing "; " _why)
  if(RRFP_CUDA STREQUAL "ON")
    message(FATAL_ERROR "RRFP_CUDA=ON but missing: ${_why}")
  endif()
  message(STATUS "RRFP_CUDA=AUTO: GPU code off (missing: ${_why})")
  return()
endif()
set(RRFP_CUDA_ENABLED ON)
message(STATUS "RRFP_CUDA: GPU code on (LibTorch ${TORCH_INSTALL_PREFIX}, NCCL ${RRFP_NCCL_LIBRARY})")
