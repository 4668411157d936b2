#include "blas.hpp"

#include <algorithm>
#include <cctype>
#include <iterator>

#if defined(XHAL_HAVE_BLAS)
#include <cblas.h>
#endif

namespace xhal::cpu {

std::string blas_summary() {
#if defined(XHAL_HAVE_BLAS)
  static constexpr const char* kThreading[] = {"sequential", "pthreads", "OpenMP"};
  const int parallel = openblas_get_parallel();
  std::string config = openblas_get_config();  // "OpenBLAS 0.3.21 DYNAMIC_ARCH ..."
  config = config.substr(0, config.find(' ', config.find(' ') + 1));
  return config + " (" + openblas_get_corename() + " kernels, " +
         (parallel >= 0 && parallel <= 2 ? kThreading[parallel] : "?") + ")";
#else
  return "none (built without OpenBLAS)";
#endif
}

std::string blas_kernels_warning() {
#if defined(XHAL_HAVE_BLAS) && defined(__x86_64__)
  const std::string core = openblas_get_corename();
  // OpenBLAS's x86-64 cores without AVX.
  static constexpr const char* kPreAvx[] = {"prescott", "core2", "penryn", "dunnington", "nehalem", "atom", "katmai"};
  std::string lower = core;
  for (char& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  const bool old = std::find(std::begin(kPreAvx), std::end(kPreAvx), lower) != std::end(kPreAvx);
  if (old && __builtin_cpu_supports("avx2")) {
    return "OpenBLAS runs its " + core + " kernels (no AVX) on a CPU with " +
           (__builtin_cpu_supports("avx512f") ? "AVX-512" : "AVX2") +
           ": this OpenBLAS does not know the CPU model. Set OPENBLAS_CORETYPE (Haswell for AVX2, SkylakeX or "
           "Cooperlake for AVX-512) for kernels several times faster";
  }
#endif
  return "";
}

#if defined(XHAL_HAVE_BLAS)
void gemm_nt(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
             int64_t ldc, bool accumulate) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(M), blasint(N), blasint(K), 1.0f, a, blasint(lda), b,
              blasint(ldb), accumulate ? 1.0f : 0.0f, c, blasint(ldc));
}

void gemm_nn(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
             int64_t ldc, bool accumulate) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(M), blasint(N), blasint(K), 1.0f, a, blasint(lda), b,
              blasint(ldb), accumulate ? 1.0f : 0.0f, c, blasint(ldc));
}

void gemm_tn(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb, float* c,
             int64_t ldc, bool accumulate) {
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, blasint(M), blasint(N), blasint(K), 1.0f, a, blasint(lda), b,
              blasint(ldb), accumulate ? 1.0f : 0.0f, c, blasint(ldc));
}
#endif

}  // namespace xhal::cpu
