// A decoder model's weights on a device, in the layout the serving engine multiplies by: q, k and v
// projections stacked into one [(Hq + 2 Hkv) D, hidden] matrix and gate over up into one
// [2 intermediate, hidden] (swiglu_packed's order), so that each is one linear. Either
// deterministic random values (seeded; norms 1, matrices uniform with the variance of 1/fan-in) or
// a Hugging Face safetensors file's tensors (Llama and Qwen2 names), converted to the engine's dtype.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/model_config.hpp"
#include "xhal/xhal.hpp"

namespace serve {

// A matrix as e4m3 codes with a scale a row (an output channel), for linear_fp8.
struct Fp8Matrix {
  xhal::Tensor codes, scale;
};

struct LayerWeights {
  xhal::Tensor attn_norm, w_qkv, w_o, mlp_norm, w_gate_up, w_down;
  xhal::Tensor b_qkv;  // empty unless the config has q/k/v biases
  Fp8Matrix qkv8, o8, gate_up8, down8;  // set by quantize_to_fp8
};

struct Weights {
  xhal::Tensor embed, final_norm, lm_head;  // lm_head shares embed's storage when the embeddings are tied
  std::vector<LayerWeights> layers;
  bool fp8 = false;  // the layers' Fp8Matrix members are set
};

Weights random_weights(const examples::ModelConfig& c, xhal::DType dtype, xhal::Device device, uint64_t seed);

// Throws std::runtime_error naming the file and tensor when one is missing or of the wrong shape.
Weights load_weights(const std::string& safetensors_path, const examples::ModelConfig& c, xhal::DType dtype,
                     xhal::Device device);

// Adds e4m3 codes of every layer's matrices (a dynamic scale a row) beside them; the embeddings,
// norms and lm head stay as they are.
void quantize_to_fp8(Weights& weights);

// Writes `weights` (downloaded) under the Hugging Face names load_weights reads: the same model for
// another implementation (bench/peers' PyTorch one) to load.
void save_weights(const std::string& safetensors_path, const examples::ModelConfig& c, const Weights& weights);

}  // namespace serve
