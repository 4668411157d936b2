// Float64 reference gradients of the backward ops, written from the derivatives of the forward
// formulas in golden.hpp and checked against central differences of those forward references
// (the golden_gradients unit test). Same layout contract as golden.hpp: contiguous row-major
// vectors in the shapes given; sizes that disagree throw std::invalid_argument.
#pragma once

#include <cstdint>
#include <vector>

#include "golden.hpp"

namespace xhal::golden {

struct RmsNormGradients {
  std::vector<double> dx;  // [M,N]
  std::vector<double> dweight;  // [N]
};

// Of rms_norm(x, weight, eps): dout[M,N], x[M,N], weight[N]. With r = 1/sqrt(mean(x^2) + eps):
// dx = r * (dout * weight - x * r^2 * mean(dout * weight * x)); dweight = sum over rows of
// dout * x * r.
RmsNormGradients rms_norm_backward(const std::vector<double>& dout, const std::vector<double>& x,
                                   const std::vector<double>& weight, double eps);

struct SwigluGradients {
  std::vector<double> dgate, dup;  // [M,N] each
};

// Of swiglu(gate, up): with s = sigmoid(gate), dup = dout * gate * s and
// dgate = dout * up * s * (1 + gate * (1 - s)).
SwigluGradients swiglu_backward(const std::vector<double>& dout, const std::vector<double>& gate,
                                const std::vector<double>& up);

// Of rope: the transpose of the rotation, (a, b) -> (a c + b s, b c - a s), in place on x[T,H,D]
// (arguments as for golden::rope).
void rope_backward(std::vector<double>& x, const std::vector<int64_t>& positions, int64_t H, int64_t D,
                   const std::vector<double>& cache, int64_t rotary_dim, bool neox);

// Of cross_entropy (arguments as for golden::cross_entropy), from dloss[T]: with p = softmax(x),
// dlogits = dloss * ((1 + 2 z lse) p - (1 - s) onehot(label) - s / V); zero rows for ignored tokens.
std::vector<double> cross_entropy_backward(const std::vector<double>& logits, const std::vector<int64_t>& labels,
                                           int64_t V, const std::vector<double>& dloss, int64_t ignore_index,
                                           double label_smoothing, double z_loss);

struct LinearGradients {
  std::vector<double> dx;  // [M,K]
  std::vector<double> dw;  // [N,K]
  std::vector<double> dbias;  // [N]
};

// Of linear(x[M,K], w[N,K], bias[N]) from dout[M,N]: dx = dout w, dw = dout^T x, dbias = the column
// sums of dout.
LinearGradients linear_backward(const std::vector<double>& dout, const std::vector<double>& x,
                                const std::vector<double>& w, int64_t M, int64_t N, int64_t K);

// Of embedding from dout[T,D]: dtable[V,D] row v = the sum of dout[t] over the tokens with
// ids[t] == v, zero for rows no token picked and for padding_idx (< 0: none).
std::vector<double> embedding_backward(const std::vector<int64_t>& ids, const std::vector<double>& dout, int64_t V,
                                       int64_t D, int64_t padding_idx);

struct AttentionGradients {
  std::vector<double> dq, dk, dv;  // q's, k's and v's shapes
};

// Of attention (arguments as for golden::attention) from dout[B,Sq,Hq,Dv]. Per (sequence, query
// head), with P the softmax of the visible scores and s = scale * q·k before the softcap:
// dv = Pᵀ dout, dS = P ∘ (dout vᵀ − rowsum(dout ∘ out)), times 1 − tanh²(s / softcap) with a
// softcap; dq = scale · dS k, dk = scale · dSᵀ q. dk and dv sum over the query heads of a kv head.
AttentionGradients attention_backward(const std::vector<double>& dout, const std::vector<double>& q,
                                      const std::vector<double>& k, const std::vector<double>& v, int64_t B, int64_t Sq,
                                      int64_t Sk, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
                                      const AttentionMask& mask);

// Of attention_varlen (arguments as for golden::attention_varlen) from dout[Tq,Hq,Dv].
AttentionGradients attention_varlen_backward(const std::vector<double>& dout, const std::vector<double>& q,
                                             const std::vector<double>& k, const std::vector<double>& v,
                                             const std::vector<int64_t>& cu_seqlens_q,
                                             const std::vector<int64_t>& cu_seqlens_k, int64_t Hq, int64_t Hkv,
                                             int64_t D, int64_t Dv, const AttentionMask& mask);

}  // namespace xhal::golden
