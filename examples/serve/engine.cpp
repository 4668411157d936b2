#include "engine.hpp"

#include <algorithm>
#include <chrono>
#include <deque>
#include <stdexcept>
#include <string>

#include "common/host_tensors.hpp"

namespace serve {
namespace {

namespace ops = xhal::ops;
using examples::slice;
using xhal::DType;
using xhal::Tensor;
using xhal::TensorView;

struct Sequence {
  Request request;
  std::vector<int32_t> tokens;  // prompt, then the generated ones
  int64_t cached = 0;  // tokens whose K and V are in the cache
  std::vector<int32_t> blocks;
  int64_t prompt_length() const { return int64_t(request.prompt.size()); }
  int64_t generated() const { return int64_t(tokens.size()) - prompt_length(); }
};

// A run of one sequence's tokens in a step: tokens[start, start + count).
struct Chunk {
  Sequence* seq;
  int64_t start, count;
};

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

}  // namespace

struct Engine::State {
  examples::ModelConfig c;
  Weights w;
  DType dtype;
  EngineOptions o;
  xhal::Device dev;
  Tensor rope;
  std::vector<Tensor> k_cache, v_cache;
  Tensor kv_scale;  // [1] f32 with fp8_kv_cache
  std::vector<int32_t> free_blocks;
  std::deque<Sequence> waiting;
  std::vector<std::unique_ptr<Sequence>> running;
  std::map<int64_t, std::vector<int32_t>> done;
  Tensor logits;
  std::vector<std::pair<int64_t, int64_t>> sampled;  // (request id, tokens generated before) per row

  int64_t qkv_width() const { return (c.heads + 2 * c.kv_heads) * c.head_dim; }
  // The cache's scales: none for a cache of the model's dtype.
  ops::KvCacheScales cache_scales() const {
    return o.fp8_kv_cache ? ops::KvCacheScales{&kv_scale.view(), &kv_scale.view()} : ops::KvCacheScales{};
  }

  // Moves waiting requests into the batch while the cache has blocks for their whole length.
  void admit() {
    while (!waiting.empty() && int64_t(running.size()) < o.max_running) {
      Sequence& next = waiting.front();
      const int64_t need = ceil_div(next.prompt_length() + next.request.max_new_tokens, o.block_size);
      if (need > int64_t(free_blocks.size())) break;  // first come, first served: no overtaking
      auto seq = std::make_unique<Sequence>(std::move(next));
      waiting.pop_front();
      seq->blocks.assign(free_blocks.end() - need, free_blocks.end());
      free_blocks.resize(free_blocks.size() - size_t(need));
      running.push_back(std::move(seq));
    }
  }

  // This step's chunks: every decoding sequence's next token first, then prompt chunks in arrival
  // order while the token budget lasts.
  std::vector<Chunk> schedule() const {
    std::vector<Chunk> chunks;
    int64_t budget = o.max_step_tokens;
    for (const auto& seq : running) {
      if (seq->cached >= seq->prompt_length() && budget > 0) {
        chunks.push_back({seq.get(), seq->cached, 1});
        --budget;
      }
    }
    for (const auto& seq : running) {
      if (seq->cached < seq->prompt_length() && budget > 0) {
        const int64_t n = std::min(seq->prompt_length() - seq->cached, budget);
        chunks.push_back({seq.get(), seq->cached, n});
        budget -= n;
      }
    }
    return chunks;
  }

  // The q, k or v heads (`count` from `first_head`) of rows [first_row, first_row + rows) of a
  // [T, qkv width] buffer, as [rows, count, head_dim].
  TensorView heads(const Tensor& qkv, int64_t rows, int64_t first_head, int64_t count, int64_t first_row = 0) const {
    return slice(qkv, first_row * qkv_width() + first_head * c.head_dim, {rows, count, c.head_dim},
                 {qkv_width(), c.head_dim, 1});
  }

  // out = x w^T (+ bias): linear, or with fp8_linear x quantized a scale a row and linear_fp8.
  void project(const Tensor& x, const Tensor& w_full, const Fp8Matrix& w8, const TensorView* bias,
               const TensorView& out) const {
    if (!o.fp8_linear) {
      ops::linear(x, w_full, bias, out);
      return;
    }
    const int64_t rows = x.size(0), K = x.size(1);
    const Tensor codes = Tensor::empty({rows, K}, DType::f8_e4m3, dev),
                 scale = Tensor::empty({rows, 1}, DType::f32, dev);
    ops::quantize(x, codes, scale, {ops::QuantizeParams::Granularity::per_row});
    ops::linear_fp8(codes, scale, w8.codes, w8.scale, bias, out);
  }

  // Attention of a layer's T query rows: the first `decodes` (one token a sequence) through
  // paged_attention, the rest (prompt chunks) through paged_prefill.
  void attention(const Tensor& qkv, int64_t l, int64_t T, int64_t decodes, int64_t max_blocks, int64_t max_q,
                 const Tensor& cu, const Tensor& table, const Tensor& lens, const Tensor& attn) const {
    const int64_t B = lens.size(0), Hq = c.heads, D = c.head_dim;
    auto q = [&](int64_t first, int64_t count) { return heads(qkv, count, 0, Hq, first); };
    auto out = [&](int64_t first, int64_t count) { return slice(attn, first * Hq * D, {count, Hq, D}); };
    auto part = [&](const Tensor& t, int64_t first, int64_t count, int64_t width) {
      return slice(t, first * width, width == 1 ? std::vector<int64_t>{count} : std::vector<int64_t>{count, width});
    };
    if (decodes > 0) {
      ops::paged_attention(q(0, decodes), k_cache[size_t(l)], v_cache[size_t(l)], part(table, 0, decodes, max_blocks),
                           part(lens, 0, decodes, 1), out(0, decodes), {}, cache_scales());
    }
    if (decodes < B) {
      const xhal::AttentionParams causal{.causal = true};
      ops::paged_prefill(q(decodes, T - decodes), k_cache[size_t(l)], v_cache[size_t(l)], cu,
                         part(table, decodes, B - decodes, max_blocks), part(lens, decodes, B - decodes, 1), max_q,
                         out(decodes, T - decodes), causal, nullptr, cache_scales());
    }
  }

  // The model over the chunks' tokens; returns the sampled rows' logits [S, V] (S = rows.size()).
  Tensor forward(const std::vector<Chunk>& chunks, const std::vector<int32_t>& sample_rows) {
    const int64_t B = int64_t(chunks.size()), H = c.hidden, I = c.intermediate, A = c.heads * c.head_dim;
    // Decode chunks come first (schedule()); they take paged_attention, which reads each kv head's
    // cache once for its whole query group, the prompt chunks after them paged_prefill.
    int64_t decodes = 0;
    while (decodes < B && chunks[size_t(decodes)].start >= chunks[size_t(decodes)].seq->prompt_length()) ++decodes;
    std::vector<int32_t> ids, positions, slots, cu{0}, lens;
    int64_t max_q = 0, max_blocks = 1;
    for (int64_t b = 0; b < B; ++b) {
      const Chunk& ch = chunks[size_t(b)];
      for (int64_t p = ch.start; p < ch.start + ch.count; ++p) {
        ids.push_back(ch.seq->tokens[size_t(p)]);
        positions.push_back(int32_t(p));
        slots.push_back(int32_t(ch.seq->blocks[size_t(p / o.block_size)] * o.block_size + p % o.block_size));
      }
      if (b >= decodes) cu.push_back(cu.back() + int32_t(ch.count));  // the prompt chunks' offsets
      lens.push_back(int32_t(ch.start + ch.count));
      if (b >= decodes) max_q = std::max(max_q, ch.count);
      max_blocks = std::max(max_blocks, int64_t(ch.seq->blocks.size()));
    }
    std::vector<int32_t> table(static_cast<size_t>(B * max_blocks), 0);
    for (int64_t b = 0; b < B; ++b) {
      const auto& blocks = chunks[size_t(b)].seq->blocks;
      std::copy(blocks.begin(), blocks.end(), table.begin() + b * max_blocks);
    }
    const int64_t T = int64_t(ids.size()), S = int64_t(sample_rows.size()), P = B - decodes;
    auto on_device = [&](const std::vector<int32_t>& v, std::vector<int64_t> shape) {
      return Tensor::from_host(v.data(), shape, DType::i32, dev);
    };
    const Tensor ids_t = on_device(ids, {T}), pos_t = on_device(positions, {T}), slots_t = on_device(slots, {T});
    const Tensor cu_t = on_device(cu, {P + 1}), lens_t = on_device(lens, {B});
    const Tensor table_t = on_device(table, {B, max_blocks});
    const Tensor x = Tensor::empty({T, H}, dtype, dev), h = Tensor::empty({T, H}, dtype, dev);
    const Tensor delta = Tensor::empty({T, H}, dtype, dev), qkv = Tensor::empty({T, qkv_width()}, dtype, dev);
    const Tensor attn = Tensor::empty({T, A}, dtype, dev), gu = Tensor::empty({T, 2 * I}, dtype, dev);
    const Tensor act = Tensor::empty({T, I}, dtype, dev);
    ops::embedding(ids_t, w.embed, x);
    for (int64_t l = 0; l < c.layers; ++l) {
      const LayerWeights& L = w.layers[size_t(l)];
      if (l == 0) {
        ops::rms_norm(x, L.attn_norm, float(c.rms_norm_eps), h);
      } else {  // the previous MLP's output joins the residual stream
        ops::fused_add_rms_norm(delta, x, L.attn_norm, float(c.rms_norm_eps), h);
      }
      const TensorView bias = L.b_qkv;
      project(h, L.w_qkv, L.qkv8, c.attention_bias ? &bias : nullptr, qkv);
      const TensorView k = heads(qkv, T, c.heads, c.kv_heads), v = heads(qkv, T, c.heads + c.kv_heads, c.kv_heads);
      ops::rope(heads(qkv, T, 0, c.heads), k, pos_t, rope, xhal::RopeStyle::neox);
      ops::kv_cache_write(k, v, slots_t, k_cache[size_t(l)], v_cache[size_t(l)], cache_scales());
      attention(qkv, l, T, decodes, max_blocks, max_q, cu_t, table_t, lens_t, attn);
      project(attn, L.w_o, L.o8, nullptr, delta);
      ops::fused_add_rms_norm(delta, x, L.mlp_norm, float(c.rms_norm_eps), h);
      project(h, L.w_gate_up, L.gate_up8, nullptr, gu);
      ops::swiglu_packed(gu, act);
      project(act, L.w_down, L.down8, nullptr, delta);
    }
    if (S == 0) return Tensor();
    ops::fused_add_rms_norm(delta, x, w.final_norm, float(c.rms_norm_eps), h);
    // Only the rows that sample go through the lm head: gathered by the embedding op.
    const Tensor last = Tensor::empty({S, H}, dtype, dev), out = Tensor::empty({S, c.vocab}, dtype, dev);
    ops::embedding(on_device(sample_rows, {S}), h, last);
    ops::linear(last, w.lm_head, nullptr, out);
    return out;
  }
};

Engine::Engine(const examples::ModelConfig& config, Weights weights, DType dtype, const EngineOptions& options,
               xhal::Device device)
    : s_(std::make_unique<State>()) {
  if (config.layers < 1) throw std::invalid_argument("serve: a model of no layers");
  State& s = *s_;
  s.c = config, s.w = std::move(weights), s.dtype = dtype, s.o = options, s.dev = device;
  if (options.fp8_linear && !s.w.fp8) quantize_to_fp8(s.w);
  s.rope = ops::rope_cache(options.max_context, config.head_dim, config.rope_theta, config.rope_scaling, device);
  const DType cache_dtype = options.fp8_kv_cache ? DType::f8_e4m3 : dtype;
  if (options.fp8_kv_cache) s.kv_scale = Tensor::from_host(&options.kv_scale, {1}, DType::f32, device);
  for (int64_t l = 0; l < config.layers; ++l) {
    const std::vector<int64_t> shape{options.num_blocks, options.block_size, config.kv_heads, config.head_dim};
    s.k_cache.push_back(Tensor::empty(shape, cache_dtype, device));
    s.v_cache.push_back(Tensor::empty(shape, cache_dtype, device));
  }
  for (int64_t b = options.num_blocks - 1; b >= 0; --b) s.free_blocks.push_back(int32_t(b));
}

Engine::~Engine() = default;

void Engine::add(const Request& r) {
  if (r.prompt.empty() || r.max_new_tokens < 1)
    throw std::invalid_argument("request: an empty prompt or no new tokens");
  if (r.max_new_tokens > s_->o.max_context) {  // before the sum below, which could overflow
    throw std::invalid_argument("request " + std::to_string(r.id) + ": max_new_tokens past max_context");
  }
  const int64_t length = int64_t(r.prompt.size()) + r.max_new_tokens;
  if (length > s_->o.max_context) {
    throw std::invalid_argument("request " + std::to_string(r.id) + ": " + std::to_string(length) +
                                " tokens, past max_context " + std::to_string(s_->o.max_context));
  }
  if (ceil_div(length, s_->o.block_size) > s_->o.num_blocks) {
    throw std::invalid_argument("request " + std::to_string(r.id) + ": more KV blocks than the cache has");
  }
  Sequence seq{r, r.prompt, 0, {}};
  s_->waiting.push_back(std::move(seq));
}

bool Engine::idle() const { return s_->waiting.empty() && s_->running.empty(); }

StepStats Engine::step() {
  State& s = *s_;
  StepStats stats;
  const auto t0 = std::chrono::steady_clock::now();
  s.admit();
  const std::vector<Chunk> chunks = s.schedule();
  if (chunks.empty()) return stats;
  // A chunk that reaches the sequence's last known token samples the next one.
  std::vector<int32_t> rows;
  std::vector<Sequence*> sampling;
  std::vector<float> temperature, top_p;
  std::vector<int64_t> seeds, steps;
  int64_t row = 0;
  for (const Chunk& ch : chunks) {
    row += ch.count;
    (ch.start >= ch.seq->prompt_length() ? stats.decode_tokens : stats.prefill_tokens) += ch.count;
    if (ch.start + ch.count == int64_t(ch.seq->tokens.size())) {
      rows.push_back(int32_t(row - 1));
      sampling.push_back(ch.seq);
      const Sampling& p = ch.seq->request.sampling;
      temperature.push_back(p.temperature), top_p.push_back(p.top_p);
      seeds.push_back(int64_t(p.seed)), steps.push_back(ch.seq->generated());
    }
  }
  s.logits = s.forward(chunks, rows);
  s.sampled.clear();
  for (const Sequence* seq : sampling) s.sampled.push_back({seq->request.id, seq->generated()});
  for (const Chunk& ch : chunks) ch.seq->cached = ch.start + ch.count;
  stats.requests = int64_t(chunks.size());
  if (!rows.empty()) {
    const int64_t S = int64_t(rows.size());
    const Tensor temp_t = Tensor::from_host(temperature.data(), {S}, DType::f32, s.dev);
    const Tensor top_p_t = Tensor::from_host(top_p.data(), {S}, DType::f32, s.dev);
    const Tensor seeds_t = Tensor::from_host(seeds.data(), {S}, DType::i64, s.dev);
    const Tensor steps_t = Tensor::from_host(steps.data(), {S}, DType::i64, s.dev);
    const Tensor tokens_t = Tensor::empty({S}, DType::i32, s.dev);
    const TensorView tv = temp_t, pv = top_p_t, sv = seeds_t, stv = steps_t;
    xhal::ops::SampleRowParams per_row;
    per_row.temperature = &tv, per_row.top_p = &pv, per_row.seeds = &sv, per_row.steps = &stv;
    ops::sample(s.logits, tokens_t, {}, per_row);
    std::vector<int32_t> tokens(static_cast<size_t>(S));
    tokens_t.copy_to_host(tokens.data());
    for (int64_t i = 0; i < S; ++i) sampling[size_t(i)]->tokens.push_back(tokens[size_t(i)]);
  }
  // Finished requests leave and give their blocks back.
  for (auto it = s.running.begin(); it != s.running.end();) {
    Sequence& seq = **it;
    if (seq.generated() >= seq.request.max_new_tokens) {
      s.done[seq.request.id].assign(seq.tokens.begin() + seq.prompt_length(), seq.tokens.end());
      s.free_blocks.insert(s.free_blocks.end(), seq.blocks.begin(), seq.blocks.end());
      it = s.running.erase(it);
    } else {
      ++it;
    }
  }
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return stats;
}

const std::map<int64_t, std::vector<int32_t>>& Engine::finished() const { return s_->done; }

std::vector<float> Engine::last_logits() const {
  return s_->sampled.empty() ? std::vector<float>{} : examples::download(s_->logits);
}

std::vector<std::pair<int64_t, int64_t>> Engine::last_sampled() const { return s_->sampled; }

double forward_flops(const examples::ModelConfig& c, int64_t tokens, double attended_keys, int64_t sampled) {
  const double H = double(c.hidden), I = double(c.intermediate), A = double(c.heads * c.head_dim);
  const double W = double((c.heads + 2 * c.kv_heads) * c.head_dim);
  const double per_token = double(c.layers) * (H * W + A * H + 3.0 * H * I);
  const double attention = double(c.layers) * 2.0 * A * attended_keys;  // q·k and p·v
  return 2.0 * (per_token * double(tokens) + attention + H * double(c.vocab) * double(sampled));
}

}  // namespace serve
