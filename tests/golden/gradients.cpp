#include "gradients.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "golden.hpp"

namespace xhal::golden {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("xhal::golden: " + what);
}

size_t sz(int64_t n) { return static_cast<size_t>(n); }

// One (sequence, query head) slice of attention's gradient, strides as golden.cpp's attend_head:
// writes the Sq rows of dq and adds into the Sk rows of dk and dv.
void attention_head_backward(const double* dout, int64_t dout_stride, const double* q, int64_t q_stride,
                             const double* k, int64_t k_stride, const double* v, int64_t v_stride, int64_t Sq,
                             int64_t Sk, int64_t D, int64_t Dv, const AttentionMask& mask, double* dq,
                             int64_t dq_stride, double* dk, int64_t dk_stride, double* dv, int64_t dv_stride) {
  std::vector<double> p(sz(Sk)), dcap(sz(Sk)), out(sz(Dv));
  for (int64_t i = 0; i < Sq; ++i) {
    const double *qi = q + i * q_stride, *di = dout + i * dout_stride;
    double* dqi = dq + i * dq_stride;
    for (int64_t d = 0; d < D; ++d) dqi[d] = 0;
    double max = -INFINITY, sum = 0;
    bool any = false;
    for (int64_t j = 0; j < Sk; ++j) {
      if (!key_visible(mask, i, j, Sq, Sk)) continue;
      double s = 0;
      for (int64_t d = 0; d < D; ++d) s += qi[d] * k[j * k_stride + d];
      s *= mask.scale;
      dcap[sz(j)] = 1;
      if (mask.softcap > 0) {
        const double t = std::tanh(s / mask.softcap);
        s = mask.softcap * t;
        dcap[sz(j)] = 1 - t * t;
      }
      p[sz(j)] = s;
      max = std::max(max, s);
      any = true;
    }
    if (!any) continue;
    for (int64_t j = 0; j < Sk; ++j) {
      if (key_visible(mask, i, j, Sq, Sk)) sum += p[sz(j)] = std::exp(p[sz(j)] - max);
    }
    std::fill(out.begin(), out.end(), 0.0);
    for (int64_t j = 0; j < Sk; ++j) {
      if (!key_visible(mask, i, j, Sq, Sk)) continue;
      p[sz(j)] /= sum;
      for (int64_t d = 0; d < Dv; ++d) out[sz(d)] += p[sz(j)] * v[j * v_stride + d];
    }
    double delta = 0;
    for (int64_t d = 0; d < Dv; ++d) delta += di[d] * out[sz(d)];
    for (int64_t j = 0; j < Sk; ++j) {
      if (!key_visible(mask, i, j, Sq, Sk)) continue;
      double dp = 0;
      for (int64_t d = 0; d < Dv; ++d) {
        dp += di[d] * v[j * v_stride + d];
        dv[j * dv_stride + d] += p[sz(j)] * di[d];
      }
      const double ds = p[sz(j)] * (dp - delta) * dcap[sz(j)] * mask.scale;
      for (int64_t d = 0; d < D; ++d) {
        dqi[d] += ds * k[j * k_stride + d];
        dk[j * dk_stride + d] += ds * qi[d];
      }
    }
  }
}

}  // namespace

RmsNormGradients rms_norm_backward(const std::vector<double>& dout, const std::vector<double>& x,
                                   const std::vector<double>& weight, double eps) {
  const size_t N = weight.size();
  require(N > 0 && x.size() % N == 0 && dout.size() == x.size(),
          "rms_norm_backward: dout and x must be [M,N] with N = weight.size()");
  RmsNormGradients g{std::vector<double>(x.size()), std::vector<double>(N, 0.0)};
  for (size_t row = 0; row < x.size(); row += N) {
    double sum_sq = 0, dot = 0;
    for (size_t n = 0; n < N; ++n) {
      sum_sq += x[row + n] * x[row + n];
      dot += dout[row + n] * weight[n] * x[row + n];
    }
    const double r = 1.0 / std::sqrt(sum_sq / static_cast<double>(N) + eps);
    for (size_t n = 0; n < N; ++n) {
      g.dx[row + n] = r * (dout[row + n] * weight[n] - x[row + n] * r * r * dot / static_cast<double>(N));
      g.dweight[n] += dout[row + n] * x[row + n] * r;
    }
  }
  return g;
}

SwigluGradients swiglu_backward(const std::vector<double>& dout, const std::vector<double>& gate,
                                const std::vector<double>& up) {
  require(gate.size() == up.size() && dout.size() == gate.size(), "swiglu_backward: dout, gate and up differ in size");
  SwigluGradients g{std::vector<double>(gate.size()), std::vector<double>(gate.size())};
  for (size_t i = 0; i < gate.size(); ++i) {
    const double s = 1.0 / (1.0 + std::exp(-gate[i]));
    g.dgate[i] = dout[i] * up[i] * s * (1.0 + gate[i] * (1.0 - s));
    g.dup[i] = dout[i] * gate[i] * s;
  }
  return g;
}

void rope_backward(std::vector<double>& x, const std::vector<int64_t>& positions, int64_t H, int64_t D,
                   const std::vector<double>& cache, int64_t rotary_dim, bool neox) {
  // The transpose of a rotation by an angle is the rotation by its negative: rope with every
  // sine of the cache negated.
  require(rotary_dim > 0 && rotary_dim % 2 == 0 && cache.size() % sz(rotary_dim) == 0,
          "rope_backward: cache must be [max_pos,rotary_dim] with rotary_dim even");
  std::vector<double> inverse = cache;
  for (size_t row = 0; row < inverse.size(); row += sz(rotary_dim)) {
    for (int64_t i = rotary_dim / 2; i < rotary_dim; ++i) inverse[row + sz(i)] = -inverse[row + sz(i)];
  }
  rope(x, positions, H, D, inverse, rotary_dim, neox);
}

std::vector<double> cross_entropy_backward(const std::vector<double>& logits, const std::vector<int64_t>& labels,
                                           int64_t V, const std::vector<double>& dloss, int64_t ignore_index,
                                           double label_smoothing, double z_loss) {
  require(dloss.size() == labels.size(), "cross_entropy_backward: dloss must be [T]");
  const std::vector<double> lse = cross_entropy(logits, labels, V, ignore_index, 0, 0).lse;
  std::vector<double> d(logits.size(), 0.0);
  for (size_t t = 0; t < labels.size(); ++t) {
    if (labels[t] == ignore_index) continue;
    for (int64_t j = 0; j < V; ++j) {
      const size_t i = t * sz(V) + sz(j);
      const double p = std::exp(logits[i] - lse[t]);
      d[i] = dloss[t] * ((1 + 2 * z_loss * lse[t]) * p - (j == labels[t] ? 1 - label_smoothing : 0) -
                         label_smoothing / static_cast<double>(V));
    }
  }
  return d;
}

LinearGradients linear_backward(const std::vector<double>& dout, const std::vector<double>& x,
                                const std::vector<double>& w, int64_t M, int64_t N, int64_t K) {
  require(dout.size() == sz(M * N) && x.size() == sz(M * K) && w.size() == sz(N * K),
          "linear_backward: dout must be [M,N], x [M,K] and w [N,K]");
  LinearGradients g{std::vector<double>(sz(M * K), 0.0), std::vector<double>(sz(N * K), 0.0),
                    std::vector<double>(sz(N), 0.0)};
  for (int64_t m = 0; m < M; ++m) {
    for (int64_t n = 0; n < N; ++n) {
      const double d = dout[sz(m * N + n)];
      g.dbias[sz(n)] += d;
      for (int64_t k = 0; k < K; ++k) {
        g.dx[sz(m * K + k)] += d * w[sz(n * K + k)];
        g.dw[sz(n * K + k)] += d * x[sz(m * K + k)];
      }
    }
  }
  return g;
}

std::vector<double> embedding_backward(const std::vector<int64_t>& ids, const std::vector<double>& dout, int64_t V,
                                       int64_t D, int64_t padding_idx) {
  require(dout.size() == ids.size() * sz(D), "embedding_backward: dout must be [T,D] with T = ids.size()");
  std::vector<double> dtable(sz(V * D), 0.0);
  for (size_t t = 0; t < ids.size(); ++t) {
    require(ids[t] >= 0 && ids[t] < V, "embedding_backward: ids must be in 0..V-1");
    if (ids[t] == padding_idx) continue;
    for (int64_t d = 0; d < D; ++d) dtable[sz(ids[t] * D + d)] += dout[t * sz(D) + sz(d)];
  }
  return dtable;
}

AttentionGradients attention_backward(const std::vector<double>& dout, const std::vector<double>& q,
                                      const std::vector<double>& k, const std::vector<double>& v, int64_t B, int64_t Sq,
                                      int64_t Sk, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
                                      const AttentionMask& mask) {
  require(Hq > 0 && Hkv > 0 && Hq % Hkv == 0, "attention_backward: Hq must be a positive multiple of Hkv");
  require(q.size() == sz(B * Sq * Hq * D) && dout.size() == sz(B * Sq * Hq * Dv) && k.size() == sz(B * Sk * Hkv * D) &&
              v.size() == sz(B * Sk * Hkv * Dv),
          "attention_backward: dout, q, k, v must be [B,Sq,Hq,Dv], [B,Sq,Hq,D], [B,Sk,Hkv,D], [B,Sk,Hkv,Dv]");
  AttentionGradients g{std::vector<double>(q.size()), std::vector<double>(k.size(), 0.0),
                       std::vector<double>(v.size(), 0.0)};
  const int64_t group = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kq = (b * Sq * Hq + h), kk = (b * Sk * Hkv + h / group);
      attention_head_backward(dout.data() + kq * Dv, Hq * Dv, q.data() + kq * D, Hq * D, k.data() + kk * D, Hkv * D,
                              v.data() + kk * Dv, Hkv * Dv, Sq, Sk, D, Dv, mask, g.dq.data() + kq * D, Hq * D,
                              g.dk.data() + kk * D, Hkv * D, g.dv.data() + kk * Dv, Hkv * Dv);
    }
  }
  return g;
}

AttentionGradients attention_varlen_backward(const std::vector<double>& dout, const std::vector<double>& q,
                                             const std::vector<double>& k, const std::vector<double>& v,
                                             const std::vector<int64_t>& cu_seqlens_q,
                                             const std::vector<int64_t>& cu_seqlens_k, int64_t Hq, int64_t Hkv,
                                             int64_t D, int64_t Dv, const AttentionMask& mask) {
  require(Hq > 0 && Hkv > 0 && Hq % Hkv == 0, "attention_varlen_backward: Hq must be a positive multiple of Hkv");
  require(!cu_seqlens_q.empty() && cu_seqlens_q.size() == cu_seqlens_k.size(),
          "attention_varlen_backward: cu_seqlens_q and cu_seqlens_k must both be [B+1]");
  AttentionGradients g{std::vector<double>(q.size(), 0.0), std::vector<double>(k.size(), 0.0),
                       std::vector<double>(v.size(), 0.0)};
  const int64_t group = Hq / Hkv;
  for (size_t b = 0; b + 1 < cu_seqlens_q.size(); ++b) {
    const int64_t q0 = cu_seqlens_q[b], Sq = cu_seqlens_q[b + 1] - q0;
    const int64_t k0 = cu_seqlens_k[b], Sk = cu_seqlens_k[b + 1] - k0;
    require(Sq >= 0 && Sk >= 0 && sz((q0 + Sq) * Hq * D) <= q.size() && sz((k0 + Sk) * Hkv * D) <= k.size(),
            "attention_varlen_backward: cu_seqlens must be non-decreasing and within q and k");
    for (int64_t h = 0; h < Hq; ++h) {
      const int64_t kq = q0 * Hq + h, kk = k0 * Hkv + h / group;
      attention_head_backward(dout.data() + kq * Dv, Hq * Dv, q.data() + kq * D, Hq * D, k.data() + kk * D, Hkv * D,
                              v.data() + kk * Dv, Hkv * Dv, Sq, Sk, D, Dv, mask, g.dq.data() + kq * D, Hq * D,
                              g.dk.data() + kk * D, Hkv * D, g.dv.data() + kk * Dv, Hkv * Dv);
    }
  }
  return g;
}

}  // namespace xhal::golden
