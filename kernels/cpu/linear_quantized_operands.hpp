// linear_fp8's and linear_int8's tensors as the CPU kernels read them: scales per tensor or per
// row, the bias and out (QuantizedLinearOut), and for fp8 rows of codes decoded to f32 through a
// table of the format's 256 values. Epilogues: fp8 out = sum * (x_scale * w_scale) + bias; int8
// kernels/quantize.hpp's int8_linear_value; each rounded once to out's dtype.
#pragma once

#include <array>
#include <cstdint>

#include "element.hpp"
#include "kernels/quantize.hpp"
#include "tensor_ref.hpp"

namespace xhal::cpu {

// Every code's value (kernels::code_value), built once per fp8 format.
inline const std::array<float, 256>& fp8_values(kernels::QuantFormat format) {
  static const auto table = [](kernels::QuantFormat f) {
    std::array<float, 256> v{};
    for (int b = 0; b < 256; ++b) v[size_t(b)] = kernels::code_value(uint8_t(b), f);
    return v;
  };
  static const std::array<float, 256> e4m3_values = table(kernels::QuantFormat::e4m3),
                                      e5m2_values = table(kernels::QuantFormat::e5m2);
  return format == kernels::QuantFormat::e4m3 ? e4m3_values : e5m2_values;
}

// A scale tensor: [1] for the tensor or [rows, 1] a row.
struct RowScales {
  const float* data;
  bool per_row;
  explicit RowScales(const DLTensor* t) : data(static_cast<const float*>(t->data)), per_row(t->ndim == 2) {}
  float of(int64_t row) const { return data[per_row ? row : 0]; }
};

// The scales, bias and out of a call (the two ops share their slots).
template <class E>
struct QuantizedLinearOut {
  using S = typename E::Storage;
  explicit QuantizedLinearOut(const xhal_op_call* c)
      : x_scale(c->tensors[XHAL_LINEAR_FP8_X_SCALE]),
        w_scale(c->tensors[XHAL_LINEAR_FP8_W_SCALE]),
        bias(c->tensors[XHAL_LINEAR_FP8_BIAS]),
        out(c->tensors[XHAL_LINEAR_FP8_OUT]) {}

  float bias_of(int64_t n) const { return bias ? E::load(*bias.at(n)) : 0.0f; }
  // out[m, n0 .. n0 + count) from f32 sums (fp8) or int32 ones (int8).
  void store(int64_t m, int64_t n0, const float* sums, int64_t count) const {
    const float xs = x_scale.of(m);
    for (int64_t j = 0; j < count; ++j) {
      const int64_t n = n0 + j;
      *out.at(m, n) = E::store(sums[j] * (xs * w_scale.of(n)) + bias_of(n));
    }
  }
  void store(int64_t m, int64_t n0, const int32_t* sums, int64_t count) const {
    const float xs = x_scale.of(m);
    for (int64_t j = 0; j < count; ++j) {
      const int64_t n = n0 + j;
      *out.at(m, n) = E::store(kernels::int8_linear_value(sums[j], xs, w_scale.of(n), bias_of(n)));
    }
  }

  RowScales x_scale, w_scale;
  TensorRef<const S> bias;
  TensorRef<S> out;
};

// linear_fp8 as converted_gemm reads it.
template <class E>
struct LinearFp8Operands : QuantizedLinearOut<E> {
  explicit LinearFp8Operands(const xhal_op_call* c)
      : QuantizedLinearOut<E>(c),
        x(c->tensors[XHAL_LINEAR_FP8_X]),
        w(c->tensors[XHAL_LINEAR_FP8_W]),
        x_values(fp8_values(kernels::quant_format(c->tensors[XHAL_LINEAR_FP8_X])).data()),
        w_values(fp8_values(kernels::quant_format(c->tensors[XHAL_LINEAR_FP8_W])).data()) {}

  int64_t M() const { return x.size(0); }
  int64_t K() const { return x.size(1); }
  int64_t N() const { return w.size(0); }

  static void decode(const float* values, const uint8_t* codes, float* row, int64_t K) {
    for (int64_t k = 0; k < K; ++k) row[k] = values[codes[k]];
  }
  void load_x(int64_t m, float* row) const { decode(x_values, x.at(m, 0), row, K()); }
  void load_w(int64_t n, float* row) const { decode(w_values, w.at(n, 0), row, K()); }

  TensorRef<const uint8_t> x, w;
  const float *x_values, *w_values;
};

}  // namespace xhal::cpu
