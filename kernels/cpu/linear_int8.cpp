// linear_int8 on the CPU: exact int32 dot products of the code rows, a row of x against a tile of
// kCols rows of w a task, then kernels/quantize.hpp's epilogue. The reference; the oneDNN kernel
// (CPUs with VNNI) is registered above it.
#include <algorithm>
#include <cstdint>

#include "kernel_registration.hpp"
#include "linear_quantized_operands.hpp"

namespace xhal::cpu {
namespace {

template <class E>
struct LinearInt8Kernel {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    constexpr int64_t kCols = 64;
    const TensorRef<const int8_t> x(c->tensors[XHAL_LINEAR_INT8_X]), w(c->tensors[XHAL_LINEAR_INT8_W]);
    const QuantizedLinearOut<E> out(c);
    const int64_t M = x.size(0), K = x.size(1), N = w.size(0), col_tiles = (N + kCols - 1) / kCols;
#pragma omp parallel for collapse(2) schedule(dynamic)
    for (int64_t m = 0; m < M; ++m) {
      for (int64_t ct = 0; ct < col_tiles; ++ct) {
        const int8_t* xr = x.at(m, 0);
        const int64_t n0 = ct * kCols, count = std::min(kCols, N - n0);
        int32_t sums[kCols];
        for (int64_t j = 0; j < count; ++j) {
          const int8_t* wr = w.at(n0 + j, 0);
          int32_t dot = 0;
#pragma omp simd reduction(+ : dot)
          for (int64_t k = 0; k < K; ++k) dot += int32_t(xr[k]) * int32_t(wr[k]);
          sums[j] = dot;
        }
        out.store(m, n0, sums, count);
      }
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) { register_float_kernels<LinearInt8Kernel>(host, "cpu.linear_int8", XHAL_OP_LINEAR_INT8); }

}  // namespace xhal::cpu
