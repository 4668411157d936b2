// linear_int8 on CPUs with VNNI through oneDNN's int8 matmul: x (s8) times w (s8, read as the
// matmul's K x N weights transposed) into exact int32 sums, then kernels/quantize.hpp's epilogue
// (scales, bias, rounding) as every backend applies it. Rows of x are taken kRowBlock at a time so
// that the int32 block stays bounded. Without VNNI, oneDNN's int8 kernels sum pairs of products
// in saturating 16-bit lanes (inexact), so the kernel stands aside there.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <exception>
#include <unordered_map>

#include "cpu_features.hpp"
#include "kernels/blas_layout.hpp"
#include "kernel_registration.hpp"
#include "linear_quantized_operands.hpp"
#include "onednn.hpp"
#include "scratch.hpp"

namespace xhal::cpu {
namespace {

constexpr int64_t kRowBlock = 1024;

}  // namespace

// oneDNN's own view of the CPU: the ISA it will run must have VNNI (avx2_vnni, avx512_core_vnni and
// every ISA above the latter include its bits), and XHAL_CPU_DISABLE must not name it.
bool onednn_runs_vnni() {
  static const bool vnni = [] {
    const auto isa = static_cast<unsigned>(dnnl::get_effective_cpu_isa());
    const auto has = [&](dnnl::cpu_isa want) {
      return (isa & static_cast<unsigned>(want)) == static_cast<unsigned>(want);
    };
    return has(dnnl::cpu_isa::avx512_core_vnni) || has(dnnl::cpu_isa::avx2_vnni);
  }();
  return vnni && cpu_has_int8_dot();
}

namespace {

const char* onednn_int8_supports(void*, const xhal_op_call* c) {
  if (!onednn_runs_vnni()) return "no VNNI (or XHAL_CPU_DISABLE names it): oneDNN's int8 sums would saturate";
  const DLTensor *x = c->tensors[XHAL_LINEAR_INT8_X], *w = c->tensors[XHAL_LINEAR_INT8_W];
  if (x->shape[1] == 0) return "K = 0: out is the bias alone";
  if (!kernels::blas_rows_apart(x) || !kernels::blas_rows_apart(w)) return "rows overlap";
  return nullptr;
}

dnnl::memory::desc desc_of(int64_t rows, int64_t cols, dnnl::memory::dims strides, dnnl::memory::data_type type) {
  return dnnl::memory::desc({rows, cols}, type, strides);
}

template <class E>
struct LinearInt8Onednn {
  static xhal_status run(const xhal_op_call* c, char* msg, size_t len) {
    const DLTensor *x = c->tensors[XHAL_LINEAR_INT8_X], *w = c->tensors[XHAL_LINEAR_INT8_W];
    const int64_t M = x->shape[0], K = x->shape[1], N = w->shape[0];
    if (M == 0 || N == 0) return XHAL_OK;
    const QuantizedLinearOut<E> out(c);
    const int64_t rows = std::min(kRowBlock, M);
    Scratch sums(c, checked_bytes(rows, checked_bytes(N, sizeof(int32_t))));
    if (sums.data() == nullptr) {
      return kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY, "linear_int8: no memory for the int32 sums");
    }
    try {
      static const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      dnnl::stream stream(engine);
      using dt = dnnl::memory::data_type;
      for (int64_t m0 = 0; m0 < M; m0 += rows) {
        const int64_t mb = std::min(rows, M - m0);
        dnnl::primitive_attr attr;
        attr.set_scratchpad_mode(dnnl::scratchpad_mode::user);
        const dnnl::memory::desc src = desc_of(mb, K, {kernels::blas_leading_dim(x), 1}, dt::s8);
        const dnnl::memory::desc weights = desc_of(K, N, {1, kernels::blas_leading_dim(w)}, dt::s8);
        const dnnl::memory::desc dst = desc_of(mb, N, {N, 1}, dt::s32);
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, weights, dst), attr, engine);
        Scratch pad(c, int64_t(pd.scratchpad_desc().get_size()) + 1);
        if (pad.data() == nullptr) {
          return kernel_error(msg, len, XHAL_ERR_OUT_OF_MEMORY, "linear_int8: no memory for oneDNN's scratchpad");
        }
        const auto* x_rows = static_cast<const int8_t*>(x->data) + m0 * x->strides[0];
        dnnl::matmul(pd).execute(stream,
                                 {{DNNL_ARG_SRC, dnnl::memory(src, engine, const_cast<int8_t*>(x_rows))},
                                  {DNNL_ARG_WEIGHTS, dnnl::memory(weights, engine, w->data)},
                                  {DNNL_ARG_DST, dnnl::memory(dst, engine, sums.data())},
                                  {DNNL_ARG_SCRATCHPAD, dnnl::memory(pd.scratchpad_desc(), engine, pad.data())}});
        stream.wait();
        const auto* block = static_cast<const int32_t*>(sums.data());
#pragma omp parallel for schedule(static)
        for (int64_t m = 0; m < mb; ++m) out.store(m0 + m, 0, block + m * N, N);
      }
    } catch (const dnnl::error& e) {
      return kernel_error(msg, len, XHAL_ERR_INTERNAL, "linear_int8: oneDNN's matmul failed: %s", e.what());
    } catch (const std::exception& e) {  // nothing may cross the plugin's C boundary
      return kernel_error(msg, len, XHAL_ERR_INTERNAL, "linear_int8: %s", e.what());
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_fast_kernels<LinearInt8Onednn>(host, "cpu.linear_int8_onednn", XHAL_OP_LINEAR_INT8, onednn_int8_supports);
}

}  // namespace xhal::cpu
