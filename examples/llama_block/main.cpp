// llama_block: one Llama-style decoder layer (GQA attention + SwiGLU MLP) run through xhal on the
// default device (BACKEND_TYPE): a prefill of the prompt, then a few decode steps that read K/V
// from a paged cache. Prints host wall time per op and a checksum; on an accelerator it repeats
// the identical computation on the CPU and prints how far the two outputs are apart.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <numeric>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "common/host_tensors.hpp"
#include "xhal/xhal.hpp"

namespace {

using examples::download;
using examples::slice;
using examples::upload;
using xhal::Device;
using xhal::DType;
using xhal::Tensor;
using xhal::TensorView;

struct Config {
  int64_t hidden = 512, heads = 8, kv_heads = 2, head_dim = 64, inter = 1408;
  int64_t tokens = 64, decode = 4, block_size = 16;
  int64_t warmup = 1;  // untimed passes first: lazy loading, first-touch page faults, BLAS start-up
  DType dtype = DType::bf16;
  float eps = 1e-5f;
  double rope_theta = 10000.0;
  int64_t qkv_width() const { return (heads + 2 * kv_heads) * head_dim; }
  int64_t max_pos() const { return tokens + decode; }
};

Config parse_config(int argc, char** argv) {
  Config cfg;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (i + 1 >= argc) throw std::invalid_argument("missing value after " + flag);
    const std::string value = argv[++i];
    if (flag == "--hidden") {
      cfg.hidden = std::stoll(value);
    } else if (flag == "--tokens") {
      cfg.tokens = std::stoll(value);
    } else if (flag == "--decode") {
      cfg.decode = std::stoll(value);
    } else if (flag == "--warmup") {
      cfg.warmup = std::stoll(value);
    } else if (flag == "--dtype") {
      if (value == "f32")
        cfg.dtype = DType::f32;
      else if (value == "f16")
        cfg.dtype = DType::f16;
      else if (value == "bf16")
        cfg.dtype = DType::bf16;
      else
        throw std::invalid_argument("--dtype must be f32, f16 or bf16");
    } else {
      throw std::invalid_argument("unknown flag " + flag);
    }
  }
  if (cfg.hidden <= 0 || cfg.hidden % cfg.head_dim != 0) {
    throw std::invalid_argument("--hidden must be a positive multiple of 64 (the head dim)");
  }
  if (cfg.tokens < 1 || cfg.decode < 0 || cfg.warmup < 0) {
    throw std::invalid_argument("--tokens >= 1, --decode >= 0, --warmup >= 0");
  }
  // Keep the Llama proportions when --hidden changes: GQA ratio 4 where the heads allow it, and
  // the MLP ~2.75x wider, rounded to a multiple of 64 (512 -> 1408, as in the default).
  cfg.heads = cfg.hidden / cfg.head_dim;
  cfg.kv_heads = cfg.heads % 4 == 0 ? cfg.heads / 4 : cfg.heads;
  cfg.inter = (cfg.hidden * 11 / 4 + 63) / 64 * 64;
  return cfg;
}

// Everything random, generated once on the host so every device computes from identical bits.
struct HostData {
  std::vector<float> norm_in, norm_post, norm_final;  // [hidden]
  std::vector<float> w_qkv, w_o, w_gate_up, w_down;  // linear weights, [out, in]
  std::vector<float> prompt;  // [tokens, hidden] embeddings
  std::vector<float> decode_tokens;  // [decode, hidden]
};

HostData make_host_data(const Config& c, unsigned seed) {
  std::mt19937 rng(seed);
  auto normal = [&](size_t n, float mean, float stddev) {
    std::normal_distribution<float> dist(mean, stddev);
    std::vector<float> v(n);
    for (float& x : v) x = dist(rng);
    return v;
  };
  // Weights scaled by 1/sqrt(fan_in) keep activations O(1) through the layer, as trained models do.
  auto weight = [&](int64_t out, int64_t in) { return normal(size_t(out * in), 0.0f, 1.0f / std::sqrt(float(in))); };
  HostData h;
  h.norm_in = normal(size_t(c.hidden), 1.0f, 0.1f);
  h.norm_post = normal(size_t(c.hidden), 1.0f, 0.1f);
  h.norm_final = normal(size_t(c.hidden), 1.0f, 0.1f);
  h.w_qkv = weight(c.qkv_width(), c.hidden);
  h.w_o = weight(c.hidden, c.heads * c.head_dim);
  h.w_gate_up = weight(2 * c.inter, c.hidden);  // rows [0, inter) gate, [inter, 2*inter) up
  h.w_down = weight(c.hidden, c.inter);
  h.prompt = normal(size_t(c.tokens * c.hidden), 0.0f, 1.0f);
  h.decode_tokens = normal(size_t(c.decode * c.hidden), 0.0f, 1.0f);
  return h;
}

// Host wall time per op, summed over calls. The device is synchronised after each op so the time
// covers the work, not just the launch.
struct OpTimes {
  struct Row {
    std::string op;
    int calls = 0;
    double seconds = 0;
  };
  Device device;
  std::vector<Row> rows;  // in first-call order, which is the order of the layer

  template <class F>
  void time(const std::string& op, F&& run) {
    const auto t0 = std::chrono::steady_clock::now();
    run();
    xhal::DeviceManager::instance().synchronize(device);
    const std::chrono::duration<double> dt = std::chrono::steady_clock::now() - t0;
    auto it = std::find_if(rows.begin(), rows.end(), [&](const Row& r) { return r.op == op; });
    if (it == rows.end()) it = rows.insert(rows.end(), Row{op, 0, 0.0});
    it->calls += 1;
    it->seconds += dt.count();
  }
};

// The layer's weights and state on one device.
struct Layer {
  Config cfg;
  Device device;
  Tensor norm_in, norm_post, norm_final, w_qkv, w_o, w_gate_up, w_down, cos_sin;
  Tensor k_cache, v_cache, block_table;  // caches [num_blocks, block_size, Hkv, D]
  std::vector<int32_t> table_host;  // the same page table, for the host to place new rows
};

Layer make_layer(const Config& c, const HostData& h, Device device) {
  Layer l;
  l.cfg = c;
  l.device = device;
  const DType dt = c.dtype;
  l.norm_in = upload(h.norm_in.data(), {c.hidden}, dt, device);
  l.norm_post = upload(h.norm_post.data(), {c.hidden}, dt, device);
  l.norm_final = upload(h.norm_final.data(), {c.hidden}, dt, device);
  l.w_qkv = upload(h.w_qkv.data(), {c.qkv_width(), c.hidden}, dt, device);
  l.w_o = upload(h.w_o.data(), {c.hidden, c.heads * c.head_dim}, dt, device);
  l.w_gate_up = upload(h.w_gate_up.data(), {2 * c.inter, c.hidden}, dt, device);
  l.w_down = upload(h.w_down.data(), {c.hidden, c.inter}, dt, device);
  l.cos_sin = xhal::ops::rope_cache(c.max_pos(), c.head_dim, c.rope_theta, device);
  // A few spare pages, and the sequence's pages handed out in reverse order, so the example
  // exercises a real indirection rather than an identity table.
  const int64_t max_blocks = (c.max_pos() + c.block_size - 1) / c.block_size;
  const int64_t num_blocks = max_blocks + 2;
  l.table_host.resize(size_t(max_blocks));
  for (int64_t i = 0; i < max_blocks; ++i) l.table_host[size_t(i)] = int32_t(num_blocks - 1 - i);
  l.block_table = Tensor::from_host(l.table_host.data(), {1, max_blocks}, DType::i32, device);
  l.k_cache = Tensor::empty({num_blocks, c.block_size, c.kv_heads, c.head_dim}, dt, device);
  l.v_cache = Tensor::empty({num_blocks, c.block_size, c.kv_heads, c.head_dim}, dt, device);
  return l;
}

// Runs the layer on T tokens at positions p0..p0+T-1. p0 == 0 is the prefill (causal attention
// over the prompt itself); p0 > 0 is one decode token reading everything before it from the cache.
// Returns the layer output passed through the final norm, [T, hidden].
Tensor forward(Layer& l, const float* x_host, int64_t T, int64_t p0, OpTimes& times) {
  namespace ops = xhal::ops;
  const Config& c = l.cfg;
  const int64_t H = c.heads, Hkv = c.kv_heads, D = c.head_dim, W = c.qkv_width();
  const Device dev = l.device;
  // Inputs a serving loop would upload anyway; not part of the op timings.
  Tensor residual = upload(x_host, {T, c.hidden}, c.dtype, dev);
  std::vector<int32_t> pos(static_cast<size_t>(T));
  std::iota(pos.begin(), pos.end(), int32_t(p0));
  Tensor positions = Tensor::from_host(pos.data(), {T}, DType::i32, dev);
  const int32_t seq_len = int32_t(p0 + T);
  Tensor seq_lens = Tensor::from_host(&seq_len, {1}, DType::i32, dev);

  // A decode step's linears are matrix-vector products, bound by reading the weights; the prefill's
  // are matrix products. Timed apart, so that each can be set against its own benchmark.
  const std::string linear = p0 == 0 ? "linear " : "decode linear ";
  Tensor normed = Tensor::empty({T, c.hidden}, c.dtype, dev);
  times.time("rms_norm", [&] { ops::rms_norm(residual, l.norm_in, c.eps, normed); });
  Tensor qkv = Tensor::empty({T, W}, c.dtype, dev);
  times.time(linear + "qkv", [&] { ops::linear(normed, l.w_qkv, nullptr, qkv); });
  // q, k, v are strided views into the packed qkv rows: no copies.
  const TensorView q = slice(qkv, 0, {T, H, D}, {W, D, 1});
  const TensorView k = slice(qkv, H * D, {T, Hkv, D}, {W, D, 1});
  const TensorView v = slice(qkv, (H + Hkv) * D, {T, Hkv, D}, {W, D, 1});
  times.time("rope", [&] { ops::rope(q, k, positions, l.cos_sin, xhal::RopeStyle::neox); });

  // The tokens' K and V rows into their cache slots (the slots, like the positions, are an input
  // a serving loop uploads with the batch).
  std::vector<int32_t> slots(static_cast<size_t>(T));
  for (int64_t t = 0; t < T; ++t) {
    const int64_t p = p0 + t;
    slots[size_t(t)] = l.table_host[size_t(p / c.block_size)] * int32_t(c.block_size) + int32_t(p % c.block_size);
  }
  Tensor slot_mapping = Tensor::from_host(slots.data(), {T}, DType::i32, dev);
  times.time("kv cache write", [&] { ops::kv_cache_write(k, v, slot_mapping, l.k_cache, l.v_cache); });

  Tensor attn = Tensor::empty({T, H, D}, c.dtype, dev);
  if (p0 == 0) {
    // attention wants [B,S,H,D]: the same strided views with a batch dimension of 1 in front.
    const auto batch1 = [](const TensorView& t) {
      return TensorView(t.data(), t.dtype(), {1, t.size(0), t.size(1), t.size(2)},
                        {t.size(0) * t.stride(0), t.stride(0), t.stride(1), t.stride(2)}, t.device());
    };
    times.time("attention", [&] { ops::attention(batch1(q), batch1(k), batch1(v), batch1(attn), {.causal = true}); });
  } else {
    times.time("paged_attention",
               [&] { ops::paged_attention(q, l.k_cache, l.v_cache, l.block_table, seq_lens, attn); });
  }

  Tensor o = Tensor::empty({T, c.hidden}, c.dtype, dev);
  const TensorView attn2d(attn.data(), c.dtype, {T, H * D}, dev);
  times.time(linear + "o", [&] { ops::linear(attn2d, l.w_o, nullptr, o); });
  times.time("fused_add_rms_norm", [&] { ops::fused_add_rms_norm(o, residual, l.norm_post, c.eps, normed); });
  Tensor gate_up = Tensor::empty({T, 2 * c.inter}, c.dtype, dev);
  times.time(linear + "gate_up", [&] { ops::linear(normed, l.w_gate_up, nullptr, gate_up); });
  Tensor act = Tensor::empty({T, c.inter}, c.dtype, dev);
  times.time("swiglu_packed", [&] { ops::swiglu_packed(gate_up, act); });
  Tensor down = Tensor::empty({T, c.hidden}, c.dtype, dev);
  times.time(linear + "down", [&] { ops::linear(act, l.w_down, nullptr, down); });
  // xhal has no plain add: the MLP's residual add is fused into the next norm, as a model does
  // before its next layer (here the final norm).
  Tensor out = Tensor::empty({T, c.hidden}, c.dtype, dev);
  times.time("fused_add_rms_norm", [&] { ops::fused_add_rms_norm(down, residual, l.norm_final, c.eps, out); });
  return out;
}

struct RunResult {
  std::vector<float> outputs;  // [tokens + decode, hidden]: every position's layer output
  OpTimes times;
};

RunResult run_model(const Config& c, const HostData& h, Device device) {
  RunResult r{{}, {device, {}}};
  Layer layer = make_layer(c, h, device);
  auto append = [&](const Tensor& t) {
    const std::vector<float> v = download(t);
    r.outputs.insert(r.outputs.end(), v.begin(), v.end());
  };
  append(forward(layer, h.prompt.data(), c.tokens, 0, r.times));
  for (int64_t s = 0; s < c.decode; ++s) {
    append(forward(layer, h.decode_tokens.data() + s * c.hidden, 1, c.tokens + s, r.times));
  }
  return r;
}

void print_times(const OpTimes& times) {
  double total = 0;
  for (const auto& row : times.rows) total += row.seconds;
  std::printf("\n%-22s %6s %12s %12s %7s\n", "op", "calls", "total ms", "mean us", "share");
  for (const auto& row : times.rows) {
    std::printf("%-22s %6d %12.3f %12.1f %6.1f%%\n", row.op.c_str(), row.calls, row.seconds * 1e3,
                row.seconds * 1e6 / row.calls, 100.0 * row.seconds / total);
  }
  std::printf("%-22s %6s %12.3f\n", "total", "", total * 1e3);
}

int run(int argc, char** argv) {
  const Config c = parse_config(argc, argv);
  auto& dm = xhal::DeviceManager::instance();
  const Device device = dm.default_device();
  std::printf("llama_block on %s (%s): %s\n", device.str().c_str(), dm.properties(device).name.c_str(),
              dm.default_device_reason().c_str());
  std::printf(
      "hidden %lld, heads %lld/%lld x %lld, intermediate %lld, prompt %lld, decode %lld, "
      "block %lld, %s, %lld untimed pass(es) first\n",
      (long long)c.hidden, (long long)c.heads, (long long)c.kv_heads, (long long)c.head_dim, (long long)c.inter,
      (long long)c.tokens, (long long)c.decode, (long long)c.block_size, std::string(xhal::dtype_name(c.dtype)).c_str(),
      (long long)c.warmup);

  const HostData host = make_host_data(c, 2024);
  for (int64_t i = 0; i < c.warmup; ++i) run_model(c, host, device);
  const RunResult result = run_model(c, host, device);
  print_times(result.times);

  const auto last = result.outputs.end() - c.hidden;  // the last token's final hidden state
  const double checksum = std::accumulate(last, result.outputs.end(), 0.0);
  const double abs_sum =
      std::accumulate(last, result.outputs.end(), 0.0, [](double s, float x) { return s + std::fabs(x); });
  std::printf("\nfinal hidden state (position %lld): sum %.6f, sum|x| %.6f\n", (long long)(c.max_pos() - 1), checksum,
              abs_sum);

  if (device.type == xhal::DeviceType::cpu) {
    std::printf("ran on the CPU, the reference itself: no comparison needed\n");
    return 0;
  }
  // The same seed gives the same inputs and weights; the CPU backend is the reference.
  const RunResult ref = run_model(c, host, Device::cpu());
  double max_diff = 0, max_ref = 0;
  for (size_t i = 0; i < ref.outputs.size(); ++i) {
    max_diff = std::max(max_diff, double(std::fabs(result.outputs[i] - ref.outputs[i])));
    max_ref = std::max(max_ref, double(std::fabs(ref.outputs[i])));
  }
  std::printf("vs cpu over all %lld positions: max |%s - cpu| / max |cpu| = %.3e\n", (long long)c.max_pos(),
              device.str().c_str(), max_diff / std::max(max_ref, 1e-30));
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const xhal::Error& e) {
    std::fprintf(stderr, "llama_block: %s\n", e.what());
    return 2;
  } catch (const std::logic_error& e) {  // bad flags: std::invalid_argument, std::out_of_range
    std::fprintf(stderr,
                 "llama_block: %s\nusage: llama_block [--hidden N] [--tokens N] [--decode N] "
                 "[--warmup N] [--dtype f32|f16|bf16]\n",
                 e.what());
    return 1;
  }
}
