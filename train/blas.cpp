#include "train/blas.hpp"

#include <dlfcn.h>

#include <climits>
#include <cstdlib>
#include <stdexcept>

#include <fmt/format.h>

namespace rrfp::train {

namespace {

template <class Fn>
Fn symbol(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_DEFAULT, name));
}

std::string real_path(const char* p) {
  char buf[PATH_MAX];
  return realpath(p, buf) ? std::string(buf) : std::string(p);
}

}  // namespace

BlasInfo blas_in_use() {
  void* sgemm = dlsym(RTLD_DEFAULT, "sgemm_");
  Dl_info where{};
  if (!sgemm || !dladdr(sgemm, &where) || !where.dli_fname)
    throw std::runtime_error("no BLAS is loaded in this process (sgemm_ is undefined)");
  BlasInfo b;
  b.library = real_path(where.dli_fname);
  if (auto config = symbol<char* (*)()>("openblas_get_config")) {
    b.kind = "OpenBLAS";
    b.detail = config();
    if (auto parallel = symbol<int (*)()>("openblas_get_parallel")) {
      const int p = parallel();
      if (p != 2) b.detail += p == 0 ? " (sequential)" : " (pthreads)";  // an OpenMP build says USE_OPENMP
    }
    if (auto n = symbol<int (*)()>("openblas_get_num_threads")) b.threads = n();
  } else if (auto blis = symbol<const char* (*)()>("bli_info_get_version_str")) {
    b.kind = "BLIS";
    b.detail = std::string("BLIS ") + blis();
    if (auto n = symbol<long (*)()>("bli_thread_get_num_threads")) b.threads = static_cast<int>(n());
  } else if (symbol<void*>("MKL_Get_Version_String")) {
    b.kind = "MKL";
    b.detail = "Intel MKL";
  } else if (b.library.find("libblas.so") != std::string::npos || b.library.find("libcblas") != std::string::npos) {
    // A plain libblas that announces nothing: netlib's reference (Debian's
    // blas/libblas.so.3); the optimised ones answer one of the symbols above.
    b.kind = "reference";
    b.detail = "netlib reference BLAS";
    b.threads = 1;
  } else {
    b.kind = "unknown";
  }
  return b;
}

std::string BlasInfo::describe() const {
  return fmt::format("{} ({})", detail.empty() ? kind : detail, library);
}

void blas_single_thread() {
  if (auto set = symbol<void (*)(int)>("openblas_set_num_threads")) set(1);
  if (auto set = symbol<void (*)(long)>("bli_thread_set_num_threads")) set(1);
}

}  // namespace rrfp::train
