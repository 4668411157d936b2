#include "weights.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <stdexcept>

#include "common/host_tensors.hpp"
#include "common/safetensors.hpp"

namespace serve {
namespace {

using xhal::Device;
using xhal::DType;
using xhal::Tensor;

// One weight's rows as f32 on the host, appended to by each source tensor (q, k, v; gate, up).
struct HostMatrix {
  std::vector<float> values;
  int64_t rows = 0, cols = 0;
  void append(const float* src, int64_t r, int64_t c) {
    if (cols != 0 && c != cols) throw std::runtime_error("weights: stacked rows of different lengths");
    cols = c, rows += r;
    values.insert(values.end(), src, src + r * c);
  }
  Tensor upload(DType dtype, Device device) const {
    return rows == 1 ? examples::upload(values.data(), {cols}, dtype, device)
                     : examples::upload(values.data(), {rows, cols}, dtype, device);
  }
};

// The shapes of the stacked weights, in the order both sources fill them.
struct Shapes {
  int64_t H, I, V, A, KV;  // hidden, intermediate, vocab, q width, k (= v) width
  explicit Shapes(const examples::ModelConfig& c)
      : H(c.hidden), I(c.intermediate), V(c.vocab), A(c.heads * c.head_dim), KV(c.kv_heads * c.head_dim) {}
};

// Values uniform in [-a, a], a = sqrt(3 / fan_in) (variance 1 / fan_in), from a seeded generator.
std::vector<float> random_values(int64_t count, int64_t fan_in, std::mt19937_64& rng) {
  std::vector<float> v(static_cast<size_t>(count));
  const float a = std::sqrt(3.0f / float(fan_in));
  std::uniform_real_distribution<float> uniform(-a, a);
  for (float& x : v) x = uniform(rng);
  return v;
}

std::vector<float> as_f32(const examples::SafeTensor& t) {
  int64_t n = 1;
  for (int64_t d : t.shape) n *= d;
  std::vector<float> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const std::byte* p = t.data + i * int64_t(xhal::dtype_size(t.dtype));
    uint16_t h = 0;
    switch (t.dtype) {
      case DType::f32: std::memcpy(&out[size_t(i)], p, 4); break;
      case DType::bf16: std::memcpy(&h, p, 2), out[size_t(i)] = xhal::bf16_to_float(h); break;
      case DType::f16: std::memcpy(&h, p, 2), out[size_t(i)] = xhal::f16_to_float(h); break;
      default: throw std::runtime_error("weights: a tensor of dtype " + std::string(xhal::dtype_name(t.dtype)));
    }
  }
  return out;
}

// The tensor `name` of the file as f32, after checking its shape.
std::vector<float> read(const examples::SafeTensorsFile& file, const std::string& name, std::vector<int64_t> shape) {
  const examples::SafeTensor& t = file.at(name);
  if (t.shape != shape) {
    std::string want, got;
    for (int64_t d : shape) want += (want.empty() ? "" : ",") + std::to_string(d);
    for (int64_t d : t.shape) got += (got.empty() ? "" : ",") + std::to_string(d);
    throw std::runtime_error("weights: " + name + " is [" + got + "], the config makes it [" + want + "]");
  }
  return as_f32(t);
}

std::string layer_name(int64_t l, const char* rest) { return "model.layers." + std::to_string(l) + "." + rest; }

}  // namespace

Weights random_weights(const examples::ModelConfig& c, DType dtype, Device device, uint64_t seed) {
  const Shapes s(c);
  std::mt19937_64 rng(seed);
  const std::vector<float> ones(size_t(s.H), 1.0f);
  Weights w;
  auto matrix = [&](int64_t rows, int64_t cols) {
    const std::vector<float> v = random_values(rows * cols, cols, rng);
    return examples::upload(v.data(), {rows, cols}, dtype, device);
  };
  {  // embeddings of unit variance per element, as the models' own initialisations give
    const std::vector<float> v = random_values(s.V * s.H, 1, rng);
    w.embed = examples::upload(v.data(), {s.V, s.H}, dtype, device);
  }
  for (int64_t l = 0; l < c.layers; ++l) {
    LayerWeights L;
    L.attn_norm = examples::upload(ones.data(), {s.H}, dtype, device);
    L.w_qkv = matrix(s.A + 2 * s.KV, s.H);
    if (c.attention_bias) {
      const std::vector<float> b = random_values(s.A + 2 * s.KV, s.H, rng);
      L.b_qkv = examples::upload(b.data(), {s.A + 2 * s.KV}, dtype, device);
    }
    L.w_o = matrix(s.H, s.A);
    L.mlp_norm = examples::upload(ones.data(), {s.H}, dtype, device);
    L.w_gate_up = matrix(2 * s.I, s.H);
    L.w_down = matrix(s.H, s.I);
    w.layers.push_back(std::move(L));
  }
  w.final_norm = examples::upload(ones.data(), {s.H}, dtype, device);
  w.lm_head = c.tie_word_embeddings ? w.embed : matrix(s.V, s.H);
  return w;
}

Weights load_weights(const std::string& path, const examples::ModelConfig& c, DType dtype, Device device) {
  const examples::SafeTensorsFile file(path);
  const Shapes s(c);
  Weights w;
  auto single = [&](const std::string& name, std::vector<int64_t> shape) {
    HostMatrix m;
    const std::vector<float> v = read(file, name, shape);
    m.append(v.data(), shape.size() == 1 ? 1 : shape[0], shape.back());
    return m.upload(dtype, device);
  };
  // Parts stacked by rows ([rows, cols] each); cols 0: vectors of `rows` elements, one after another.
  auto stacked = [&](std::vector<std::pair<std::string, int64_t>> parts, int64_t cols) {
    HostMatrix m;
    for (const auto& [name, rows] : parts) {
      if (cols == 0) {
        const std::vector<float> v = read(file, name, {rows});
        m.values.insert(m.values.end(), v.begin(), v.end());
      } else {
        const std::vector<float> v = read(file, name, {rows, cols});
        m.append(v.data(), rows, cols);
      }
    }
    if (cols == 0) return examples::upload(m.values.data(), {int64_t(m.values.size())}, dtype, device);
    return m.upload(dtype, device);
  };
  w.embed = single("model.embed_tokens.weight", {s.V, s.H});
  for (int64_t l = 0; l < c.layers; ++l) {
    LayerWeights L;
    L.attn_norm = single(layer_name(l, "input_layernorm.weight"), {s.H});
    L.w_qkv = stacked({{layer_name(l, "self_attn.q_proj.weight"), s.A},
                       {layer_name(l, "self_attn.k_proj.weight"), s.KV},
                       {layer_name(l, "self_attn.v_proj.weight"), s.KV}},
                      s.H);
    if (c.attention_bias) {
      L.b_qkv = stacked({{layer_name(l, "self_attn.q_proj.bias"), s.A},
                         {layer_name(l, "self_attn.k_proj.bias"), s.KV},
                         {layer_name(l, "self_attn.v_proj.bias"), s.KV}},
                        0);
    }
    for (const char* unused :
         {"self_attn.o_proj.bias", "mlp.gate_proj.bias", "mlp.up_proj.bias", "mlp.down_proj.bias"}) {
      if (file.contains(layer_name(l, unused))) {
        throw std::runtime_error("weights: " + layer_name(l, unused) + " in '" + path +
                                 "': the engine applies q/k/v biases only");
      }
    }
    L.w_o = single(layer_name(l, "self_attn.o_proj.weight"), {s.H, s.A});
    L.mlp_norm = single(layer_name(l, "post_attention_layernorm.weight"), {s.H});
    L.w_gate_up =
        stacked({{layer_name(l, "mlp.gate_proj.weight"), s.I}, {layer_name(l, "mlp.up_proj.weight"), s.I}}, s.H);
    L.w_down = single(layer_name(l, "mlp.down_proj.weight"), {s.H, s.I});
    w.layers.push_back(std::move(L));
  }
  w.final_norm = single("model.norm.weight", {s.H});
  w.lm_head = c.tie_word_embeddings ? w.embed : single("lm_head.weight", {s.V, s.H});
  return w;
}

void quantize_to_fp8(Weights& w) {
  auto codes_of = [](const Tensor& m) {
    Fp8Matrix q{Tensor::empty({m.size(0), m.size(1)}, DType::f8_e4m3, m.device()),
                Tensor::empty({m.size(0), 1}, DType::f32, m.device())};
    xhal::ops::quantize(m, q.codes, q.scale, {xhal::ops::QuantizeParams::Granularity::per_row});
    return q;
  };
  for (LayerWeights& L : w.layers) {
    L.qkv8 = codes_of(L.w_qkv), L.o8 = codes_of(L.w_o);
    L.gate_up8 = codes_of(L.w_gate_up), L.down8 = codes_of(L.w_down);
  }
  w.fp8 = true;
}

void save_weights(const std::string& path, const examples::ModelConfig& c, const Weights& w) {
  const Shapes s(c);
  std::vector<examples::SafeTensorToWrite> out;
  // Rows [first, first + rows) of a tensor's bytes as a tensor of its own.
  auto put = [&](const std::string& name, const Tensor& t, int64_t first, int64_t rows) {
    const size_t elt = xhal::dtype_size(t.dtype());
    std::vector<std::byte> all(size_t(t.numel()) * elt);
    t.copy_to_host(all.data());
    const int64_t cols = t.view().ndim() == 1 ? 1 : t.size(1);
    std::vector<int64_t> shape = t.view().ndim() == 1 ? std::vector<int64_t>{rows} : std::vector<int64_t>{rows, cols};
    const auto begin = all.begin() + std::ptrdiff_t(size_t(first * cols) * elt);
    out.push_back(
        {name, t.dtype(), shape, std::vector<std::byte>(begin, begin + std::ptrdiff_t(size_t(rows * cols) * elt))});
  };
  auto whole = [&](const std::string& name, const Tensor& t) { put(name, t, 0, t.size(0)); };
  whole("model.embed_tokens.weight", w.embed);
  for (int64_t l = 0; l < c.layers; ++l) {
    const LayerWeights& L = w.layers[size_t(l)];
    whole(layer_name(l, "input_layernorm.weight"), L.attn_norm);
    put(layer_name(l, "self_attn.q_proj.weight"), L.w_qkv, 0, s.A);
    put(layer_name(l, "self_attn.k_proj.weight"), L.w_qkv, s.A, s.KV);
    put(layer_name(l, "self_attn.v_proj.weight"), L.w_qkv, s.A + s.KV, s.KV);
    if (c.attention_bias) {
      put(layer_name(l, "self_attn.q_proj.bias"), L.b_qkv, 0, s.A);
      put(layer_name(l, "self_attn.k_proj.bias"), L.b_qkv, s.A, s.KV);
      put(layer_name(l, "self_attn.v_proj.bias"), L.b_qkv, s.A + s.KV, s.KV);
    }
    whole(layer_name(l, "self_attn.o_proj.weight"), L.w_o);
    whole(layer_name(l, "post_attention_layernorm.weight"), L.mlp_norm);
    put(layer_name(l, "mlp.gate_proj.weight"), L.w_gate_up, 0, s.I);
    put(layer_name(l, "mlp.up_proj.weight"), L.w_gate_up, s.I, s.I);
    whole(layer_name(l, "mlp.down_proj.weight"), L.w_down);
  }
  whole("model.norm.weight", w.final_norm);
  if (!c.tie_word_embeddings) whole("lm_head.weight", w.lm_head);
  examples::write_safetensors(path, out, {{"format", "pt"}});
}

}  // namespace serve
