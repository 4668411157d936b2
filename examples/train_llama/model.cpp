#include "model.hpp"

#include <cmath>
#include <random>

#include "common/host_tensors.hpp"

namespace train_llama {
namespace {

namespace ops = xhal::ops;
using examples::slice;
using xhal::Device;
using xhal::DType;
using xhal::Tensor;
using xhal::TensorView;

int64_t aligned(int64_t n) { return (n + 7) / 8 * 8; }

}  // namespace

ParamLayout::ParamLayout(const ModelConfig& c) {
  int64_t at = 0;
  const auto take = [&](int64_t n) {
    const int64_t offset = at;
    at += aligned(n);
    return offset;
  };
  embedding = take(c.vocab * c.hidden);
  for (int64_t l = 0; l < c.layers; ++l) {
    Layer layer{};
    layer.attn_norm = take(c.hidden);
    layer.w_qkv = take(c.qkv_width() * c.hidden);
    layer.w_o = take(c.hidden * c.heads * c.head_dim);
    layer.mlp_norm = take(c.hidden);
    layer.w_gate_up = take(2 * c.inter * c.hidden);
    layer.w_down = take(c.hidden * c.inter);
    layers.push_back(layer);
  }
  final_norm = take(c.hidden);
  lm_head = take(c.vocab * c.hidden);
  total = at;
}

std::vector<ParamLayout::Entry> ParamLayout::entries(const ModelConfig& c) const {
  std::vector<Entry> e{{embedding, c.vocab * c.hidden, 1}};
  for (const Layer& l : layers) {
    e.push_back({l.attn_norm, c.hidden, 0});
    e.push_back({l.w_qkv, c.qkv_width() * c.hidden, c.hidden});
    e.push_back({l.w_o, c.hidden * c.heads * c.head_dim, c.heads * c.head_dim});
    e.push_back({l.mlp_norm, c.hidden, 0});
    e.push_back({l.w_gate_up, 2 * c.inter * c.hidden, c.hidden});
    e.push_back({l.w_down, c.hidden * c.inter, c.inter});
  }
  e.push_back({final_norm, c.hidden, 0});
  e.push_back({lm_head, c.vocab * c.hidden, c.hidden});
  return e;
}

std::vector<std::string> ParamLayout::names(const ModelConfig& c) {
  std::vector<std::string> n{"embedding"};
  for (int64_t l = 0; l < c.layers; ++l) {
    for (const char* p : {"attn_norm", "w_qkv", "w_o", "mlp_norm", "w_gate_up", "w_down"}) {
      n.push_back("layer" + std::to_string(l) + "." + p);
    }
  }
  n.push_back("final_norm");
  n.push_back("lm_head");
  return n;
}

std::vector<float> initial_parameters(const ModelConfig& c, uint64_t seed) {
  const ParamLayout layout(c);
  std::vector<float> p(size_t(layout.total), 0.0f);
  std::mt19937_64 rng(seed);
  for (const ParamLayout::Entry& e : layout.entries(c)) {
    std::normal_distribution<float> normal(0.0f, 1.0f / std::sqrt(float(e.fan_in)));
    for (int64_t i = 0; i < e.count; ++i) p[size_t(e.offset + i)] = e.fan_in == 0 ? 1.0f : normal(rng);
  }
  return p;
}

// The activations one layer keeps for its backward pass: the residual stream after each add (what
// the norms' gradients read), the norms' outputs, q/k/v after RoPE, attention's output and lse,
// the MLP's gate|up and its activation.
struct LayerActivations {
  Tensor r_attn, h1, qkv, attn_out, lse, r_mlp, h2, gu, act;
};

struct Trainer::State {
  ModelConfig c;
  Device dev;
  ParamLayout layout;
  Tensor params, grads, master, exp_avg, exp_avg_sq, grad_norm, clip_scale;  // flat buffers
  Tensor ids, labels, positions, rope, zeros, dloss;
  std::vector<LayerActivations> acts;
  Tensor delta, r_final, hf, logits, ce_lse, loss;
  Tensor g_r, d_h, d_act, d_gu, d_attn, d_qkv;  // gradients, reused by every layer

  State(const ModelConfig& cfg, Device device, const std::vector<float>& init) : c(cfg), dev(device), layout(cfg) {
    const int64_t N = layout.total, T = c.tokens(), H = c.hidden, W = c.qkv_width();
    const int64_t A = c.heads * c.head_dim, I = c.inter;
    const DType dt = c.dtype;
    params = examples::upload(init.data(), {N}, dt, dev);
    master = Tensor::from_host(init.data(), {N}, DType::f32, dev);
    const std::vector<float> zero(size_t(std::max(N, T * H)), 0.0f);
    grads = examples::upload(zero.data(), {N}, dt, dev);  // the padding between parameters stays 0
    exp_avg = Tensor::from_host(zero.data(), {N}, DType::f32, dev);
    exp_avg_sq = Tensor::from_host(zero.data(), {N}, DType::f32, dev);
    grad_norm = Tensor::empty({1}, DType::f32, dev);
    clip_scale = Tensor::empty({1}, DType::f32, dev);
    zeros = examples::upload(zero.data(), {T, H}, dt, dev);
    std::vector<int32_t> pos(static_cast<size_t>(T));
    for (int64_t t = 0; t < T; ++t) pos[size_t(t)] = int32_t(t % c.seq);
    positions = Tensor::from_host(pos.data(), {T}, DType::i32, dev);
    rope = ops::rope_cache(c.seq, c.head_dim, c.rope_theta, dev);
    const std::vector<float> mean(size_t(T), 1.0f / float(T));  // the loss is the mean over tokens
    dloss = Tensor::from_host(mean.data(), {T}, DType::f32, dev);
    for (int64_t l = 0; l < c.layers; ++l) {
      acts.push_back({Tensor::empty({T, H}, dt, dev), Tensor::empty({T, H}, dt, dev), Tensor::empty({T, W}, dt, dev),
                      Tensor::empty({T, A}, dt, dev), Tensor::empty({c.batch, c.heads, c.seq}, DType::f32, dev),
                      Tensor::empty({T, H}, dt, dev), Tensor::empty({T, H}, dt, dev),
                      Tensor::empty({T, 2 * I}, dt, dev), Tensor::empty({T, I}, dt, dev)});
    }
    delta = Tensor::empty({T, H}, dt, dev);
    r_final = Tensor::empty({T, H}, dt, dev);
    hf = Tensor::empty({T, H}, dt, dev);
    logits = Tensor::empty({T, c.vocab}, dt, dev);
    ce_lse = Tensor::empty({T}, DType::f32, dev);
    loss = Tensor::empty({T}, DType::f32, dev);
    g_r = Tensor::empty({T, H}, dt, dev);
    d_h = Tensor::empty({T, H}, dt, dev);
    d_act = Tensor::empty({T, I}, dt, dev);
    d_gu = Tensor::empty({T, 2 * I}, dt, dev);
    d_attn = Tensor::empty({T, A}, dt, dev);
    d_qkv = Tensor::empty({T, W}, dt, dev);
  }

  TensorView param(int64_t offset, std::vector<int64_t> shape) const { return slice(params, offset, shape); }
  TensorView grad(int64_t offset, std::vector<int64_t> shape) const { return slice(grads, offset, shape); }

  // q, k, v of a [T, qkv width] buffer: [B, S, heads, head_dim] views (attention) or [T, heads,
  // head_dim] (rope); heads 0.. are q, then k, then v.
  TensorView heads4(const Tensor& qkv, int64_t first_head, int64_t count) const {
    const int64_t W = c.qkv_width(), Dh = c.head_dim;
    return slice(qkv, first_head * Dh, {c.batch, c.seq, count, Dh}, {c.seq * W, W, Dh, 1});
  }
  TensorView heads3(const Tensor& qkv, int64_t first_head, int64_t count) const {
    const int64_t W = c.qkv_width(), Dh = c.head_dim;
    return slice(qkv, first_head * Dh, {c.tokens(), count, Dh}, {W, Dh, 1});
  }
  TensorView rows4(const Tensor& t) const { return slice(t, 0, {c.batch, c.seq, c.heads, c.head_dim}); }

  void forward() {
    const int64_t H = c.hidden, I = c.inter, A = c.heads * c.head_dim, Hq = c.heads, Hkv = c.kv_heads;
    const xhal::AttentionParams causal{.causal = true};
    for (int64_t l = 0; l < c.layers; ++l) {
      const ParamLayout::Layer& p = layout.layers[size_t(l)];
      LayerActivations& a = acts[size_t(l)];
      if (l == 0) {  // the residual stream starts as the token embeddings
        ops::embedding(ids, param(layout.embedding, {c.vocab, H}), a.r_attn);
        ops::rms_norm(a.r_attn, param(p.attn_norm, {H}), c.eps, a.h1);
      } else {  // the previous MLP's output joins the stream
        xhal::copy(a.r_attn, acts[size_t(l - 1)].r_mlp);
        ops::fused_add_rms_norm(delta, a.r_attn, param(p.attn_norm, {H}), c.eps, a.h1);
      }
      ops::linear(a.h1, param(p.w_qkv, {c.qkv_width(), H}), nullptr, a.qkv);
      ops::rope(heads3(a.qkv, 0, Hq), heads3(a.qkv, Hq, Hkv), positions, rope, xhal::RopeStyle::neox);
      const TensorView lse = a.lse;
      ops::attention(heads4(a.qkv, 0, Hq), heads4(a.qkv, Hq, Hkv), heads4(a.qkv, Hq + Hkv, Hkv), rows4(a.attn_out),
                     causal, &lse);
      ops::linear(a.attn_out, param(p.w_o, {H, A}), nullptr, delta);
      xhal::copy(a.r_mlp, a.r_attn);
      ops::fused_add_rms_norm(delta, a.r_mlp, param(p.mlp_norm, {H}), c.eps, a.h2);
      ops::linear(a.h2, param(p.w_gate_up, {2 * I, H}), nullptr, a.gu);
      ops::swiglu_packed(a.gu, a.act);
      ops::linear(a.act, param(p.w_down, {H, I}), nullptr, delta);
    }
    xhal::copy(r_final, acts.back().r_mlp);
    ops::fused_add_rms_norm(delta, r_final, param(layout.final_norm, {H}), c.eps, hf);
    ops::linear(hf, param(layout.lm_head, {c.vocab, H}), nullptr, logits);
    ops::cross_entropy(logits, labels, loss, ce_lse);
  }

  void backward() {
    const int64_t H = c.hidden, I = c.inter, A = c.heads * c.head_dim, Hq = c.heads, Hkv = c.kv_heads;
    const xhal::AttentionParams causal{.causal = true};
    ops::cross_entropy_backward(logits, labels, ce_lse, dloss, logits);  // dlogits over the logits
    const TensorView d_h_view = d_h;
    TensorView g = grad(layout.lm_head, {c.vocab, H});
    ops::linear_backward(logits, hf, param(layout.lm_head, {c.vocab, H}), &d_h_view, &g, nullptr);
    xhal::copy(g_r, zeros);  // nothing reaches the stream past the final norm
    ops::fused_add_rms_norm_backward(d_h, r_final, param(layout.final_norm, {H}), c.eps, g_r, g_r,
                                     grad(layout.final_norm, {H}));
    const TensorView d_act_view = d_act, d_attn_view = d_attn;
    for (int64_t l = c.layers - 1; l >= 0; --l) {
      const ParamLayout::Layer& p = layout.layers[size_t(l)];
      const LayerActivations& a = acts[size_t(l)];
      // The MLP: the stream's gradient is its output's.
      g = grad(p.w_down, {H, I});
      ops::linear_backward(g_r, a.act, param(p.w_down, {H, I}), &d_act_view, &g, nullptr);
      ops::swiglu_packed_backward(d_act, a.gu, d_gu);
      g = grad(p.w_gate_up, {2 * I, H});
      ops::linear_backward(d_gu, a.h2, param(p.w_gate_up, {2 * I, H}), &d_h_view, &g, nullptr);
      ops::fused_add_rms_norm_backward(d_h, a.r_mlp, param(p.mlp_norm, {H}), c.eps, g_r, g_r, grad(p.mlp_norm, {H}));
      // Attention.
      g = grad(p.w_o, {H, A});
      ops::linear_backward(g_r, a.attn_out, param(p.w_o, {H, A}), &d_attn_view, &g, nullptr);
      ops::attention_backward(rows4(d_attn), heads4(a.qkv, 0, Hq), heads4(a.qkv, Hq, Hkv), heads4(a.qkv, Hq + Hkv, Hkv),
                              rows4(a.attn_out), a.lse, heads4(d_qkv, 0, Hq), heads4(d_qkv, Hq, Hkv),
                              heads4(d_qkv, Hq + Hkv, Hkv), causal);
      ops::rope_backward(heads3(d_qkv, 0, Hq), heads3(d_qkv, Hq, Hkv), positions, rope, xhal::RopeStyle::neox);
      g = grad(p.w_qkv, {c.qkv_width(), H});
      ops::linear_backward(d_qkv, a.h1, param(p.w_qkv, {c.qkv_width(), H}), &d_h_view, &g, nullptr);
      ops::fused_add_rms_norm_backward(d_h, a.r_attn, param(p.attn_norm, {H}), c.eps, g_r, g_r, grad(p.attn_norm, {H}));
    }
    ops::embedding_backward(ids, g_r, grad(layout.embedding, {c.vocab, H}));
  }
};

Trainer::Trainer(const ModelConfig& c, Device device, const std::vector<float>& params)
    : s_(new State(c, device, params)) {}

Trainer::~Trainer() { delete s_; }

Device Trainer::device() const { return s_->dev; }

StepResult Trainer::step(const std::vector<int32_t>& inputs, const std::vector<int32_t>& labels, float lr,
                         float max_grad_norm, int64_t step_number) {
  State& s = *s_;
  const int64_t T = s.c.tokens();
  s.ids = Tensor::from_host(inputs.data(), {T}, DType::i32, s.dev);
  s.labels = Tensor::from_host(labels.data(), {T}, DType::i32, s.dev);
  s.forward();
  s.backward();
  const TensorView clip = s.clip_scale;
  ops::global_grad_norm(s.grads, s.grad_norm, &clip, max_grad_norm);
  const TensorView master = s.master;
  ops::adamw_step(s.params, s.grads, s.exp_avg, s.exp_avg_sq, &master, nullptr, &clip,
                  {.lr = lr, .beta1 = 0.9f, .beta2 = 0.95f, .eps = 1e-8f, .weight_decay = 0.01f, .step = step_number});
  // The loss the forward computed (cross_entropy_backward wrote over the logits, not the loss).
  const std::vector<float> loss = examples::download(s.loss), norm = examples::download(s.grad_norm);
  double sum = 0;
  for (float x : loss) sum += x;
  return {sum / double(T), double(norm[0])};
}

std::vector<float> Trainer::gradients() const { return examples::download(s_->grads); }

}  // namespace train_llama
