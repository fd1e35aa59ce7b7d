// Which BLAS LibTorch calls at run time, and keeping it to one thread per
// worker. Debian's LibTorch links libblas.so.3, which the alternatives system
// resolves to OpenBLAS, BLIS, MKL or the netlib reference (15-20x slower on
// gpt-tiny): only the loaded process can say which (docs/training.md).
// Torch-free: it asks the dynamic linker, so the driver and tests can use it.
#pragma once

#include <string>

namespace rrfp::train {

struct BlasInfo {
  std::string kind;     // "OpenBLAS", "BLIS", "MKL", "reference" or "unknown"
  std::string library;  // the file that defines sgemm_ in this process (resolved)
  std::string detail;   // the library's own description (OpenBLAS: version, core, threading)
  int threads = -1;     // its thread count as seen by the calling thread; -1 when it cannot say
  bool optimised() const { return kind != "reference" && kind != "unknown"; }
  std::string describe() const;  // "<what> (<file>)", for logs
};

// Resolves sgemm_ the way LibTorch's calls do (the global symbol scope).
// Call it after LibTorch is loaded; throws std::runtime_error when no BLAS
// is loaded at all.
BlasInfo blas_in_use();

// Sets the BLAS's own thread count to 1 (OpenBLAS, BLIS; a no-op for the
// reference BLAS, which has no threads). OpenBLAS built with OpenMP follows
// the calling thread's OpenMP count, which torch::set_num_threads(1) sets.
void blas_single_thread();

}  // namespace rrfp::train
