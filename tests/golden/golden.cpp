// Float64 reference implementations; see golden.hpp for the layout contracts.
#include "golden.hpp"

#include <algorithm>
#include <numeric>
#include <cmath>
#include <cstddef>
#include <limits>
#include <stdexcept>
#include <string>
#include <utility>

namespace xhal::golden {
namespace {

void require(bool ok, const std::string& what) {
  if (!ok) throw std::invalid_argument("xhal::golden: " + what);
}

size_t sz(int64_t n) { return static_cast<size_t>(n); }

// One (sequence, query head) slice of attention: Sq query rows against Sk key rows.
// Row r of q is q + r*q_stride (likewise k, v, out); lse[r] is lse + r. Writes every out row
// and every lse entry. Shared by attention, attention_varlen and paged_attention.
void attend_head(const double* q, int64_t q_stride, const double* k, int64_t k_stride, const double* v,
                 int64_t v_stride, int64_t Sq, int64_t Sk, int64_t D, int64_t Dv, const AttentionMask& mask,
                 double* out, int64_t out_stride, double* lse) {
  std::vector<double> score(sz(Sk));
  std::vector<char> seen(sz(Sk));
  for (int64_t i = 0; i < Sq; ++i) {
    const double* qi = q + i * q_stride;
    double* oi = out + i * out_stride;
    double max = -std::numeric_limits<double>::infinity();
    bool any = false;
    for (int64_t j = 0; j < Sk; ++j) {
      seen[sz(j)] = key_visible(mask, i, j, Sq, Sk);
      if (!seen[sz(j)]) continue;
      double s = 0;
      for (int64_t d = 0; d < D; ++d) s += qi[d] * k[j * k_stride + d];
      s *= mask.scale;
      if (mask.softcap > 0) s = mask.softcap * std::tanh(s / mask.softcap);
      score[sz(j)] = s;
      max = std::max(max, s);
      any = true;
    }
    for (int64_t d = 0; d < Dv; ++d) oi[d] = 0;
    if (!any) {
      lse[i] = -std::numeric_limits<double>::infinity();
      continue;
    }
    double sum = 0;
    for (int64_t j = 0; j < Sk; ++j) {
      if (!seen[sz(j)]) continue;
      const double p = std::exp(score[sz(j)] - max);
      sum += p;
      for (int64_t d = 0; d < Dv; ++d) oi[d] += p * v[j * v_stride + d];
    }
    for (int64_t d = 0; d < Dv; ++d) oi[d] /= sum;
    lse[i] = max + std::log(sum);
  }
}

void require_heads(int64_t Hq, int64_t Hkv) {
  require(Hq > 0 && Hkv > 0 && Hq % Hkv == 0, "Hq must be a positive multiple of Hkv");
}

}  // namespace

bool key_visible(const AttentionMask& mask, int64_t i, int64_t j, int64_t Sq, int64_t Sk) {
  const int64_t diag = i + Sk - Sq;  // the key aligned with query i (bottom-right)
  if (mask.causal && j > diag) return false;
  if (mask.window_left >= 0 && j < diag - mask.window_left) return false;
  if (mask.window_right >= 0 && j > diag + mask.window_right) return false;
  return true;
}

AttentionResult attention(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                          int64_t B, int64_t Sq, int64_t Sk, int64_t Hq, int64_t Hkv, int64_t D, int64_t Dv,
                          const AttentionMask& mask) {
  require_heads(Hq, Hkv);
  require(q.size() == sz(B * Sq * Hq * D), "attention: q must be [B,Sq,Hq,D]");
  require(k.size() == sz(B * Sk * Hkv * D), "attention: k must be [B,Sk,Hkv,D]");
  require(v.size() == sz(B * Sk * Hkv * Dv), "attention: v must be [B,Sk,Hkv,Dv]");
  AttentionResult r{std::vector<double>(sz(B * Sq * Hq * Dv)), std::vector<double>(sz(B * Hq * Sq))};
  const int64_t group = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < Hq; ++h)
      attend_head(q.data() + (b * Sq * Hq + h) * D, Hq * D, k.data() + (b * Sk * Hkv + h / group) * D, Hkv * D,
                  v.data() + (b * Sk * Hkv + h / group) * Dv, Hkv * Dv, Sq, Sk, D, Dv, mask,
                  r.out.data() + (b * Sq * Hq + h) * Dv, Hq * Dv, r.lse.data() + (b * Hq + h) * Sq);
  return r;
}

AttentionResult attention_varlen(const std::vector<double>& q, const std::vector<double>& k,
                                 const std::vector<double>& v, const std::vector<int64_t>& cu_seqlens_q,
                                 const std::vector<int64_t>& cu_seqlens_k, int64_t Hq, int64_t Hkv, int64_t D,
                                 int64_t Dv, const AttentionMask& mask) {
  require_heads(Hq, Hkv);
  require(!cu_seqlens_q.empty() && cu_seqlens_q.size() == cu_seqlens_k.size(),
          "attention_varlen: cu_seqlens_q and cu_seqlens_k must both be [B+1]");
  const int64_t B = static_cast<int64_t>(cu_seqlens_q.size()) - 1;
  for (int64_t b = 0; b < B; ++b)
    require(cu_seqlens_q[sz(b)] <= cu_seqlens_q[sz(b + 1)] && cu_seqlens_k[sz(b)] <= cu_seqlens_k[sz(b + 1)],
            "attention_varlen: cu_seqlens must be non-decreasing");
  require(cu_seqlens_q[0] == 0 && cu_seqlens_k[0] == 0, "attention_varlen: cu_seqlens start at 0");
  const int64_t Tq = cu_seqlens_q.back(), Tk = cu_seqlens_k.back();
  require(q.size() == sz(Tq * Hq * D), "attention_varlen: q must be [Tq,Hq,D]");
  require(k.size() == sz(Tk * Hkv * D), "attention_varlen: k must be [Tk,Hkv,D]");
  require(v.size() == sz(Tk * Hkv * Dv), "attention_varlen: v must be [Tk,Hkv,Dv]");
  AttentionResult r{std::vector<double>(sz(Tq * Hq * Dv)), std::vector<double>(sz(Hq * Tq))};
  const int64_t group = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t q0 = cu_seqlens_q[sz(b)], Sq = cu_seqlens_q[sz(b + 1)] - q0;
    const int64_t k0 = cu_seqlens_k[sz(b)], Sk = cu_seqlens_k[sz(b + 1)] - k0;
    for (int64_t h = 0; h < Hq; ++h)
      attend_head(q.data() + (q0 * Hq + h) * D, Hq * D, k.data() + (k0 * Hkv + h / group) * D, Hkv * D,
                  v.data() + (k0 * Hkv + h / group) * Dv, Hkv * Dv, Sq, Sk, D, Dv, mask,
                  r.out.data() + (q0 * Hq + h) * Dv, Hq * Dv, r.lse.data() + h * Tq + q0);
  }
  return r;
}

AttentionResult merge_attention_states(const std::vector<double>& out_a, const std::vector<double>& lse_a,
                                       const std::vector<double>& out_b, const std::vector<double>& lse_b, int64_t T,
                                       int64_t H, int64_t D) {
  require(out_a.size() == size_t(T * H * D) && out_b.size() == out_a.size(), "merge_attention_states: out sizes");
  require(lse_a.size() == size_t(H * T) && lse_b.size() == lse_a.size(), "merge_attention_states: lse sizes");
  AttentionResult r{std::vector<double>(out_a.size(), 0.0), std::vector<double>(lse_a.size(), 0.0)};
  for (int64_t t = 0; t < T; ++t) {
    for (int64_t h = 0; h < H; ++h) {
      const double la = lse_a[size_t(h * T + t)], lb = lse_b[size_t(h * T + t)];
      double& lse = r.lse[size_t(h * T + t)];
      double* out = r.out.data() + (t * H + h) * D;  // data(): D may be 0
      if (std::isnan(la) || std::isnan(lb) || la == INFINITY || lb == INFINITY) {
        lse = std::nan("");
        std::fill(out, out + D, std::nan(""));
        continue;
      }
      if (la == -INFINITY && lb == -INFINITY) {
        lse = -INFINITY;
        continue;
      }
      lse = la == -INFINITY ? lb : lb == -INFINITY ? la : std::max(la, lb) + std::log1p(std::exp(-std::abs(la - lb)));
      for (int64_t d = 0; d < D; ++d) {
        const size_t at = size_t((t * H + h) * D + d);
        if (la != -INFINITY) out[d] += std::exp(la - lse) * out_a[at];
        if (lb != -INFINITY) out[d] += std::exp(lb - lse) * out_b[at];
      }
    }
  }
  return r;
}

PagedCaches kv_cache_write(const std::vector<double>& k, const std::vector<double>& v,
                           const std::vector<int64_t>& slots, std::vector<double> k_cache, std::vector<double> v_cache,
                           int64_t Hkv, int64_t D, int64_t Dv) {
  const int64_t T = int64_t(slots.size());
  require(k.size() == size_t(T * Hkv * D) && v.size() == size_t(T * Hkv * Dv), "kv_cache_write: k, v sizes");
  require(k_cache.size() % size_t(std::max<int64_t>(Hkv * D, 1)) == 0, "kv_cache_write: k_cache size");
  for (int64_t t = 0; t < T; ++t) {
    const int64_t s = slots[size_t(t)];
    if (s < 0) continue;
    require(size_t((s + 1) * Hkv * D) <= k_cache.size() && size_t((s + 1) * Hkv * Dv) <= v_cache.size(),
            "kv_cache_write: slot past the cache");
    std::copy_n(k.begin() + t * Hkv * D, Hkv * D, k_cache.begin() + s * Hkv * D);
    std::copy_n(v.begin() + t * Hkv * Dv, Hkv * Dv, v_cache.begin() + s * Hkv * Dv);
  }
  return {std::move(k_cache), std::move(v_cache)};
}

namespace {

// One sequence's keys and values for kv head kh, gathered from the paged caches into contiguous
// [L,D] and [L,Dv]: key j from block block_table[table_row + j / block_size].
struct PagedRows {
  std::vector<double> keys, values;
};
PagedRows gather_paged(const std::vector<double>& k_cache, const std::vector<double>& v_cache,
                       const std::vector<int64_t>& block_table, int64_t table_row, int64_t L, int64_t kh, int64_t Hkv,
                       int64_t D, int64_t Dv, int64_t block_size, int64_t num_blocks) {
  PagedRows r{std::vector<double>(sz(L * D)), std::vector<double>(sz(L * Dv))};
  for (int64_t j = 0; j < L; ++j) {
    const int64_t block = block_table[sz(table_row + j / block_size)];
    require(block >= 0 && block < num_blocks, "paged attention: block_table out of range");
    const int64_t slot = (block * block_size + j % block_size) * Hkv + kh;
    for (int64_t d = 0; d < D; ++d) r.keys[sz(j * D + d)] = k_cache[sz(slot * D + d)];
    for (int64_t d = 0; d < Dv; ++d) r.values[sz(j * Dv + d)] = v_cache[sz(slot * Dv + d)];
  }
  return r;
}

}  // namespace

std::vector<double> paged_attention(const std::vector<double>& q, const std::vector<double>& k_cache,
                                    const std::vector<double>& v_cache, const std::vector<int64_t>& block_table,
                                    const std::vector<int64_t>& seq_lens, int64_t Hq, int64_t Hkv, int64_t D,
                                    int64_t Dv, int64_t block_size, const AttentionMask& mask) {
  require_heads(Hq, Hkv);
  require(block_size > 0, "paged_attention: block_size must be positive");
  const int64_t B = static_cast<int64_t>(seq_lens.size());
  const int64_t block_elems = block_size * Hkv * D;
  require(k_cache.size() % sz(block_elems) == 0, "paged_attention: k_cache must be [num_blocks,block_size,Hkv,D]");
  const int64_t num_blocks = static_cast<int64_t>(k_cache.size()) / block_elems;
  require(v_cache.size() == sz(num_blocks * block_size * Hkv * Dv),
          "paged_attention: v_cache must be [num_blocks,block_size,Hkv,Dv]");
  require(q.size() == sz(B * Hq * D), "paged_attention: q must be [B,Hq,D]");
  require(B == 0 || block_table.size() % sz(B) == 0, "paged_attention: block_table must be [B,max_blocks]");
  const int64_t max_blocks = B == 0 ? 0 : static_cast<int64_t>(block_table.size()) / B;
  std::vector<double> out(sz(B * Hq * Dv));
  const int64_t group = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t L = seq_lens[sz(b)];
    require(L >= 0 && L <= max_blocks * block_size, "paged_attention: seq_lens out of range");
    for (int64_t kh = 0; kh < Hkv; ++kh) {
      const PagedRows rows =
          gather_paged(k_cache, v_cache, block_table, b * max_blocks, L, kh, Hkv, D, Dv, block_size, num_blocks);
      const std::vector<double>&keys = rows.keys, &values = rows.values;
      for (int64_t h = kh * group; h < (kh + 1) * group; ++h) {
        double lse = 0;  // paged attention returns no lse
        attend_head(q.data() + (b * Hq + h) * D, D, keys.data(), D, values.data(), Dv, 1, L, D, Dv, mask,
                    out.data() + (b * Hq + h) * Dv, Dv, &lse);
      }
    }
  }
  return out;
}

AttentionResult paged_prefill(const std::vector<double>& q, const std::vector<double>& k_cache,
                              const std::vector<double>& v_cache, const std::vector<int64_t>& cu_seqlens_q,
                              const std::vector<int64_t>& block_table, const std::vector<int64_t>& seq_lens, int64_t Hq,
                              int64_t Hkv, int64_t D, int64_t Dv, int64_t block_size, const AttentionMask& mask) {
  require_heads(Hq, Hkv);
  require(block_size > 0 && !cu_seqlens_q.empty() && cu_seqlens_q[0] == 0, "paged_prefill: bad block size or offsets");
  const int64_t B = static_cast<int64_t>(cu_seqlens_q.size()) - 1, Tq = static_cast<int64_t>(q.size()) / (Hq * D);
  require(static_cast<int64_t>(seq_lens.size()) == B && cu_seqlens_q.back() <= Tq,
          "paged_prefill: seq_lens must be [B]");
  const int64_t num_blocks = static_cast<int64_t>(k_cache.size()) / (block_size * Hkv * D);
  const int64_t max_blocks = B == 0 ? 0 : static_cast<int64_t>(block_table.size()) / B;
  AttentionResult r{std::vector<double>(sz(Tq * Hq * Dv)),
                    std::vector<double>(sz(Hq * Tq), -std::numeric_limits<double>::infinity())};
  const int64_t group = Hq / Hkv;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t q0 = cu_seqlens_q[sz(b)], Sq = cu_seqlens_q[sz(b + 1)] - q0, L = seq_lens[sz(b)];
    require(Sq >= 0 && L >= 0 && L <= max_blocks * block_size, "paged_prefill: offsets or seq_lens out of range");
    for (int64_t kh = 0; kh < Hkv; ++kh) {
      const PagedRows rows =
          gather_paged(k_cache, v_cache, block_table, b * max_blocks, L, kh, Hkv, D, Dv, block_size, num_blocks);
      const std::vector<double>&keys = rows.keys, &values = rows.values;
      for (int64_t h = kh * group; h < (kh + 1) * group; ++h) {
        attend_head(q.data() + (q0 * Hq + h) * D, Hq * D, keys.data(), D, values.data(), Dv, Sq, L, D, Dv, mask,
                    r.out.data() + (q0 * Hq + h) * Dv, Hq * Dv, r.lse.data() + h * Tq + q0);
      }
    }
  }
  return r;
}

std::vector<double> elementwise(const std::vector<double>& x, const std::vector<double>& y, bool product) {
  require(y.size() == x.size() || (!y.empty() && x.size() % y.size() == 0),
          "elementwise: y must have x's size or divide it (one row repeated)");
  std::vector<double> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double b = y[i % y.size()];
    out[i] = product ? x[i] * b : x[i] + b;
  }
  return out;
}

std::vector<double> softmax(const std::vector<double>& x, int64_t N) {
  require(N > 0 && x.size() % sz(N) == 0, "softmax: x must be [M,N], N >= 1");
  std::vector<double> out(x.size());
  for (size_t row = 0; row < x.size(); row += sz(N)) {
    double max = -std::numeric_limits<double>::infinity();
    for (size_t n = 0; n < sz(N); ++n) max = std::fmax(max, x[row + n]);
    // exp(x - max) as written: -inf - -inf and +inf - +inf are NaN, and so is the row's sum.
    double sum = 0;
    for (size_t n = 0; n < sz(N); ++n) sum += std::exp(x[row + n] - max);
    for (size_t n = 0; n < sz(N); ++n) out[row + n] = std::exp(x[row + n] - max) / sum;
  }
  return out;
}

std::vector<double> layer_norm(const std::vector<double>& x, const std::vector<double>& weight,
                               const std::vector<double>& bias, double eps) {
  const size_t N = weight.size();
  require(N > 0 && x.size() % N == 0 && (bias.empty() || bias.size() == N),
          "layer_norm: x must be [M,N] with N = weight.size(), bias empty or [N]");
  std::vector<double> out(x.size());
  for (size_t row = 0; row < x.size(); row += N) {
    double sum = 0;
    for (size_t n = 0; n < N; ++n) sum += x[row + n];
    const double mean = sum / static_cast<double>(N);
    double squares = 0;
    for (size_t n = 0; n < N; ++n) squares += (x[row + n] - mean) * (x[row + n] - mean);
    const double inv_std = 1.0 / std::sqrt(squares / static_cast<double>(N) + eps);
    for (size_t n = 0; n < N; ++n) {
      out[row + n] = (x[row + n] - mean) * inv_std * weight[n] + (bias.empty() ? 0.0 : bias[n]);
    }
  }
  return out;
}

std::vector<double> rms_norm(const std::vector<double>& x, const std::vector<double>& weight, double eps) {
  const size_t N = weight.size();
  require(N > 0 && x.size() % N == 0, "rms_norm: x must be [M,N] with N = weight.size()");
  std::vector<double> out(x.size());
  for (size_t row = 0; row < x.size(); row += N) {
    double sum_sq = 0;
    for (size_t n = 0; n < N; ++n) sum_sq += x[row + n] * x[row + n];
    const double inv_rms = 1.0 / std::sqrt(sum_sq / static_cast<double>(N) + eps);
    for (size_t n = 0; n < N; ++n) out[row + n] = x[row + n] * inv_rms * weight[n];
  }
  return out;
}

FusedAddRmsNormResult fused_add_rms_norm(const std::vector<double>& x, const std::vector<double>& residual,
                                         const std::vector<double>& weight, double eps) {
  require(x.size() == residual.size(), "fused_add_rms_norm: x and residual differ in size");
  FusedAddRmsNormResult r;
  r.residual.resize(x.size());
  for (size_t i = 0; i < x.size(); ++i) r.residual[i] = x[i] + residual[i];
  r.out = rms_norm(r.residual, weight, eps);
  return r;
}

std::vector<double> swiglu(const std::vector<double>& gate, const std::vector<double>& up) {
  require(gate.size() == up.size(), "swiglu: gate and up differ in size");
  std::vector<double> out(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) out[i] = gate[i] / (1.0 + std::exp(-gate[i])) * up[i];
  return out;
}

namespace {

// x[M,2N] split into its halves, gate and up, each [M,N].
std::pair<std::vector<double>, std::vector<double>> split_halves(const std::vector<double>& x, int64_t N,
                                                                 const char* op) {
  require(N > 0 && x.size() % sz(2 * N) == 0, std::string(op) + ": x must be [M,2N]");
  const size_t M = x.size() / sz(2 * N);
  std::vector<double> gate(M * sz(N)), up(M * sz(N));
  for (size_t m = 0; m < M; ++m)
    for (size_t n = 0; n < sz(N); ++n) {
      gate[m * sz(N) + n] = x[m * sz(2 * N) + n];
      up[m * sz(N) + n] = x[m * sz(2 * N) + sz(N) + n];
    }
  return {gate, up};
}

}  // namespace

std::vector<double> swiglu_packed(const std::vector<double>& x, int64_t N) {
  const auto [gate, up] = split_halves(x, N, "swiglu_packed");
  return swiglu(gate, up);
}

std::vector<double> gelu_and_mul(const std::vector<double>& gate, const std::vector<double>& up, bool tanh) {
  require(gate.size() == up.size(), "gelu_and_mul: gate and up differ in size");
  std::vector<double> out(gate.size());
  for (size_t i = 0; i < gate.size(); ++i) {
    const double x = gate[i];
    // x/2 (1 + tanh z) as x sigmoid(2 z) and x/2 (1 + erf(x / sqrt 2)) as x/2 erfc(-x / sqrt 2): no
    // cancellation for negative x (tanh z rounds to -1 below z = -19 even in float64).
    const double z = std::sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x);
    const double gelu = tanh ? x / (1.0 + std::exp(-2.0 * z)) : 0.5 * x * std::erfc(-x / std::sqrt(2.0));
    out[i] = gelu * up[i];
  }
  return out;
}

std::vector<double> gelu_and_mul_packed(const std::vector<double>& x, int64_t N, bool tanh) {
  const auto [gate, up] = split_halves(x, N, "gelu_and_mul_packed");
  return gelu_and_mul(gate, up, tanh);
}

std::vector<int64_t> argmax(const std::vector<double>& logits, int64_t V) {
  require(V > 0 && logits.size() % sz(V) == 0, "argmax: logits must be [M,V], V >= 1");
  std::vector<int64_t> out(logits.size() / sz(V));
  for (size_t m = 0; m < out.size(); ++m) {
    const double* row = logits.data() + m * sz(V);
    int64_t best = 0;
    for (int64_t i = 1; i < V; ++i) {
      if (std::isnan(row[best])) break;
      if (std::isnan(row[i]) || row[i] > row[best]) best = i;
    }
    out[m] = best;
  }
  return out;
}

std::vector<int64_t> top_k(const std::vector<double>& logits, int64_t V, int64_t k) {
  require(V > 0 && k > 0 && k <= V && logits.size() % sz(V) == 0, "top_k: logits must be [M,V], 1 <= k <= V");
  const size_t M = logits.size() / sz(V);
  std::vector<int64_t> out;
  out.reserve(M * sz(k));
  std::vector<int64_t> order(sz(V));
  for (size_t m = 0; m < M; ++m) {
    const double* row = logits.data() + m * sz(V);
    std::iota(order.begin(), order.end(), int64_t(0));
    // A stable sort: equal values (NaNs among them) keep their positions' order.
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      const bool a_nan = std::isnan(row[a]), b_nan = std::isnan(row[b]);
      if (a_nan || b_nan) return a_nan && !b_nan;
      return row[a] > row[b];
    });
    out.insert(out.end(), order.begin(), order.begin() + k);
  }
  return out;
}

std::vector<double> rope_cache(int64_t max_pos, int64_t rotary_dim, double theta) {
  require(rotary_dim > 0 && rotary_dim % 2 == 0 && max_pos >= 0, "rope_cache: rotary_dim must be positive and even");
  const int64_t half = rotary_dim / 2;
  std::vector<double> cache(sz(max_pos * rotary_dim));
  for (int64_t p = 0; p < max_pos; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double exponent = -2.0 * static_cast<double>(i) / static_cast<double>(rotary_dim);
      const double freq = std::pow(theta, exponent);
      const double angle = static_cast<double>(p) * freq;
      cache[sz(p * rotary_dim + i)] = std::cos(angle);
      cache[sz(p * rotary_dim + half + i)] = std::sin(angle);
    }
  return cache;
}

std::vector<double> rope_cache(int64_t max_pos, int64_t rotary_dim, double theta, const RopeScaling& scaling) {
  require(rotary_dim > 0 && rotary_dim % 2 == 0 && max_pos >= 0, "rope_cache: rotary_dim must be positive and even");
  const int64_t half = rotary_dim / 2;
  const double two_pi = 2.0 * M_PI, factor = scaling.factor;
  std::vector<double> inv_freq(sz(half));
  for (int64_t i = 0; i < half; ++i) inv_freq[sz(i)] = 1.0 / std::pow(theta, double(2 * i) / double(rotary_dim));
  double attention_factor = 1.0;
  if (scaling.type == "linear") {
    for (double& f : inv_freq) f /= factor;
  } else if (scaling.type == "llama3") {
    const double old_context = double(scaling.original_max_position);
    const double low_freq_wavelen = old_context / scaling.low_freq_factor;
    const double high_freq_wavelen = old_context / scaling.high_freq_factor;
    for (double& f : inv_freq) {
      const double wavelen = two_pi / f;
      const double scaled = wavelen > low_freq_wavelen ? f / factor : f;
      const double smooth =
          (old_context / wavelen - scaling.low_freq_factor) / (scaling.high_freq_factor - scaling.low_freq_factor);
      const bool medium = !(wavelen < high_freq_wavelen) && !(wavelen > low_freq_wavelen);
      f = medium ? (1 - smooth) * scaled / factor + smooth * scaled : scaled;
    }
  } else if (scaling.type == "yarn") {
    const double original = double(scaling.original_max_position);
    auto correction_dim = [&](double rotations) {
      return double(rotary_dim) * std::log(original / (rotations * two_pi)) / (2 * std::log(theta));
    };
    const double low = std::max(std::floor(correction_dim(scaling.beta_fast)), 0.0);
    double high = std::min(std::ceil(correction_dim(scaling.beta_slow)), double(rotary_dim - 1));
    if (low == high) high += 0.001;
    for (int64_t i = 0; i < half; ++i) {
      const double extrapolation = inv_freq[sz(i)], interpolation = extrapolation / factor;
      const double extrapolation_factor = 1 - std::clamp((double(i) - low) / (high - low), 0.0, 1.0);
      inv_freq[sz(i)] = interpolation * (1 - extrapolation_factor) + extrapolation * extrapolation_factor;
    }
    attention_factor = scaling.attention_factor > 0 ? scaling.attention_factor
                       : factor <= 1                ? 1.0
                                                    : 0.1 * std::log(factor) + 1.0;
  } else {
    require(scaling.type.empty() || scaling.type == "default", "rope_cache: unknown rope_scaling type " + scaling.type);
  }
  std::vector<double> cache(sz(max_pos * rotary_dim));
  for (int64_t p = 0; p < max_pos; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const double angle = double(p) * inv_freq[sz(i)];
      cache[sz(p * rotary_dim + i)] = attention_factor * std::cos(angle);
      cache[sz(p * rotary_dim + half + i)] = attention_factor * std::sin(angle);
    }
  return cache;
}

void rope(std::vector<double>& x, const std::vector<int64_t>& positions, int64_t H, int64_t D,
          const std::vector<double>& cache, int64_t rotary_dim, bool neox) {
  const int64_t T = static_cast<int64_t>(positions.size());
  require(x.size() == sz(T * H * D), "rope: x must be [T,H,D] with T = positions.size()");
  require(rotary_dim > 0 && rotary_dim % 2 == 0 && rotary_dim <= D, "rope: rotary_dim must be positive, even and <= D");
  require(cache.size() % sz(rotary_dim) == 0, "rope: cache must be [max_pos,rotary_dim]");
  const int64_t max_pos = static_cast<int64_t>(cache.size()) / rotary_dim;
  const int64_t half = rotary_dim / 2;
  for (int64_t t = 0; t < T; ++t) {
    const int64_t p = positions[sz(t)];
    require(p >= 0 && p < max_pos, "rope: position out of range of the cache");
    for (int64_t h = 0; h < H; ++h) {
      double* head = x.data() + (t * H + h) * D;
      for (int64_t i = 0; i < half; ++i) {
        const double c = cache[sz(p * rotary_dim + i)];
        const double s = cache[sz(p * rotary_dim + half + i)];
        double& a = neox ? head[i] : head[2 * i];
        double& b = neox ? head[i + half] : head[2 * i + 1];
        const double a0 = a, b0 = b;
        a = a0 * c - b0 * s;
        b = b0 * c + a0 * s;
      }
    }
  }
}

CrossEntropyResult cross_entropy(const std::vector<double>& logits, const std::vector<int64_t>& labels, int64_t V,
                                 int64_t ignore_index, double label_smoothing, double z_loss) {
  const size_t T = labels.size();
  require(V > 0 && logits.size() == T * sz(V), "cross_entropy: logits must be [T,V] with T = labels.size()");
  CrossEntropyResult r{std::vector<double>(T), std::vector<double>(T)};
  for (size_t t = 0; t < T; ++t) {
    const double* x = logits.data() + t * sz(V);
    double m = -std::numeric_limits<double>::infinity(), mean = 0;
    bool nan = false;
    for (int64_t j = 0; j < V; ++j) {
      nan = nan || std::isnan(x[j]);
      m = std::max(m, x[j]);
      mean += x[j] / static_cast<double>(V);
    }
    double lse = m;
    if (nan) {
      lse = std::numeric_limits<double>::quiet_NaN();
    } else if (m != -std::numeric_limits<double>::infinity()) {
      double sum = 0;
      for (int64_t j = 0; j < V; ++j) sum += std::exp(x[j] - m);
      lse = m + std::log(sum);
    }
    r.lse[t] = lse;
    if (labels[t] == ignore_index) continue;
    require(labels[t] >= 0 && labels[t] < V, "cross_entropy: label out of range");
    // Terms that are off are left out, not multiplied by 0 (0 * inf would be NaN for masked logits).
    double loss = lse - x[labels[t]];
    if (label_smoothing > 0) loss = (1 - label_smoothing) * loss + label_smoothing * (lse - mean);
    if (z_loss > 0) loss += z_loss * lse * lse;
    r.loss[t] = loss;
  }
  return r;
}

std::vector<double> linear(const std::vector<double>& x, const std::vector<double>& w, const std::vector<double>& bias,
                           int64_t M, int64_t N, int64_t K) {
  require(x.size() == sz(M * K), "linear: x must be [M,K]");
  require(w.size() == sz(N * K), "linear: w must be [N,K]");
  require(bias.empty() || bias.size() == sz(N), "linear: bias must be [N] or empty");
  std::vector<double> out(sz(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double acc = bias.empty() ? 0.0 : bias[sz(n)];
      for (int64_t kk = 0; kk < K; ++kk) acc += x[sz(m * K + kk)] * w[sz(n * K + kk)];
      out[sz(m * N + n)] = acc;
    }
  return out;
}

std::vector<double> embedding(const std::vector<int64_t>& ids, const std::vector<double>& table, int64_t D) {
  require(D > 0 && table.size() % sz(D) == 0, "embedding: table must be [V,D]");
  const int64_t V = int64_t(table.size()) / D;
  std::vector<double> out;
  for (const int64_t id : ids) {
    require(id >= 0 && id < V, "embedding: ids must be in 0..V-1");
    out.insert(out.end(), table.begin() + long(id * D), table.begin() + long((id + 1) * D));
  }
  return out;
}

}  // namespace xhal::golden
