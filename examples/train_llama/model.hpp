// A Llama-style decoder trained through xhal ops alone: token embedding, `layers` decoder layers
// (rms_norm, attention with RoPE and GQA, SwiGLU MLP, residuals), a final norm, an lm head and
// cross_entropy; the backward pass through every layer with the activations kept from the forward;
// global-norm clipping and AdamW on f32 master weights. Parameters, gradients and the optimizer's
// state are flat buffers, each parameter a view at its offset (ParamLayout), so that clipping and
// the update are one call each.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "xhal/xhal.hpp"

namespace train_llama {

struct ModelConfig {
  int64_t vocab = 256, hidden = 256, layers = 2, heads = 4, kv_heads = 2, head_dim = 64, inter = 704;
  int64_t batch = 8, seq = 64;
  xhal::DType dtype = xhal::DType::bf16;
  float eps = 1e-5f;
  double rope_theta = 10000.0;
  int64_t qkv_width() const { return (heads + 2 * kv_heads) * head_dim; }
  int64_t tokens() const { return batch * seq; }
};

// Where each parameter sits in the flat buffers (elements; each offset a multiple of 8, so that
// every parameter starts 16-byte aligned).
struct ParamLayout {
  struct Layer {
    int64_t attn_norm, w_qkv, w_o, mlp_norm, w_gate_up, w_down;
  };
  int64_t embedding = 0, final_norm = 0, lm_head = 0, total = 0;
  std::vector<Layer> layers;

  explicit ParamLayout(const ModelConfig& c);
  // Every parameter in layout order: offset, elements and the fan-in its initialisation scales by
  // (0 for a norm weight, initialised to 1); names() in the same order.
  struct Entry {
    int64_t offset, count, fan_in;
  };
  std::vector<Entry> entries(const ModelConfig& c) const;
  static std::vector<std::string> names(const ModelConfig& c);
};

// Initial parameters (f32, the layout's order): matrices normal with std 1/sqrt(fan in), norm
// weights 1. Seeded.
std::vector<float> initial_parameters(const ModelConfig& c, uint64_t seed);

struct StepResult {
  double loss;  // mean over the batch's tokens, before the update
  double grad_norm;  // of the whole gradient, before clipping
};

class Trainer {
 public:
  Trainer(const ModelConfig& c, xhal::Device device, const std::vector<float>& params);
  ~Trainer();
  Trainer(const Trainer&) = delete;
  Trainer& operator=(const Trainer&) = delete;

  // Forward, loss, backward, clipping to max_grad_norm and one AdamW update at learning rate lr.
  StepResult step(const std::vector<int32_t>& inputs, const std::vector<int32_t>& labels, float lr, float max_grad_norm,
                  int64_t step_number);
  // The flat gradient of the last step (f32 copy on the host).
  std::vector<float> gradients() const;
  xhal::Device device() const;

 private:
  struct State;
  State* s_;
};

}  // namespace train_llama
