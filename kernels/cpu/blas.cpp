#include "blas.hpp"

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

#if defined(XHAL_HAVE_BLAS)
void gemm_nt(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb,
             float* c, int64_t ldc, bool accumulate) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, blasint(M), blasint(N), blasint(K), 1.0f, a, blasint(lda),
              b, blasint(ldb), accumulate ? 1.0f : 0.0f, c, blasint(ldc));
}

void gemm_nn(int64_t M, int64_t N, int64_t K, const float* a, int64_t lda, const float* b, int64_t ldb,
             float* c, int64_t ldc, bool accumulate) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, blasint(M), blasint(N), blasint(K), 1.0f, a,
              blasint(lda), b, blasint(ldb), accumulate ? 1.0f : 0.0f, c, blasint(ldc));
}
#endif

}  // namespace xhal::cpu
