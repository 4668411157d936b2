// quantize and dequantize on the CPU: rows in parallel, the arithmetic of kernels/quantize.hpp. A
// dynamic per-tensor scale takes a first pass for the largest |x| (each thread's rows, then the
// threads' maxima: a maximum does not depend on the order).
#include <omp.h>

#include <cstdint>
#include <vector>

#include "element.hpp"
#include "kernel_registration.hpp"
#include "kernels/quantize.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {
namespace {

template <class E>
float row_amax(const typename E::Storage* row, int64_t begin, int64_t end) {
  float m = 0.0f;
  for (int64_t i = begin; i < end; ++i) m = kernels::amax_merge(m, E::load(row[i]));
  return m;
}

template <class E>
struct Quantize {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    using S = typename E::Storage;
    const TensorRef<const S> x(c->tensors[XHAL_QUANTIZE_X]);
    const TensorRef<uint8_t> q(c->tensors[XHAL_QUANTIZE_Q]);
    float* scale = static_cast<float*>(c->tensors[XHAL_QUANTIZE_SCALE]->data);
    const kernels::QuantFormat format = kernels::quant_format(c->tensors[XHAL_QUANTIZE_Q]);
    const bool dynamic = kernels::op_params<xhal_quantize_op_params>(c).dynamic != 0;
    const int64_t N = x.size(-1), rows = x.rows();
    const kernels::QuantGroups groups = kernels::quant_groups(c, N);
    if (dynamic && groups.granularity == XHAL_QUANT_PER_TENSOR) {
      std::vector<float> partial(size_t(omp_get_max_threads()), 0.0f);
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < rows; ++r) {
        float& m = partial[size_t(omp_get_thread_num())];
        m = kernels::amax_merge(m, row_amax<E>(x.row(r), 0, N));
      }
      float amax = 0.0f;
      for (float m : partial) amax = kernels::amax_merge(amax, m);
      scale[0] = kernels::scale_of(amax, format);
    }
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const S* in = x.row(r);
      uint8_t* out = q.row(r);
      const int64_t width = groups.width(N);
      for (int64_t g0 = 0; g0 < N; g0 += width) {
        const int64_t g1 = g0 + width < N ? g0 + width : N;
        float& s = scale[groups.of(r, g0)];
        if (dynamic && groups.granularity != XHAL_QUANT_PER_TENSOR)
          s = kernels::scale_of(row_amax<E>(in, g0, g1), format);
        const float inverse = kernels::inverse_scale(s);
        for (int64_t i = g0; i < g1; ++i) out[i] = kernels::quantize_value(E::load(in[i]), inverse, format);
      }
    }
    return XHAL_OK;
  }
};

template <class E>
struct Dequantize {
  static xhal_status run(const xhal_op_call* c, char*, size_t) {
    using S = typename E::Storage;
    const TensorRef<const uint8_t> q(c->tensors[XHAL_DEQUANTIZE_Q]);
    const TensorRef<S> out(c->tensors[XHAL_DEQUANTIZE_OUT]);
    const float* scale = static_cast<const float*>(c->tensors[XHAL_DEQUANTIZE_SCALE]->data);
    const kernels::QuantFormat format = kernels::quant_format(c->tensors[XHAL_DEQUANTIZE_Q]);
    const int64_t N = q.size(-1), rows = q.rows();
    const kernels::QuantGroups groups = kernels::quant_groups(c, N);
#pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; ++r) {
      const uint8_t* in = q.row(r);
      S* o = out.row(r);
      for (int64_t i = 0; i < N; ++i) o[i] = E::store(kernels::dequantize_value(in[i], scale[groups.of(r, i)], format));
    }
    return XHAL_OK;
  }
};

}  // namespace

XHAL_REGISTER_KERNELS(host) {
  register_float_kernels<Quantize>(host, "cpu.quantize", XHAL_OP_QUANTIZE);
  register_float_kernels<Dequantize>(host, "cpu.dequantize", XHAL_OP_DEQUANTIZE);
}

}  // namespace xhal::cpu
